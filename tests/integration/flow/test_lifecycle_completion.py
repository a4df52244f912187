"""Issue 22, item 6: an Auto Scaling lifecycle action is completed once the drained pods are
gone, never while they still run their grace period (aws/aws-node-termination-handler issue
#355: the instance went before its pods had finished).

Kubernetes' graceful deletion (``pkg/registry/core/pod/strategy.go`` ``CheckGracefulDelete``):
an evicted pod stays Terminating, its ``deletionTimestamp`` set, until its containers have
stopped (``terminationGracePeriodSeconds``, 30 s by default); the emulator keeps it as long.
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from kubemu import Emulator, load_cluster_file
from lifeboat.aws.lifecycle import AutoScalingLifecycle
from lifeboat.events import parse_message
from lifeboat.events.asg_lifecycle import GLOBAL_TIMEOUT, lifecycle_expired
from lifeboat.events.notice import Kind
from lifeboat.flow.pipeline import OneCluster, Pipeline
from lifeboat.kube.client import KubeApi, RetryPolicy
from lifeboat.model.ledger import MemoryLedger
from lifeboat.model.settings import Settings
from lifeboat.wakeup.codec import MemoryWakeups, encode
from lifeboat_local.directory import directory_from_objects
from tests.support.paths import EVENTS

NOW = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)
HOOK = {
    "LifecycleHookName": "lifeboat-drain",
    "AutoScalingGroupName": "eks-system-20260101-1a2b3c4d",
    "LifecycleActionToken": "5b8e2f4a-9c1d-4e7b-8a3f-6d0c2e9b1a75",
    "InstanceId": "i-0a1b2c3d4e5f60006",
}
NODE = "ip-10-0-3-16.ec2.internal"


def _pipeline(
    emu: Emulator,
    objects: list[dict[str, Any]],
    clock: dict[str, datetime],
    autoscaling: Any,
    wakeups: MemoryWakeups,
) -> Pipeline:
    return Pipeline(
        clusters=OneCluster(KubeApi(emu.api_client(), RetryPolicy(attempts=2))),
        directory=directory_from_objects(objects),
        settings=Settings(),
        clock=lambda: clock["now"],
        lifecycle=AutoScalingLifecycle(autoscaling),
        wakeups=wakeups,
        ledger=MemoryLedger(),
    )


def test_continue_only_once_the_evicted_pods_have_terminated() -> None:
    """The first step evicts coredns and metrics-server (30 s grace each): no CONTINUE, a
    heartbeat instead, and a ``continue-drain`` 30 s later; at that look the pods are gone
    (the grace ended with it), and only then is the action completed."""
    objects = load_cluster_file(EVENTS / "cluster.yaml")
    for obj in objects:  # a longer grace on one pod: the first follow-up still finds it
        if obj["kind"] == "Pod" and obj["metadata"]["name"].startswith("metrics-server-"):
            obj["spec"]["terminationGracePeriodSeconds"] = 45
    autoscaling = boto3.client(
        "autoscaling", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    clock = {"now": NOW}
    wakeups = MemoryWakeups()
    with Emulator(copy.deepcopy(objects)) as emu, Stubber(autoscaling) as asg:
        emu.clock.set(NOW, frozen=True)
        pipeline = _pipeline(emu, objects, clock, autoscaling, wakeups)
        asg.add_response("record_lifecycle_action_heartbeat", {}, HOOK)
        event = json.loads((EVENTS / "asg-termination.json").read_text())
        [first] = pipeline.process([json.dumps(event)])[0].reports
        assert [a["type"] for a in first.actions].count("evict") == 2
        assert "complete-lifecycle-action" not in [a["type"] for a in first.actions]
        assert "2 evicted pod(s) still terminating" in first.reason
        asg.assert_no_pending_responses()

        # 30 s later coredns has gone, metrics-server (45 s) has not: still no CONTINUE.
        asg.add_response("record_lifecycle_action_heartbeat", {}, HOOK)
        clock["now"] = NOW + timedelta(seconds=30)
        emu.clock.set(clock["now"], frozen=True)
        due = wakeups.pop_due(clock["now"])
        assert [w.task for w in due] == ["continue-drain"]
        [second] = pipeline.process([encode(w) for w in due])[0].reports
        assert list(second.actions) == []
        assert "1 evicted pod(s) still terminating" in second.reason
        asg.assert_no_pending_responses()

        asg.add_response(
            "complete_lifecycle_action", {}, {**HOOK, "LifecycleActionResult": "CONTINUE"}
        )
        clock["now"] = NOW + timedelta(seconds=60)
        emu.clock.set(clock["now"], frozen=True)
        due = wakeups.pop_due(clock["now"])
        [third] = pipeline.process([encode(w) for w in due])[0].reports
        assert [a["type"] for a in third.actions] == ["complete-lifecycle-action"]
        asg.assert_no_pending_responses()
        left = [p for p in emu.objects("Pod") if p["spec"].get("nodeName") == NODE]
        assert [p["metadata"]["name"] for p in left] == ["aws-node-m2v8t"]  # DaemonSet stays
        assert wakeups.next_due() is None


class NodeDeletedUnderThePatch(KubeApi):
    """The node is deleted just before the ``nth`` node patch (its instance went first):
    that patch is answered 404, what act reads as the node gone."""

    def __init__(self, emu: Emulator, nth: int, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._emu = emu
        self._left = nth
        self.deleted = False

    def patch_node(self, name: str, operations: list[dict[str, Any]]) -> dict[str, Any]:
        self._left -= 1
        if self._left == 0:
            self.deleted = self._emu.delete_object("Node", name)
        return super().patch_node(name, operations)


@pytest.mark.parametrize("nth", [1, 3], ids=["under-the-taint-at-once", "under-acts-taint"])
def test_a_node_deleted_under_a_taint_still_gets_its_lifecycle_action_completed(nth: int) -> None:
    """act.Actor.carry_out: once the node is gone nothing is left to taint, drain or delete,
    but the Auto Scaling group still waits for the answer only Lifeboat gives: CONTINUE at
    once, and no eviction sent for pods of a node that no longer exists. The node goes
    under the pipeline's taint at once (the first node patch) or under act's own taint and
    cordon (the third: the taint at once sends two variants)."""
    objects = load_cluster_file(EVENTS / "cluster.yaml")
    autoscaling = boto3.client(
        "autoscaling", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    with Emulator(copy.deepcopy(objects)) as emu, Stubber(autoscaling) as asg:
        emu.clock.set(NOW, frozen=True)
        kube = NodeDeletedUnderThePatch(emu, nth, emu.api_client(), RetryPolicy(attempts=2))
        pipeline = Pipeline(
            clusters=OneCluster(kube),
            directory=directory_from_objects(objects),
            settings=Settings(),
            clock=lambda: NOW,
            lifecycle=AutoScalingLifecycle(autoscaling),
            wakeups=MemoryWakeups(),
            ledger=MemoryLedger(),
        )
        asg.add_response(
            "complete_lifecycle_action", {}, {**HOOK, "LifecycleActionResult": "CONTINUE"}
        )
        event = json.loads((EVENTS / "asg-termination.json").read_text())
        [report] = pipeline.process([json.dumps(event)])[0].reports
        assert kube.deleted, "the node was never deleted under a patch"
        # Act's own taint, when the node went under it, is reported as not done.
        taints = [a for a in report.actions if a["type"] == "taint"]
        if nth == 3:
            assert [a.get("error") for a in taints] == [f"node {NODE} is gone"]
        types = [a["type"] for a in report.actions if a["type"] != "taint"]
        assert types == ["complete-lifecycle-action"]
        asg.assert_no_pending_responses()
        assert not [e for e in emu.request_log if "eviction" in e[2]]


def test_waiting_is_bounded_by_the_hooks_global_timeout() -> None:
    """Auto Scaling goes on after ``min(100 x HeartbeatTimeout, 48 h)`` whatever happens:
    past it, nothing more is waited for."""
    [notice] = parse_message(
        (EVENTS / "raw" / "asg-lifecycle-hook.json").read_text(), received_at=NOW
    )
    assert notice.lifecycle is not None
    assert not lifecycle_expired(notice, notice.event_time + GLOBAL_TIMEOUT - timedelta(seconds=1))
    assert lifecycle_expired(notice, notice.event_time + GLOBAL_TIMEOUT)


def test_a_hook_message_with_an_event_key_is_still_a_lifecycle_action() -> None:
    """A message carrying ``LifecycleTransition`` is a lifecycle action even with an
    ``Event`` key beside it: read as a notification it would never be answered, and the
    instance would wait for the hook's timeout."""
    message: dict[str, Any] = json.loads((EVENTS / "raw" / "asg-lifecycle-hook.json").read_text())
    message["Event"] = "autoscaling:EC2_INSTANCE_TERMINATING"
    [notice] = parse_message(json.dumps(message), received_at=NOW)
    assert notice.kind is Kind.ASG_TERMINATION
    assert notice.lifecycle is not None
    assert notice.lifecycle.action_token == HOOK["LifecycleActionToken"]
    assert notice.ignore_reason is None


# -- launch hooks: completed once the new instance's node is Ready (off by default) ---------

LAUNCHED_NODE = "ip-10-0-3-16.ec2.internal"  # the sample's node group node, i-...06


def _launch_message() -> str:
    message: dict[str, Any] = json.loads((EVENTS / "raw" / "asg-lifecycle-hook.json").read_text())
    message["LifecycleTransition"] = "autoscaling:EC2_INSTANCE_LAUNCHING"
    return json.dumps(message)


def _not_yet_registered(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        o
        for o in objects
        if not (o["kind"] == "Node" and o["metadata"]["name"] == LAUNCHED_NODE)
        and not (o["kind"] == "Pod" and o["spec"].get("nodeName") == LAUNCHED_NODE)
    ]


def test_a_launch_hook_is_completed_once_the_node_is_ready() -> None:
    """The Node Termination Handler's launch-hook completion (its ASG launch lifecycle
    handling CONTINUEs a launch action once the instance's node is Ready in the cluster):
    the node has not registered, then it is there but not Ready, then Ready: only then is
    the action completed; nothing is done to the node."""
    objects = load_cluster_file(EVENTS / "cluster.yaml")
    node = next(
        o for o in objects if o["kind"] == "Node" and o["metadata"]["name"] == LAUNCHED_NODE
    )
    autoscaling = boto3.client(
        "autoscaling", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    clock = {"now": NOW}
    wakeups = MemoryWakeups()
    with Emulator(_not_yet_registered(objects)) as emu, Stubber(autoscaling) as asg:
        pipeline = Pipeline(
            clusters=OneCluster(KubeApi(emu.api_client(), RetryPolicy(attempts=2))),
            directory=directory_from_objects(objects),
            settings=Settings(complete_launch_hooks=True),
            clock=lambda: clock["now"],
            lifecycle=AutoScalingLifecycle(autoscaling),
            wakeups=wakeups,
            ledger=MemoryLedger(),
        )
        [first] = pipeline.process([_launch_message()])[0].reports
        assert first.kind == "asg-launch"
        assert first.outcome.value == "deferred"
        assert "no node has registered for instance i-0a1b2c3d4e5f60006 yet" in first.reason

        registering = copy.deepcopy(node)
        registering["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
        emu.put_object(registering)
        clock["now"] = NOW + timedelta(seconds=30)
        [second] = pipeline.process([encode(w) for w in wakeups.pop_due(clock["now"])])[0].reports
        assert second.outcome.value == "deferred"
        assert f"node {LAUNCHED_NODE} is not Ready yet" in second.reason

        emu.put_object(copy.deepcopy(node))  # Ready
        asg.add_response(
            "complete_lifecycle_action", {}, {**HOOK, "LifecycleActionResult": "CONTINUE"}
        )
        clock["now"] = NOW + timedelta(seconds=60)
        [third] = pipeline.process([encode(w) for w in wakeups.pop_due(clock["now"])])[0].reports
        assert third.outcome.value == "acted"
        assert list(third.actions) == [{"type": "complete-lifecycle-action", "result": "CONTINUE"}]
        asg.assert_no_pending_responses()
        after = emu.get_object("Node", LAUNCHED_NODE)
        assert after is not None and not after["spec"].get("unschedulable")
        assert after["spec"].get("taints") == node["spec"].get("taints")  # untouched
        assert wakeups.next_due() is None


def test_launch_hooks_are_left_alone_by_default() -> None:
    """Off by default: a launch action Lifeboat was not asked to complete is not its own
    (another tool, or the group's own timeout, answers it)."""
    objects = load_cluster_file(EVENTS / "cluster.yaml")
    autoscaling = boto3.client(
        "autoscaling", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    with Emulator(copy.deepcopy(objects)) as emu, Stubber(autoscaling) as asg:
        pipeline = _pipeline(emu, objects, {"now": NOW}, autoscaling, MemoryWakeups())
        [report] = pipeline.process([_launch_message()])[0].reports
        assert report.outcome.value == "ignored"
        assert "completing launch lifecycle actions is off" in report.reason
        assert list(report.actions) == []
        asg.assert_no_pending_responses()  # no call at all
