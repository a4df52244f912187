"""A throttled EC2 API during a Spot storm (issue 36): DescribeInstances answered
``RequestLimitExceeded`` is retried three times, then for as long as the batch's nearest
deadline allows (``lifeboat.aws.retries``); a lookup that still fails sends
back only the messages that needed it, visible again within seconds
(``sqs:ChangeMessageVisibility``), and never fails the rest of the batch.

Before: the ClientError escaped ``Pipeline.process`` and ``handle_batch``; the invocation
failed, and the whole batch came back after the queue's 380 s visibility timeout, long past
a Spot warning's two minutes.

The EC2 endpoint is ``bench.aws_endpoints.Ec2Endpoint``: a botocore ``before-send`` hook,
so the answers go through botocore's parser and retry handler as EC2's would (503
``RequestLimitExceeded`` is what EC2 sends). botocore sleeps in real time between attempts:
its ``time`` is replaced by the test's ticking clock, so nothing waits.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import botocore.endpoint
import pytest

from bench.aws_endpoints import Ec2Endpoint
from kubemu import Emulator
from lifeboat.aws.retries import ATTEMPTS, client_config, retry_within_deadline
from lifeboat.flow.lookup import (
    INDEX_REFRESH,
    REST_PATIENCE,
    ClaimsWhenThrottled,
    end_on_first_throttle,
    served,
)
from lifeboat.flow.pipeline import OneCluster, Pipeline
from lifeboat.kube import nodes
from lifeboat.kube.client import KubeApi, RetryPolicy
from lifeboat.model.deadline import HANDLING_MARGIN
from lifeboat.model.instances import Ec2InstanceDirectory, InstanceInfo
from lifeboat.model.ledger import MemoryLedger
from lifeboat.model.report import Outcome
from lifeboat.model.settings import Settings
from lifeboat.runtime.handler import handle_batch
from tests.support import kube
from tests.support.events import aws_event, sample, sqs_record
from tests.support.fakes import LambdaContext
from tests.support.present import present

INSTANCE = "i-0a1b2c3d4e5f60001"  # events/spot-interruption.json
NODE = "ip-10-0-1-11.ec2.internal"
CLAIM = "general-7xkqz"
SPOT = sample("spot-interruption")
SPOT_DEADLINE = datetime(2026, 12, 1, 14, 4, tzinfo=UTC)  # its time + 2 minutes
INFO = InstanceInfo(
    INSTANCE, node_name=NODE, nodeclaim=CLAIM, nodepool="general", zone="us-east-1c"
)


@dataclass
class Ticking:
    """Time that only the retries' sleeps move, for botocore, the pipeline and the SQS
    messages' deadlines alike."""

    start: datetime = SPOT_DEADLINE - timedelta(seconds=100)
    now: float = 0.0
    slept: list[float] = field(default_factory=list)

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds

    def utc(self) -> datetime:
        return self.start + timedelta(seconds=self.now)


@dataclass
class Redeliveries:
    """What the handler asked of SQS: (receipt handle, seconds until visible again)."""

    asked: list[tuple[str, int]] = field(default_factory=list)

    def redeliver_in(self, receipt_handle: str, seconds: int) -> bool:
        self.asked.append((receipt_handle, seconds))
        return True


@pytest.fixture
def emu() -> Iterator[Emulator]:
    pool = kube.nodepool(uid="pool-uid", requirements=[], budgets=[{"nodes": "10%"}])
    claim, node = kube.nodeclaim_and_node(
        name=CLAIM, instance_id=INSTANCE, node_name=NODE, nodepool_uid="pool-uid"
    )
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "lifeboat"}}
    with Emulator([namespace, pool, claim, node]) as emulator:
        yield emulator


@pytest.fixture
def ticking(monkeypatch: pytest.MonkeyPatch) -> Ticking:
    clock = Ticking()
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
    }.items():
        monkeypatch.setenv(name, value)
    # botocore's endpoint sleeps between attempts with time.sleep: on the ticking clock here.
    monkeypatch.setattr(botocore.endpoint, "time", clock)
    return clock


def _ec2(endpoint: Ec2Endpoint) -> Any:
    """An EC2 client configured as the Lambda's (lifeboat.runtime.service), on ``endpoint``."""
    client = boto3.Session().client("ec2", region_name="us-east-1", config=client_config())
    return endpoint.attach(retry_within_deadline(client, random.Random(5)))


def _pipeline(emu: Emulator, ticking: Ticking, endpoint: Ec2Endpoint) -> Pipeline:
    kube_api = KubeApi(emu.api_client(), RetryPolicy(), sleep=ticking.sleep, rng=random.Random(7))
    return Pipeline(
        clusters=OneCluster(kube_api),
        directory=Ec2InstanceDirectory(_ec2(endpoint)),
        settings=Settings(),
        clock=ticking.utc,
        ledger=MemoryLedger(),
        monotonic=ticking.monotonic,
    )


def _tainted(emu: Emulator) -> bool:
    node = present(emu.get_object("Node", NODE), "the node")
    return "lifeboat.dev/spot-interruption" in [t["key"] for t in nodes.taints(node)]


def test_a_throttled_lookup_is_retried_past_the_standard_attempts_within_the_deadline(
    emu: Emulator, ticking: Ticking
) -> None:
    """Six refusals in a row, 100 s before the deadline: the 3 tries of any call are used
    up, the deadline's window retries on, and the warning is tainted in this invocation."""
    endpoint = Ec2Endpoint({INSTANCE: INFO}, refuse_next=6)
    pipeline = _pipeline(emu, ticking, endpoint)
    response = handle_batch({"Records": [sqs_record(SPOT)]}, LambdaContext(), pipeline)
    assert response == {"batchItemFailures": []}
    assert endpoint.calls == 7 > ATTEMPTS and endpoint.throttled == 6
    assert _tainted(emu)


def test_without_a_near_deadline_a_throttled_lookup_keeps_the_standard_attempts(
    emu: Emulator, ticking: Ticking
) -> None:
    """A Spot warning whose deadline has passed gains nothing from waiting in-process: three
    tries, then the message fails and comes back after the distant backoff's 10 s."""
    ticking.start = SPOT_DEADLINE + timedelta(seconds=1)
    endpoint = Ec2Endpoint({INSTANCE: INFO}, refuse_next=10**6)
    redelivery = Redeliveries()
    pipeline = _pipeline(emu, ticking, endpoint)
    with pytest.raises(Exception, match="All records failed"):
        handle_batch({"Records": [sqs_record(SPOT)]}, None, pipeline, redelivery=redelivery)
    assert endpoint.calls == ATTEMPTS
    assert [seconds for _handle, seconds in redelivery.asked] == [10]


def test_a_lookup_throttled_past_its_window_fails_only_its_messages_and_they_return_in_seconds(
    emu: Emulator, ticking: Ticking
) -> None:
    """EC2 refuses every DescribeInstances: the Spot warning fails after its window (never
    past the deadline's handling margin), a malformed message of the same batch is still
    rejected with its reason (deleted, not returned with the warning), and the warning is
    made visible again within a second (at once, here: its
    deadline's margin is reached) instead of after the queue's 380 s."""
    ticking.start = SPOT_DEADLINE - timedelta(seconds=12)  # a 7 s window
    endpoint = Ec2Endpoint({INSTANCE: INFO}, refuse_next=10**6)
    redelivery = Redeliveries()
    pipeline = _pipeline(emu, ticking, endpoint)
    batch = {"Records": [sqs_record(SPOT, "m-0"), sqs_record("{not json", "m-1")]}
    response = handle_batch(batch, LambdaContext(), pipeline, redelivery=redelivery)
    assert response == {"batchItemFailures": [{"itemIdentifier": "m-0"}]}
    [(handle, delay)] = redelivery.asked
    assert handle == "handle-m-0-1" and delay <= 1
    assert ticking.now <= 12 - HANDLING_MARGIN.total_seconds()
    assert endpoint.calls > ATTEMPTS
    assert emu.request_log == []  # nothing was done to the cluster without EC2's facts


def test_a_throttled_lookup_no_longer_holds_a_spot_warning_past_its_deadline(
    emu: Emulator, ticking: Ticking
) -> None:
    """The throttling lasts 9 s from 15 s before the deadline: the first delivery fails
    after its window, comes back a second later (its second delivery), EC2 answers again,
    and the node is tainted before the deadline."""
    ticking.start = SPOT_DEADLINE - timedelta(seconds=15)
    endpoint = Ec2Endpoint({INSTANCE: INFO}, refuse_next=10**6)
    redelivery = Redeliveries()
    pipeline = _pipeline(emu, ticking, endpoint)
    with pytest.raises(Exception, match="All records failed"):
        handle_batch(
            {"Records": [sqs_record(SPOT)]}, LambdaContext(), pipeline, redelivery=redelivery
        )
    [(_, delay)] = redelivery.asked
    ticking.sleep(delay)
    ticking.sleep(max(0.0, 9 - ticking.now))
    endpoint.refuse_next = 0  # the account's bucket refilled
    again = {"Records": [sqs_record(SPOT, receive_count=2)]}
    assert handle_batch(again, LambdaContext(), pipeline, redelivery=redelivery) == {
        "batchItemFailures": []
    }
    assert _tainted(emu)
    assert ticking.utc() < SPOT_DEADLINE


# --- In a storm, the NodeClaims answer (lifeboat.flow.lookup) --------------------------------

OTHER = "i-0a1b2c3d4e5f60002"
OTHER_NODE = "ip-10-0-1-12.ec2.internal"
GROUP_INSTANCE = "i-0a1b2c3d4e5f60009"
GROUP_NODE = "ip-10-0-9-9.ec2.internal"


def _storm_pipeline(
    emu: Emulator, ticking: Ticking, endpoint: Ec2Endpoint
) -> tuple[Pipeline, ClaimsWhenThrottled]:
    """The pipeline as lifeboat.runtime.service wires it: EC2, and the cluster's NodeClaims
    while EC2 throttles."""
    kube_api = KubeApi(emu.api_client(), RetryPolicy(), sleep=ticking.sleep, rng=random.Random(7))
    lookup = ClaimsWhenThrottled(
        Ec2InstanceDirectory(end_on_first_throttle(_ec2(endpoint))),
        served(lambda: ("demo",), lambda _name: kube_api),
        clock=ticking.monotonic,
    )
    pipeline = Pipeline(
        clusters=OneCluster(kube_api),
        directory=lookup,
        settings=Settings(clusters=("demo",)),
        clock=ticking.utc,
        ledger=MemoryLedger(),
        monotonic=ticking.monotonic,
    )
    return pipeline, lookup


def _tainted_node(emu: Emulator, name: str) -> bool:
    node = present(emu.get_object("Node", name), name)
    return "lifeboat.dev/spot-interruption" in [t["key"] for t in nodes.taints(node)]


def test_a_throttled_lookup_finds_a_spot_warnings_node_from_its_nodeclaim_at_once(
    emu: Emulator, ticking: Ticking
) -> None:
    """EC2 refuses every DescribeInstances for the whole storm. The first warning's lookup
    ends at EC2's first refusal (not its deadline's window of retries), then the cluster's
    NodeClaims are listed once and name the instance's node (as Karpenter's interruption
    controller finds it, ``InterruptionHandler.handleMessage``): tainted in its first
    delivery, well before the deadline. A later warning of the storm costs no EC2 call and
    no second list.

    Before: the warning waited out its window of retries, failed, and came back within seconds
    to be throttled again."""
    claim, node = kube.nodeclaim_and_node(
        name="general-8abcd",
        uid="claim-2",
        instance_id=OTHER,
        node_name=OTHER_NODE,
        nodepool_uid="pool-uid",
    )
    emu.put_object(claim)
    emu.put_object(node)
    endpoint = Ec2Endpoint({INSTANCE: INFO}, refuse_next=10**6)
    pipeline, lookup = _storm_pipeline(emu, ticking, endpoint)
    response = handle_batch({"Records": [sqs_record(SPOT)]}, LambdaContext(), pipeline)
    assert response == {"batchItemFailures": []}
    assert _tainted_node(emu, NODE)
    assert endpoint.calls == 1 and lookup.lists == 1
    assert ticking.now == 0  # no backoff slept
    assert ticking.utc() < SPOT_DEADLINE - timedelta(seconds=90)

    later = aws_event("spot-interruption", instance=OTHER, event_id="evt-other")
    response = handle_batch({"Records": [sqs_record(later)]}, LambdaContext(), pipeline)
    assert response == {"batchItemFailures": []}
    assert _tainted_node(emu, OTHER_NODE)
    assert endpoint.calls == 1 and lookup.lists == 1


def test_a_node_group_node_in_a_throttled_batch_still_asks_ec2_and_fails_alone(
    emu: Emulator, ticking: Ticking
) -> None:
    """A node-group node has no NodeClaim: only EC2's tags say its cluster, so its warning
    still waits for EC2 (its deadline's window), and fails alone, back within seconds, while
    the Karpenter node's warning of the same batch, answered by its claim, is tainted."""
    emu.put_object(
        kube.node(
            name=GROUP_NODE,
            uid="group-node",
            instance_id=GROUP_INSTANCE,
            nodepool=None,
            nodeclaim=None,
            nodeclaim_uid=None,
        )
    )
    ticking.start = SPOT_DEADLINE - timedelta(seconds=20)
    endpoint = Ec2Endpoint({INSTANCE: INFO}, refuse_next=10**6)
    redelivery = Redeliveries()
    pipeline, lookup = _storm_pipeline(emu, ticking, endpoint)
    group = aws_event("spot-interruption", instance=GROUP_INSTANCE, event_id="evt-group")
    batch = {"Records": [sqs_record(SPOT, "m-0"), sqs_record(group, "m-1")]}
    response = handle_batch(batch, LambdaContext(), pipeline, redelivery=redelivery)
    assert response == {"batchItemFailures": [{"itemIdentifier": "m-1"}]}
    assert _tainted_node(emu, NODE) and not _tainted_node(emu, GROUP_NODE)
    assert [handle for handle, _ in redelivery.asked] == ["handle-m-1-1"]
    assert endpoint.calls > ATTEMPTS  # the node-group instance kept asking EC2
    assert lookup.lists == 1


def test_without_throttling_ec2_answers_and_no_nodeclaim_is_listed(
    emu: Emulator, ticking: Ticking
) -> None:
    """A quiet account: one DescribeInstances per batch, as before; the claims are listed
    only once EC2 throttles (a list of a large cluster's claims costs more than a lookup)."""
    endpoint = Ec2Endpoint({INSTANCE: INFO})
    pipeline, lookup = _storm_pipeline(emu, ticking, endpoint)
    response = handle_batch({"Records": [sqs_record(SPOT)]}, LambdaContext(), pipeline)
    assert response == {"batchItemFailures": []}
    assert endpoint.calls == 1 and lookup.lists == 0
    listed = [entry for entry in emu.request_log if entry[0] == "list"]
    assert not any(resource == "nodeclaims" for _verb, _group, resource, _ns, _name in listed)


# --- A claim's answer whose node is not there (lifeboat.flow.claim_check) ------------------

FORGED = "forged-claim"


def _throttled_once(infos: dict[str, InstanceInfo]) -> Ec2Endpoint:
    """EC2 refuses the batch's first try (the storm starts), then answers."""
    return Ec2Endpoint(infos, refuse_next=1)


def test_a_forged_claim_naming_a_node_group_instance_does_not_swallow_its_warning(
    emu: Emulator, ticking: Ticking
) -> None:
    """Anyone allowed to write NodeClaims can make one whose ``status.providerID`` names a
    node-group instance (no claim of its own) and whose ``status.nodeName`` names no node.
    Karpenter's ``InterruptionHandler.handleMessage`` would act on that claim only (its
    cluster is its own). Here the claim's answer led nowhere (no Node bears the instance's
    providerID), yet the claim stands: EC2 is asked after all, and the real node, found by
    EC2's name for it, is tainted.

    Before: the warning was ignored ("no Kubernetes node for instance ...") and deleted, and
    the node-group node was never tainted."""
    group_node = kube.node(
        name=GROUP_NODE,
        uid="group-node",
        instance_id=GROUP_INSTANCE,
        nodepool=None,
        nodeclaim=None,
        nodeclaim_uid=None,
    )
    emu.put_object(group_node)
    zone = present(nodes.provider_id(group_node), "providerID").split("/")[3]
    emu.put_object(
        kube.nodeclaim(
            name=FORGED, uid="forged", instance_id=GROUP_INSTANCE, node_name="ip-nowhere", zone=zone
        )
    )
    group_info = InstanceInfo(GROUP_INSTANCE, node_name=GROUP_NODE, cluster="demo", zone=zone)
    endpoint = _throttled_once({INSTANCE: INFO, GROUP_INSTANCE: group_info})
    pipeline, lookup = _storm_pipeline(emu, ticking, endpoint)
    group = aws_event("spot-interruption", instance=GROUP_INSTANCE, event_id="evt-group")
    response = handle_batch({"Records": [sqs_record(group)]}, LambdaContext(), pipeline)
    assert response == {"batchItemFailures": []}
    assert lookup.lists == 1  # the forged claim did answer first
    assert _tainted_node(emu, GROUP_NODE)
    assert endpoint.calls == 2  # the throttled first try, then the check


def test_a_claim_karpenter_deleted_with_its_node_is_reported_without_asking_ec2(
    emu: Emulator, ticking: Ticking
) -> None:
    """Karpenter acted first: its interruption controller deleted the NodeClaim
    (``InterruptionHandler.deleteNodeClaim``) and its node is gone after the drain, while the
    list still names them. As Karpenter's ``handleMessage`` does when no claim is found, the
    warning is let go, and the report says why; EC2 (throttled) is not asked again, and the
    message is not failed over and over."""
    endpoint = Ec2Endpoint({INSTANCE: INFO}, refuse_next=10**6)
    pipeline, lookup = _storm_pipeline(emu, ticking, endpoint)
    lookup.describe_batch([INSTANCE], {INSTANCE})  # the storm begins; the claims are listed
    emu.delete_object("Node", NODE)
    emu.delete_object("NodeClaim", CLAIM)
    calls = endpoint.calls
    [result] = pipeline.process([json.dumps(SPOT)])
    assert result.error is None
    [report] = result.reports
    assert report.outcome is Outcome.IGNORED
    assert f"NodeClaim {CLAIM} is gone" in report.reason and "Karpenter" in report.reason
    assert endpoint.calls == calls and lookup.lists == 1


def test_a_claim_being_deleted_whose_node_is_gone_is_karpenters_to_finish(
    emu: Emulator, ticking: Ticking
) -> None:
    """The claim is still there, with its deletionTimestamp (Karpenter's finalizer holds it
    while the instance terminates), and its node is gone: Karpenter's ``deleteNodeClaim``
    does nothing more for such a claim, and neither does Lifeboat (no EC2 call)."""
    endpoint = Ec2Endpoint({INSTANCE: INFO}, refuse_next=10**6)
    pipeline, lookup = _storm_pipeline(emu, ticking, endpoint)
    lookup.describe_batch([INSTANCE], {INSTANCE})
    emu.delete_object("Node", NODE)
    claim = present(emu.get_object("NodeClaim", CLAIM), "the claim")
    claim["metadata"]["deletionTimestamp"] = "2026-12-01T14:02:10Z"
    claim["metadata"]["finalizers"] = ["karpenter.sh/termination"]
    emu.put_object(claim)
    calls = endpoint.calls
    [result] = pipeline.process([json.dumps(SPOT)])
    [report] = result.reports
    assert report.outcome is Outcome.IGNORED
    assert f"NodeClaim {CLAIM} is being deleted" in report.reason
    assert endpoint.calls == calls


def test_a_claims_answer_does_not_wait_out_ec2s_window_for_the_rest_of_its_batch(
    emu: Emulator, ticking: Ticking, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch of a storm mixes a warning the claims answer with one only EC2 can (a
    node-group node; or a node too new for the claims' list). The batch has one lookup, and
    the rest's EC2 retries held the claim's answer back: the Karpenter node was tainted only
    after the whole window of retries (18 s of its 120 s, ``RETRY_PATIENCE``), in every mixed
    batch of the storm. Karpenter's ``InterruptionHandler.handleMessage`` acts on each
    message alone. Now the rest get at most ``REST_PATIENCE`` of retries while answers
    wait; their messages come back within seconds for their own window."""
    emu.put_object(
        kube.node(
            name=GROUP_NODE,
            uid="group-node",
            instance_id=GROUP_INSTANCE,
            nodepool=None,
            nodeclaim=None,
            nodeclaim_uid=None,
        )
    )
    tainted_at: dict[str, float] = {}
    patch = KubeApi.patch_node

    def recorded(self: KubeApi, name: str, operations: list[dict[str, Any]]) -> Any:
        tainted_at.setdefault(name, ticking.now)
        return patch(self, name, operations)

    monkeypatch.setattr(KubeApi, "patch_node", recorded)
    endpoint = Ec2Endpoint({INSTANCE: INFO}, refuse_next=10**6)
    pipeline, _lookup = _storm_pipeline(emu, ticking, endpoint)
    group = aws_event("spot-interruption", instance=GROUP_INSTANCE, event_id="evt-group")
    batch = {"Records": [sqs_record(SPOT, "m-0"), sqs_record(group, "m-1")]}
    response = handle_batch(batch, LambdaContext(), pipeline, redelivery=Redeliveries())
    assert response == {"batchItemFailures": [{"itemIdentifier": "m-1"}]}
    assert _tainted_node(emu, NODE)
    assert tainted_at[NODE] <= REST_PATIENCE.total_seconds() + 1


@dataclass
class TwoClusters:
    """A stack serving two clusters, each its own API (``ClusterClients``)."""

    apis: dict[str, KubeApi]

    def kube(self, cluster: str | None) -> KubeApi:
        return self.apis[cluster or ""]


def test_a_claim_in_one_cluster_never_takes_another_clusters_warning(
    emu: Emulator, ticking: Ticking
) -> None:
    """Karpenter's index is its own cluster's; a stack serving two has two lists. Cluster
    ``blue`` holds a claim naming an instance of cluster ``green`` (a node-group node there:
    green has no claim for it, so nothing conflicts). The claim's answer sends Lifeboat to
    blue, where no node bears the instance; the claim stands, so EC2 is asked, its tags say
    green, and green's node is tainted. No node of blue is changed.

    Before the check (lifeboat.flow.claim_check), the warning was ignored in blue."""
    zone = "us-east-1c"
    emu.put_object(
        kube.nodeclaim(
            name=FORGED, uid="forged", instance_id=GROUP_INSTANCE, node_name="ip-nowhere", zone=zone
        )
    )
    group_node = kube.node(
        name=GROUP_NODE,
        uid="group-node",
        instance_id=GROUP_INSTANCE,
        zone=zone,
        nodepool=None,
        nodeclaim=None,
        nodeclaim_uid=None,
    )
    group_info = InstanceInfo(GROUP_INSTANCE, node_name=GROUP_NODE, cluster="green", zone=zone)
    endpoint = _throttled_once({INSTANCE: INFO, GROUP_INSTANCE: group_info})
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "lifeboat"}}
    with Emulator([namespace, group_node]) as green:
        apis = {
            name: KubeApi(e.api_client(), RetryPolicy(), sleep=ticking.sleep, rng=random.Random(7))
            for name, e in (("blue", emu), ("green", green))
        }
        lookup = ClaimsWhenThrottled(
            Ec2InstanceDirectory(end_on_first_throttle(_ec2(endpoint))),
            served(lambda: ("blue", "green"), lambda name: apis[name]),
            clock=ticking.monotonic,
        )
        pipeline = Pipeline(
            clusters=TwoClusters(apis),
            directory=lookup,
            settings=Settings(clusters=("blue", "green")),
            clock=ticking.utc,
            ledger=MemoryLedger(),
            monotonic=ticking.monotonic,
        )
        group = aws_event("spot-interruption", instance=GROUP_INSTANCE, event_id="evt-group")
        [result] = pipeline.process([json.dumps(group)])
        assert result.error is None
        assert _tainted_node(green, GROUP_NODE)
        # Blue was asked only to patch the claim's node, which does not exist (404).
        assert {e[4] for e in emu.request_log if e[0] == "patch"} == {"ip-nowhere"}
        assert not _tainted_node(emu, NODE)


def test_a_warning_for_a_node_newer_than_the_claims_list_is_retried_until_the_relist(
    emu: Emulator, ticking: Ticking
) -> None:
    """Out of order: a node registered just after the claims were listed, and its Spot
    warning comes at once. Karpenter's informer would know the claim (a watch); the list
    here is refreshed on a miss at most every ``INDEX_REFRESH`` (60 s). EC2 throttles the
    whole time: each delivery waits out its window of EC2 retries, fails alone, and comes
    back within seconds; the first delivery after the refresh finds the claim. Not lost, and
    tainted before the deadline, but late: 63 s after the warning, its 4th delivery (kept: a
    list of a large cluster per miss would cost the API server more than the storm's
    lookups; a NodeClaim cannot be selected by its providerID)."""
    endpoint = Ec2Endpoint({INSTANCE: INFO}, refuse_next=10**6)
    pipeline, lookup = _storm_pipeline(emu, ticking, endpoint)
    ticking.start = SPOT_DEADLINE - timedelta(seconds=119)
    lookup.describe_batch([INSTANCE], {INSTANCE})  # the storm: the claims listed at t=0
    claim, node = kube.nodeclaim_and_node(
        name="general-new", uid="claim-new", instance_id=OTHER, node_name=OTHER_NODE
    )
    emu.put_object(claim)
    emu.put_object(node)
    warning = aws_event("spot-interruption", instance=OTHER, event_id="evt-new", time=ticking.utc())
    redelivery = Redeliveries()
    deliveries = 0
    while not _tainted_node(emu, OTHER_NODE):
        deliveries += 1
        record = sqs_record(warning, receive_count=deliveries)
        try:
            handle_batch({"Records": [record]}, LambdaContext(), pipeline, redelivery=redelivery)
        except Exception:
            [(_, delay)] = redelivery.asked[-1:]
            ticking.sleep(delay)
        assert deliveries < 10
    assert lookup.lists == 2
    assert ticking.now >= INDEX_REFRESH.total_seconds()
    assert ticking.utc() < SPOT_DEADLINE


def test_a_stale_claim_whose_node_name_now_has_another_instance_taints_nothing(
    emu: Emulator, ticking: Ticking
) -> None:
    """The list is a minute old: the claim named ``NODE`` for the warned instance; since, Karpenter
    deleted that claim, and a new instance registered under the same name (names come from
    private IPs). The early taint's patch is guarded by the warned instance's providerID
    (``aws:///<zone>/<id>`` from the claim): the API server refuses it, the node of the other
    instance is left alone, and the report says Karpenter acted first."""
    endpoint = Ec2Endpoint({INSTANCE: INFO}, refuse_next=10**6)
    pipeline, lookup = _storm_pipeline(emu, ticking, endpoint)
    lookup.describe_batch([INSTANCE], {INSTANCE})
    emu.delete_object("NodeClaim", CLAIM)
    emu.delete_object("Node", NODE)
    claim, node = kube.nodeclaim_and_node(
        name="general-reuse", uid="claim-reuse", instance_id=OTHER, node_name=NODE
    )
    emu.put_object(claim)
    emu.put_object(node)
    [result] = pipeline.process([json.dumps(SPOT)])
    [report] = result.reports
    assert report.outcome is Outcome.IGNORED and "Karpenter acted first" in report.reason
    assert not _tainted_node(emu, NODE)
    reused = present(emu.get_object("Node", NODE), "the node")
    assert not reused.get("spec", {}).get("unschedulable")
