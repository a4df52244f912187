"""What one notice costs the API server, counted by the emulator.

A Spot interruption for a Karpenter node must cost a handful of requests and never a list of
the cluster's nodes or pods: at a few thousand nodes, a list per warning is what makes an
interruption handler a hazard during a mass reclaim. The pipeline is built directly (as
``lifeboat replay`` builds it) so that nothing else talks to the emulator.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from kubemu import Emulator, load_cluster_file
from lifeboat.flow.pipeline import OneCluster, Pipeline
from lifeboat.kube.client import KubeApi, RetryPolicy
from lifeboat.model.ledger import MemoryLedger
from lifeboat.model.report import Outcome
from lifeboat.model.settings import Settings
from lifeboat.wakeup.codec import MemoryWakeups
from lifeboat_local.directory import directory_from_objects
from lifeboat_local.replay import RecordedLifecycle
from tests.support.paths import EVENTS

AT = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)
# Issue 13.4: at most 5 including the Event (the floor without it is 4); issue 23.3 adds
# the GET of the node's NodeClaim, whose label (not the Node's) names the pool.
SPOT_BUDGET = 6


@dataclass(frozen=True)
class Seen:
    """One request as the emulator received it, query string included."""

    verb: str
    resource: str
    name: str
    query: dict[str, str]
    namespace: str = ""


@dataclass
class Rig:
    emulator: Emulator
    pipeline: Pipeline
    seen: list[Seen]
    lifecycle: RecordedLifecycle

    def process(self, event_file: str) -> list[Any]:
        body = json.loads((EVENTS / event_file).read_text())
        self.emulator.reset_counts()
        self.seen.clear()
        results = self.pipeline.process([body])
        assert all(r.error is None for r in results), [r.error for r in results]
        return [report for r in results for report in r.reports]


@pytest.fixture
def rig(monkeypatch: pytest.MonkeyPatch) -> Iterator[Rig]:
    objects = load_cluster_file(EVENTS / "cluster.yaml")
    seen: list[Seen] = []
    with Emulator(objects) as emulator:
        # The emulator's request log names verb and resource but not the query string; the
        # selectors are what this test is about, so record them where the request arrives.
        backend = emulator._backend
        handle: Callable[..., Any] = backend.handle

        def recording(
            method: str, path: str, query: dict[str, str], content_type: str, raw: bytes
        ) -> Any:
            logged = len(backend.stats.log)
            response = handle(method, path, query, content_type, raw)
            for verb, _group, resource, namespace, name in backend.stats.log[logged:]:
                seen.append(Seen(verb, resource, name, dict(query), namespace or ""))
            return response

        monkeypatch.setattr(backend, "handle", recording)
        lifecycle = RecordedLifecycle()
        pipeline = Pipeline(
            clusters=OneCluster(
                KubeApi(emulator.api_client(), RetryPolicy(attempts=2, base_delay=0.01))
            ),
            directory=directory_from_objects(objects),
            settings=Settings(),
            clock=lambda: AT,
            # The opt-out verdicts' clock (lifeboat.flow.resolve.OPT_OUT_TTL): still, so a
            # verdict read in one batch is recent in the next, whatever the machine's speed.
            monotonic=lambda: 0.0,
            lifecycle=lifecycle,
            wakeups=MemoryWakeups(),
            ledger=MemoryLedger(),
        )
        yield Rig(emulator, pipeline, seen, lifecycle)


def assert_every_list_is_bounded(seen: list[Seen]) -> None:
    """Nodes and NodeClaims only by a NodePool's label; pods only by their node;
    PodDisruptionBudgets only in one namespace (that of a pod on the node)."""
    for request in seen:
        if request.verb != "list":
            continue
        selector = request.query.get("labelSelector", "")
        if request.resource in ("nodes", "nodeclaims"):
            assert selector.startswith("karpenter.sh/nodepool="), request
        elif request.resource == "pods":
            assert request.query.get("fieldSelector", "").startswith("spec.nodeName="), request
        elif request.resource == "poddisruptionbudgets":
            assert request.namespace, request
        else:
            pytest.fail(f"unexpected list: {request}")


def show(title: str, rig: Rig) -> None:
    by_resource = sorted(rig.emulator.requests_by_resource.items())
    total = sum(rig.emulator.requests.values())
    print(f"\n{title}: {total} requests")
    for (verb, resource), count in by_resource:
        print(f"  {verb:<7} {resource:<16} {count}")


def test_spot_interruption_costs_six_requests_and_no_list(rig: Rig) -> None:
    """The node is tainted and cordoned before it is read (a JSON patch guarded by its
    providerID); the patch's answer is the node, which names its NodeClaim; the claim is
    read for its NodePool (the Node's own label is not trusted)."""
    reports = rig.process("spot-interruption.json")
    show("spot interruption, Karpenter node", rig)

    assert [r.outcome for r in reports] == [Outcome.ACTED]
    assert rig.emulator.requests_by_resource == Counter(
        {
            ("get", "nodepools"): 1,
            ("patch", "nodes"): 1,
            ("get", "nodeclaims"): 1,
            ("create", "nodeclaims"): 1,
            ("delete", "nodeclaims"): 1,
            ("create", "events"): 1,
        }
    )
    assert sum(rig.emulator.requests.values()) <= SPOT_BUDGET
    assert rig.emulator.requests["list"] == 0
    assert [(r.verb, r.resource, r.name) for r in rig.seen] == [
        ("get", "nodepools", "general"),
        ("patch", "nodes", "ip-10-0-1-11.ec2.internal"),
        ("get", "nodeclaims", "general-7xkqz"),
        ("create", "nodeclaims", ""),
        ("delete", "nodeclaims", "general-7xkqz"),
        ("create", "events", ""),
    ]


def test_a_node_that_already_has_taints_costs_one_patch_more(rig: Rig) -> None:
    """The first guarded patch expects no taints; a node with some is appended to instead.
    Its taints are kept (the append applies to the list as stored)."""
    node = rig.emulator.get_object("Node", "ip-10-0-1-11.ec2.internal")
    assert node is not None
    node["spec"]["taints"] = [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]
    rig.emulator.put_object(node)
    [report] = rig.process("spot-interruption.json")
    assert report.outcome is Outcome.ACTED
    assert rig.emulator.requests_by_resource[("patch", "nodes")] == 2
    assert sum(rig.emulator.requests.values()) == SPOT_BUDGET + 1
    after = rig.emulator.get_object("Node", "ip-10-0-1-11.ec2.internal")
    assert after is not None
    assert [t["key"] for t in after["spec"]["taints"]] == [
        "gpu",
        "lifeboat.dev/spot-interruption",
    ]


def test_a_node_whose_name_now_belongs_to_another_instance_is_not_touched(rig: Rig) -> None:
    """EC2's private DNS name is reused by a later instance: the providerID guard refuses
    the patch, and the node is then read, found to be another instance's, and left alone."""
    node = rig.emulator.get_object("Node", "ip-10-0-1-11.ec2.internal")
    assert node is not None
    node["spec"]["providerID"] = "aws:///us-east-1a/i-0fffffffffffffff0"
    rig.emulator.put_object(node)
    [report] = rig.process("spot-interruption.json")
    after = rig.emulator.get_object("Node", "ip-10-0-1-11.ec2.internal")
    assert after is not None and not after["spec"].get("unschedulable")
    assert not after["spec"].get("taints")
    assert report.outcome is Outcome.IGNORED
    assert report.reason == "no Kubernetes node for instance i-0a1b2c3d4e5f60001 in this cluster"


def test_redelivered_spot_interruption_changes_nothing(rig: Rig) -> None:
    """A duplicate is told so by the ledger; its taint, tried before the ledger's record
    (issue 36: the node stops taking pods without waiting on DynamoDB), is refused by the
    API server because the taint is there: the two guarded patches, both answered 422, and
    nothing else (the pool's opt-out verdict, read by the first delivery, is still recent:
    lifeboat.flow.resolve.OptOutVerdicts)."""
    rig.process("spot-interruption.json")
    node = rig.emulator.get_object("Node", "ip-10-0-1-11.ec2.internal")
    again = rig.process("spot-interruption.json")
    assert [r.outcome for r in again] == [Outcome.IGNORED]
    assert dict(rig.emulator.requests_by_resource) == {("patch", "nodes"): 2}
    assert rig.emulator.answers.get("422") == 2
    assert rig.emulator.get_object("Node", "ip-10-0-1-11.ec2.internal") == node


def test_voluntary_notice_lists_only_by_selector(rig: Rig) -> None:
    reports = rig.process("rebalance-recommendation.json")
    show("rebalance recommendation, Karpenter node (deferred by the freeze)", rig)
    assert [r.outcome for r in reports] == [Outcome.DEFERRED]
    lists = [r for r in rig.seen if r.verb == "list"]
    assert {r.resource for r in lists} == {"nodes", "nodeclaims", "pods", "poddisruptionbudgets"}
    assert_every_list_is_bounded(rig.seen)
    # The PDBs of the namespaces of the pods Karpenter's drain would evict (IsEvictable:
    # DaemonSet pods too): kube-system/aws-node-..., shop/checkout-....
    pdb_lists = [r for r in lists if r.resource == "poddisruptionbudgets"]
    assert [r.namespace for r in pdb_lists] == ["kube-system", "shop"]
    pod_lists = [r for r in lists if r.resource == "pods"]
    assert [r.query["fieldSelector"] for r in pod_lists] == [
        "spec.nodeName=ip-10-0-1-12.ec2.internal"
    ]
    node_lists = [r for r in lists if r.resource == "nodes"]
    assert [r.query["labelSelector"] for r in node_lists] == ["karpenter.sh/nodepool=general"]


def test_node_group_drain_lists_only_the_nodes_pods(rig: Rig) -> None:
    reports = rig.process("asg-termination.json")
    show("ASG termination, managed node group node", rig)
    assert [r.outcome for r in reports] == [Outcome.ACTED]
    assert_every_list_is_bounded(rig.seen)
    # The node's pods twice: to evict them, then to see whether the evicted ones are gone
    # (issue 22: CONTINUE only once they have terminated; within their grace they have not).
    assert [r.resource for r in rig.seen if r.verb == "list"] == ["pods", "pods"]
    assert rig.emulator.requests_by_resource[("create", "pods/eviction")] == 2
    assert [call[0] for call in rig.lifecycle.calls] == ["heartbeat"]


def test_redelivery_without_the_ledger_creates_no_second_replacement(rig: Rig) -> None:
    """A retry after a crash, or a delivery to another invocation that has not seen the
    first: the replacement is named after the old claim, so its create is answered 409
    AlreadyExists and taken as done. No list request, no second replacement."""
    [first] = rig.process("spot-interruption.json")
    created = next(a["name"] for a in first.actions if a["type"] == "create-nodeclaim")
    rig.pipeline.ledger = MemoryLedger()  # forget the first delivery

    [again] = rig.process("spot-interruption.json")
    show("spot interruption redelivered after the ledger was lost", rig)
    assert again.outcome is Outcome.ACTED
    assert {"type": "create-nodeclaim", "name": created, "existing": True} in again.actions
    assert rig.emulator.requests_by_resource[("create", "nodeclaims")] == 1  # answered 409
    # Both guarded patches are refused (our taint is there: a duplicate is invalid), then
    # the node is read and found already tainted and cordoned: nothing more to write.
    assert rig.emulator.requests_by_resource[("patch", "nodes")] == 2
    assert rig.emulator.requests_by_resource[("get", "nodes")] == 1
    assert [r for r in rig.seen if r.verb == "list"] == []
    replacements = [
        c
        for c in rig.emulator.objects("NodeClaim")
        if c["metadata"].get("labels", {}).get("lifeboat.dev/replaces") == "general-7xkqz"
    ]
    assert [c["metadata"]["name"] for c in replacements] == [created]
