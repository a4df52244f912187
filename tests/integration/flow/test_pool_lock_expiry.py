"""A NodePool's Lease (``lifeboat.kube.pool_lock``) after its holder crashed: held until
``renewTime + leaseDurationSeconds``, then anyone's (the rule of client-go's
``leaderelection.LeaderElector.tryAcquireOrRenew``: a lease whose renew time plus duration
has passed may be taken). Judged on the injected clock, on the real kubernetes client over
HTTP to the emulator; ``sleep`` moves that clock, so nothing waits in real time.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kubemu import Emulator
from lifeboat.kube.client import KubeApi
from lifeboat.kube.pool_lock import LEASE_SECONDS, LockTimeout, PoolLock
from lifeboat.model.instants import format_micro
from tests.support.clock import InjectedTime
from tests.support.paths import ROOT

NOW = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)
NAMESPACE = "lifeboat"
LEASE = "lifeboat-nodepool-general"


@pytest.fixture
def kube(emulator: Emulator) -> KubeApi:
    emulator.ensure_namespace(NAMESPACE)
    return KubeApi(emulator.api_client())


def crashed_holders_lease(
    emulator: Emulator, renewed: datetime, duration: int = LEASE_SECONDS
) -> None:
    """The Lease as a worker that died inside the section left it: still named its holder."""
    emulator.put_object(
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": LEASE, "namespace": NAMESPACE},
            "spec": {
                "holderIdentity": "lifeboat-crashed-0badc0de",
                "leaseDurationSeconds": duration,
                "acquireTime": format_micro(renewed),
                "renewTime": format_micro(renewed),
            },
        }
    )


def lease_spec(emulator: Emulator) -> dict[str, Any]:
    lease = emulator.get_object("Lease", LEASE, NAMESPACE)
    assert lease is not None
    spec: dict[str, Any] = lease["spec"]
    return spec


def lock(kube: KubeApi, time: InjectedTime, wait_seconds: float) -> PoolLock:
    return PoolLock(
        kube,
        NAMESPACE,
        "lifeboat-next",
        clock=time.clock,
        wait_seconds=wait_seconds,
        sleep=time.sleep,
        rng=random.Random(7),
    )


def test_an_expired_lease_of_a_crashed_holder_is_taken_at_once(
    emulator: Emulator, kube: KubeApi
) -> None:
    crashed_holders_lease(emulator, renewed=NOW - timedelta(seconds=LEASE_SECONDS + 1))
    time = InjectedTime(NOW)

    with lock(kube, time, wait_seconds=20).hold("general"):
        spec = lease_spec(emulator)
        assert spec["holderIdentity"].startswith("lifeboat-next-")
        assert spec["renewTime"] == format_micro(NOW)
    assert time.slept == []
    assert lease_spec(emulator).get("holderIdentity") is None  # released


def test_a_crashed_holders_lease_is_waited_out_and_taken_when_it_expires(
    emulator: Emulator, kube: KubeApi
) -> None:
    expires = NOW + timedelta(seconds=2)
    crashed_holders_lease(emulator, renewed=expires - timedelta(seconds=LEASE_SECONDS))
    time = InjectedTime(NOW)

    with lock(kube, time, wait_seconds=20).hold("general"):
        assert lease_spec(emulator)["holderIdentity"].startswith("lifeboat-next-")
    # Taken on the first try at or after the expiry, not before.
    assert time.now >= expires
    assert time.now - timedelta(seconds=time.slept[-1]) < expires


def test_a_live_holders_lease_is_not_taken_and_the_waiter_gives_up_on_the_clock(
    emulator: Emulator, kube: KubeApi
) -> None:
    crashed_holders_lease(emulator, renewed=NOW)  # renewed just now: 60 s to go
    time = InjectedTime(NOW)

    held = lock(kube, time, wait_seconds=5).hold("general")
    with pytest.raises(LockTimeout, match=f"{NAMESPACE}/{LEASE} stayed held"), held:
        pytest.fail("the lease was taken from a live holder")
    assert time.now >= NOW + timedelta(seconds=5)
    assert lease_spec(emulator)["holderIdentity"] == "lifeboat-crashed-0badc0de"


def test_the_duration_the_holder_wrote_is_the_one_that_counts(
    emulator: Emulator, kube: KubeApi
) -> None:
    """A holder with a shorter lease (another version, another setting) is waited on for its
    own ``leaseDurationSeconds``, not for ours."""
    crashed_holders_lease(emulator, renewed=NOW - timedelta(seconds=16), duration=15)
    time = InjectedTime(NOW)

    with lock(kube, time, wait_seconds=20).hold("general"):
        assert lease_spec(emulator)["holderIdentity"].startswith("lifeboat-next-")
    assert time.slept == []


def test_a_waiter_polls_every_10_to_100_ms_and_takes_a_freed_lease_within_100_ms(
    emulator: Emulator, kube: KubeApi
) -> None:
    """The section a Lease guards is a few requests long, and a Spot warning leaves two
    minutes: a waiter that polled once a second would lose most of one for each holder
    before it. The pauses are jittered (10 to 100 ms) so waiters do not poll in step."""
    expires = NOW + timedelta(seconds=3)
    crashed_holders_lease(emulator, renewed=expires - timedelta(seconds=LEASE_SECONDS))
    time = InjectedTime(NOW)

    with lock(kube, time, wait_seconds=20).hold("general"):
        assert lease_spec(emulator)["holderIdentity"].startswith("lifeboat-next-")
    assert expires <= time.now < expires + timedelta(seconds=0.1)
    assert len(time.slept) >= 30
    assert all(0.01 <= pause <= 0.1 for pause in time.slept)
    assert len(set(time.slept)) > 1  # jittered, not a fixed period


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [("lifeboat-a", "lifeboat-b-0badc0de"), ("lifeboat-b", "lifeboat-a-0badc0de")],
    ids=["theirs-sorts-after", "theirs-sorts-before"],
)
def test_a_live_lease_is_anothers_whichever_way_the_names_sort(
    emulator: Emulator, kube: KubeApi, ours: str, theirs: str
) -> None:
    """``_held_by_other``: a holder identity is compared for equality (ours is unique per
    hold), never for order."""
    crashed_holders_lease(emulator, renewed=NOW)
    lease = emulator.get_object("Lease", LEASE, NAMESPACE)
    assert lease is not None
    lease["spec"]["holderIdentity"] = theirs
    emulator.put_object(lease)
    time = InjectedTime(NOW)
    waiter = PoolLock(kube, NAMESPACE, ours, clock=time.clock, wait_seconds=1, sleep=time.sleep)
    with pytest.raises(LockTimeout), waiter.hold("general"):
        pytest.fail("a live holder's lease was taken")
    assert lease_spec(emulator)["holderIdentity"] == theirs


def test_a_clock_that_stands_still_cannot_keep_a_waiter_past_its_wait(
    emulator: Emulator, kube: KubeApi
) -> None:
    """Replay's ``--at`` freezes the clock: the seconds slept bound the wait as well, so the
    waiter gives up once it has slept ``wait_seconds`` (within one pause of 10-100 ms), no
    sooner and no later."""
    crashed_holders_lease(emulator, renewed=NOW)
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        if sum(slept) > 10:  # fail rather than wait for ever
            raise AssertionError("the waiter kept waiting past its wait")

    waiter = PoolLock(
        kube,
        NAMESPACE,
        "lifeboat-next",
        clock=lambda: NOW,
        wait_seconds=2,
        sleep=sleep,
        rng=random.Random(7),
    )
    with pytest.raises(LockTimeout), waiter.hold("general"):
        pytest.fail("the lease was taken from a live holder")
    assert 2 <= sum(slept) < 2 + 0.1


def test_the_lease_lasts_as_long_as_the_docs_say(emulator: Emulator, kube: KubeApi) -> None:
    """The duration written is ``LEASE_SECONDS``, the value the docs' Limits table shows (read
    from the constant when the docs are built: docsite/examples.py, checked by
    test_docs_examples.py): a crashed holder's lease is free after exactly that long."""
    time = InjectedTime(NOW)
    with lock(kube, time, wait_seconds=1).hold("general"):
        assert lease_spec(emulator)["leaseDurationSeconds"] == LEASE_SECONDS
    limits = (ROOT / "docs/examples/limits.md").read_text()
    assert f"| {LEASE_SECONDS} s | `kube/pool_lock.LEASE_SECONDS` |" in limits


def test_a_slow_api_server_ends_the_wait_on_the_clock_not_after_its_pauses(
    emulator: Emulator, kube: KubeApi
) -> None:
    """Each look at the lease takes seconds (a struggling API server): the waiter gives up
    once ``wait_seconds`` have passed on the clock, after a few looks, not after sleeping
    ``wait_seconds`` in 10-100 ms pauses (a hundred looks, minutes of real time)."""
    crashed_holders_lease(emulator, renewed=NOW)
    readings = iter(NOW + timedelta(seconds=3 * n) for n in range(1_000))
    slept: list[float] = []
    waiter = PoolLock(
        kube,
        NAMESPACE,
        "lifeboat-next",
        clock=lambda: next(readings),
        wait_seconds=5,
        sleep=slept.append,
        rng=random.Random(7),
    )
    with pytest.raises(LockTimeout), waiter.hold("general"):
        pytest.fail("the lease was taken from a live holder")
    assert len(slept) <= 3


def test_a_lease_with_a_holder_but_no_renew_time_is_not_taken(
    emulator: Emulator, kube: KubeApi
) -> None:
    """A holder named without a ``renewTime`` (written by another tool): no expiry can be
    judged from the Lease, so it is treated as held and the waiter gives up (the message is
    retried). client-go's elector dates every lease from its own first observation instead;
    a waiter here lives 20 s, too short to observe a lease's 60 s out."""
    crashed_holders_lease(emulator, renewed=NOW)
    lease = emulator.get_object("Lease", LEASE, NAMESPACE)
    assert lease is not None
    del lease["spec"]["renewTime"]
    emulator.put_object(lease)
    time = InjectedTime(NOW)
    with pytest.raises(LockTimeout), lock(kube, time, wait_seconds=1).hold("general"):
        pytest.fail("a lease with a holder and no renew time was taken")
    assert lease_spec(emulator)["holderIdentity"] == "lifeboat-crashed-0badc0de"


def test_taking_an_expired_lease_rewrites_the_holders_fields_and_counts_a_transition(
    emulator: Emulator, kube: KubeApi
) -> None:
    """The takeover writes holder, duration, acquire and renew times, and counts one more
    change of holder in ``leaseTransitions`` (client-go's ``tryAcquireOrRenew`` adds one
    whenever it takes a lease it did not hold); the rest of the spec is kept."""
    crashed_holders_lease(emulator, renewed=NOW - timedelta(seconds=LEASE_SECONDS + 1))
    lease = emulator.get_object("Lease", LEASE, NAMESPACE)
    assert lease is not None
    lease["spec"]["leaseTransitions"] = 3
    emulator.put_object(lease)
    with lock(kube, InjectedTime(NOW), wait_seconds=1).hold("general"):
        spec = lease_spec(emulator)
        assert spec["holderIdentity"].startswith("lifeboat-next-")
        assert spec["leaseDurationSeconds"] == LEASE_SECONDS
        assert spec["acquireTime"] == spec["renewTime"] == format_micro(NOW)
        assert spec["leaseTransitions"] == 4
