"""``lifeboat.wakeup.codec``: a wake-up travels as a message anyone allowed on the queue
could have written, so what Lifeboat never schedules is refused with the field named, and
what it does schedule comes back exactly as it left."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from lifeboat.events.notice import Kind, MalformedMessage
from lifeboat.wakeup.codec import MARKER, MemoryWakeups, Task, Wakeup, decode, encode, is_wakeup
from tests.support.events import SAMPLE_TIME, notice

DUE = SAMPLE_TIME + timedelta(minutes=5)


def _round_trip(wakeup: Wakeup) -> Wakeup:
    return decode(json.loads(encode(wakeup)))


@pytest.mark.parametrize(
    "wakeup",
    [
        Wakeup(Task.DECIDE, notice(Kind.REBALANCE_RECOMMENDATION), DUE),
        Wakeup(
            Task.FINISH_REPLACEMENT,
            notice(Kind.SPOT_INTERRUPTION),
            DUE,
            replacement="pool-a-replacement",
            old_nodeclaim="pool-a-x1",
            old_nodeclaim_uid="uid-1",
            cluster="prod",
        ),
        Wakeup(
            Task.HAND_OVER,
            notice(Kind.REBALANCE_RECOMMENDATION),
            DUE,
            replacement="pool-a-replacement",
            old_nodeclaim="pool-a-x1",
            old_nodeclaim_uid="uid-1",
            started=SAMPLE_TIME,
            attempt=3,
        ),
        Wakeup(Task.CONTINUE_DRAIN, notice(Kind.SPOT_INTERRUPTION), DUE, attempt=2),
        Wakeup(
            Task.SWEEP_PART,
            notice(Kind.INSTANCE_IMPAIRED, instance=None),
            DUE,
            instances=("i-0123456789abcdef0", "i-0123456789abcdef1"),
        ),
    ],
    ids=lambda w: str(w.task),
)
def test_what_lifeboat_schedules_comes_back_exactly(wakeup: Wakeup) -> None:
    assert _round_trip(wakeup) == wakeup


def test_a_wakeup_is_told_from_an_aws_event_by_its_marker_only() -> None:
    body = json.loads(encode(Wakeup(Task.DECIDE, notice(Kind.REBALANCE_RECOMMENDATION), DUE)))
    assert is_wakeup(body)
    assert not is_wakeup({"detail-type": "EC2 Spot Instance Interruption Warning"})


@pytest.mark.parametrize(
    ("wakeup", "named"),
    [
        # A Spot warning is never deferred: a forged "decide later" would hold its node.
        (Wakeup(Task.DECIDE, notice(Kind.SPOT_INTERRUPTION), DUE), "never deferred"),
        (Wakeup(Task.FINISH_REPLACEMENT, notice(Kind.SPOT_INTERRUPTION), DUE), "old_nodeclaim"),
        (
            Wakeup(Task.HAND_OVER, notice(Kind.SPOT_INTERRUPTION), DUE, replacement="r"),
            "hand-over",
        ),
        (Wakeup(Task.DECIDE, notice(Kind.REBALANCE_RECOMMENDATION, instance=None), DUE), "about"),
        (
            Wakeup(
                Task.DECIDE,
                notice(Kind.REBALANCE_RECOMMENDATION),
                DUE,
                instances=("i-0123456789abcdef0",),
            ),
            "only a remainder",
        ),
        (
            Wakeup(Task.SWEEP_PART, notice(Kind.SPOT_INTERRUPTION, instance=None), DUE),
            "instance-impaired",
        ),
        (
            Wakeup(
                Task.SWEEP_PART,
                notice(Kind.INSTANCE_IMPAIRED, instance=None, deadline=DUE),
                DUE,
                instances=("i-0123456789abcdef0",),
            ),
            "EC2 is asked again",
        ),
        (
            Wakeup(
                Task.SWEEP_PART,
                notice(Kind.INSTANCE_IMPAIRED, instance=None),
                DUE,
                instances=("i-0123456789abcdef0", "i-0123456789abcdef0"),
            ),
            "named twice",
        ),
    ],
)
def test_what_lifeboat_never_schedules_is_refused_with_the_reason(
    wakeup: Wakeup, named: str
) -> None:
    with pytest.raises(MalformedMessage) as refused:
        _round_trip(wakeup)
    assert MARKER in str(refused.value) and named in str(refused.value)


def test_memory_wakeups_come_due_in_order_and_once() -> None:
    wakeups = MemoryWakeups()
    later = Wakeup(Task.DECIDE, notice(Kind.REBALANCE_RECOMMENDATION, event_id="b"), DUE)
    sooner = Wakeup(
        Task.DECIDE, notice(Kind.REBALANCE_RECOMMENDATION, event_id="a"), DUE - timedelta(1)
    )
    wakeups.schedule(later)
    wakeups.schedule(sooner)
    wakeups.schedule(sooner)  # scheduled twice: one wake-up (its key)
    assert wakeups.next_due() == sooner.due
    assert wakeups.pop_due(DUE - timedelta(hours=1)) == [sooner]
    assert wakeups.pop_due(DUE) == [later]
    assert wakeups.pop_due(DUE) == [] and wakeups.next_due() is None
