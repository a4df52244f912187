"""lifeboat.flow.lookup and lifeboat.kube.claim_index: a batch's instances found from the
cluster's NodeClaims while EC2 throttles, as Karpenter's interruption controller finds them
(aws/karpenter-provider-aws ``InterruptionHandler.handleMessage``: NodeClaims by the instance
id of ``status.providerID``), and from EC2 for everything a claim cannot answer."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from lifeboat.flow.lookup import (
    INDEX_REFRESH,
    MAX_CLUSTERS_LISTED,
    STORM_HOLD,
    ClaimsWhenThrottled,
    LookupIncomplete,
    answerable,
    found_before,
    served,
)
from lifeboat.model.instances import InstanceInfo
from lifeboat.model.notice import Kind
from tests.support import kube
from tests.support.events import notice

SPOT = "i-0000000000000000a"
GROUP = "i-0000000000000000b"


class Throttled(Exception):
    """What botocore raises for EC2's RequestLimitExceeded (a ClientError's ``response``)."""

    response = {"Error": {"Code": "RequestLimitExceeded", "Message": "Request limit exceeded."}}


@dataclass
class Ec2:
    """EC2's DescribeInstances: refuses while ``throttled``, else answers from ``infos``."""

    infos: dict[str, InstanceInfo] = field(default_factory=dict)
    throttled: bool = True
    fails: Exception | None = None
    asked: list[list[str]] = field(default_factory=list)

    def describe(self, instance_ids: Sequence[str]) -> dict[str, InstanceInfo]:
        self.asked.append(list(instance_ids))
        if self.fails is not None:
            raise self.fails
        if self.throttled:
            raise Throttled()
        return {i: self.infos[i] for i in instance_ids if i in self.infos}


@dataclass
class Claims:
    """A cluster's API as the lookup uses it: every NodeClaim, page by page."""

    claims: list[dict[str, Any]]
    lists: int = 0

    def list_all(self, path: str) -> list[dict[str, Any]]:
        return list(self.each(path))

    def each(self, path: str) -> Iterator[dict[str, Any]]:
        assert path == "/apis/karpenter.sh/v1/nodeclaims"
        self.lists += 1
        yield from self.claims


@dataclass
class Clock:
    now: float = 0.0

    def __call__(self) -> float:
        return self.now


def _claim(name: str, instance: str, node: str, **changes: Any) -> dict[str, Any]:
    return kube.nodeclaim(name=name, instance_id=instance, node_name=node, **changes)


def _lookup(ec2: Ec2, api: Claims, clock: Clock) -> ClaimsWhenThrottled:
    return ClaimsWhenThrottled(ec2, lambda: [("demo", api)], clock=clock)  # type: ignore[list-item]


def test_only_two_minute_warnings_are_answered_from_claims() -> None:
    """An instance also named by a state change (stale if the instance runs again: EC2's
    state) or a lifecycle hook (its group: EC2's tags) is EC2's to answer."""
    spot = notice(Kind.SPOT_INTERRUPTION, instance=SPOT)
    state = notice(Kind.STATE_CHANGE, instance=GROUP)
    also_spot = notice(Kind.SPOT_INTERRUPTION, instance=GROUP)
    reservation = notice(Kind.CAPACITY_RESERVATION_INTERRUPTION, instance="i-c")
    assert answerable([spot, state, also_spot, reservation]) == {SPOT, "i-c"}


def test_quiet_ec2_is_asked_and_no_claim_is_listed() -> None:
    ec2 = Ec2({SPOT: InstanceInfo(SPOT)}, throttled=False)
    api = Claims([_claim("a", SPOT, "node-a")])
    assert _lookup(ec2, api, Clock()).describe_batch([SPOT], {SPOT}) == {SPOT: InstanceInfo(SPOT)}
    assert api.lists == 0


def test_a_failure_other_than_throttling_is_raised_as_before() -> None:
    ec2 = Ec2(fails=ConnectionError("no route"))
    api = Claims([_claim("a", SPOT, "node-a")])
    with pytest.raises(ConnectionError):
        _lookup(ec2, api, Clock()).describe_batch([SPOT], {SPOT})
    assert api.lists == 0


def test_a_transient_failure_of_the_first_try_is_retried_in_the_deadlines_window() -> None:
    """The first try has no window (a throttled EC2 has an alternative); a 5xx or a timeout
    is no storm: EC2 is asked again, within the window the caller opened, as before."""

    class Once(Ec2):
        def describe(self, instance_ids: Sequence[str]) -> dict[str, InstanceInfo]:
            self.fails = ConnectionError("read timeout") if not self.asked else None
            return super().describe(instance_ids)

    ec2 = Once({SPOT: InstanceInfo(SPOT)}, throttled=False)
    api = Claims([_claim("a", SPOT, "node-a")])
    assert _lookup(ec2, api, Clock()).describe_batch([SPOT], {SPOT}) == {SPOT: InstanceInfo(SPOT)}
    assert len(ec2.asked) == 2 and api.lists == 0


def test_in_a_storm_the_claims_answer_and_ec2_is_asked_only_for_the_rest() -> None:
    ec2 = Ec2()
    api = Claims([_claim("a", SPOT, "node-a")])
    clock = Clock()
    lookup = _lookup(ec2, api, clock)
    with pytest.raises(LookupIncomplete) as raised:
        lookup.describe_batch([SPOT, GROUP], {SPOT})
    assert set(found_before(raised.value)) == {SPOT}
    assert ec2.asked == [[SPOT, GROUP], [GROUP]]
    clock.now += 1
    assert set(lookup.describe_batch([SPOT], {SPOT})) == {SPOT}
    assert len(ec2.asked) == 2 and api.lists == 1  # no EC2 call, no second list


def test_a_claim_too_new_for_the_list_is_listed_again_at_most_once_a_refresh() -> None:
    ec2 = Ec2()
    api = Claims([_claim("a", SPOT, "node-a")])
    clock = Clock()
    lookup = _lookup(ec2, api, clock)
    lookup.describe_batch([SPOT], {SPOT})
    api.claims.append(_claim("b", GROUP, "node-b"))
    with pytest.raises(Throttled):  # not listed yet: EC2 is asked, and throttles
        lookup.describe_batch([GROUP], {GROUP})
    clock.now += INDEX_REFRESH.total_seconds()
    assert set(lookup.describe_batch([GROUP], {GROUP})) == {GROUP}
    assert api.lists == 2


def test_the_storm_ends_after_its_hold_and_ec2_is_asked_first_again() -> None:
    ec2 = Ec2({SPOT: InstanceInfo(SPOT, node_name="from-ec2")})
    api = Claims([_claim("a", SPOT, "node-a")])
    clock = Clock()
    lookup = _lookup(ec2, api, clock)
    assert lookup.describe_batch([SPOT], {SPOT})[SPOT].node_name == "node-a"
    clock.now += STORM_HOLD.total_seconds()
    ec2.throttled = False
    assert lookup.describe_batch([SPOT], {SPOT})[SPOT].node_name == "from-ec2"


def test_a_cluster_whose_claims_cannot_be_listed_leaves_its_instances_to_ec2() -> None:
    class Broken(Claims):
        def list_all(self, path: str) -> list[dict[str, Any]]:
            raise ConnectionError("API server unreachable")

    lookup = _lookup(Ec2(), Broken([]), Clock())
    with pytest.raises(Throttled):
        lookup.describe_batch([SPOT], {SPOT})


def test_clusters_that_cannot_be_told_leave_the_lookup_to_ec2() -> None:
    """Discovery failing (ListClusters refused) is no reason to fail the batch's lookup."""

    def no_clusters() -> list[tuple[str, Any]]:
        raise ConnectionError("eks:ListClusters refused")

    lookup = ClaimsWhenThrottled(Ec2(), no_clusters, clock=Clock())
    with pytest.raises(Throttled):
        lookup.describe_batch([SPOT], {SPOT})
    assert lookup.lists == 1


def test_a_stack_serving_many_clusters_lists_none_of_their_claims() -> None:
    """An organisation's hundreds of clusters would be listed for one warning: EC2 answers
    alone there, and no cluster's client is made for the claims."""
    made: list[str] = []

    def kube_of(name: str) -> Any:
        made.append(name)
        return Claims([])

    names = [f"c{n}" for n in range(MAX_CLUSTERS_LISTED + 1)]
    assert served(lambda: names, kube_of)() == []
    assert made == []
    assert len(list(served(lambda: names[:MAX_CLUSTERS_LISTED], kube_of)())) == MAX_CLUSTERS_LISTED


@dataclass
class HugeCluster(Claims):
    """``count`` NodeClaims as a list's pages bring them: each a fresh object (as parsed
    from its page), none kept by the API; ``fail_after``: the list fails there (a page's
    GET refused, its continue token expired: 410)."""

    count: int = 10_000
    fail_after: int | None = None

    def each(self, path: str) -> Iterator[dict[str, Any]]:
        self.lists += 1
        template = json.dumps(_claim("c-N", "i-IIIIIIIIIIIIIIIII", "ip-N"))
        for i in range(self.count):
            if i == self.fail_after:
                raise RuntimeError("410 Expired: the continue token is too old")
            text = template.replace("IIIIIIIIIIIIIIIII", f"{i:017x}").replace("-N", f"-{i}")
            yield json.loads(text)


def test_a_10000_claim_cluster_is_indexed_a_page_at_a_time() -> None:
    """A 10,000-node cluster's claims (about 2 KB of JSON each, more with managedFields)
    took about 100 MB of the function's 512 when listed whole before being indexed
    (``KubeApi.list_all``); read as they come (``KubeApi.each``), the index is all that stays
    (about 7 MB: what Karpenter's own informer index keeps is the whole claim)."""
    ec2 = Ec2()
    api = HugeCluster([])
    lookup = _lookup(ec2, api, Clock())
    tracemalloc.start()
    try:
        found = lookup.describe_batch(["i-00000000000000001"], {"i-00000000000000001"})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert found["i-00000000000000001"].node_name == "ip-1"
    assert peak < 30 * 2**20


def test_a_list_failing_midway_answers_nothing_of_its_cluster() -> None:
    """A list that fails after its first pages (a GET refused, an expired continue token:
    410) answers nothing of its cluster: the claims it did read cannot be checked against
    another cluster's (two clusters naming one instance answer nothing), so EC2 decides."""
    ec2 = Ec2()
    api = HugeCluster([], count=1_000, fail_after=600)
    lookup = _lookup(ec2, api, Clock())
    with pytest.raises(Throttled):
        lookup.describe_batch(["i-00000000000000001"], {"i-00000000000000001"})
    assert api.lists == 1


def test_an_instance_claimed_in_two_served_clusters_is_left_to_ec2() -> None:
    """Karpenter's index is its one cluster's; two served clusters whose claims name one
    instance (a copied or forged claim) answer nothing for it: EC2's tags say the cluster."""
    ec2 = Ec2()
    blue = Claims([_claim("a", SPOT, "node-a"), _claim("g", GROUP, "node-g")])
    green = Claims([_claim("b", SPOT, "node-b")])
    clusters = lambda: [("blue", blue), ("green", green)]  # noqa: E731
    lookup = ClaimsWhenThrottled(ec2, clusters, clock=Clock())  # type: ignore[arg-type]
    with pytest.raises(LookupIncomplete) as failed:
        lookup.describe_batch([SPOT, GROUP], {SPOT, GROUP})
    assert set(found_before(failed.value)) == {GROUP}
    assert found_before(failed.value)[GROUP].cluster == "blue"
