"""Issue 34, item 2: a lifecycle action is not held by pods that can never finish.

An impaired, unreachable instance's node goes NotReady; the pods Lifeboat evicts from it stay
Terminating (no kubelet confirms their end: the emulator keeps them, as an API server does).
Karpenter's drain stops waiting for a pod a minute after its ``deletionTimestamp``
(kubernetes-sigs/karpenter ``pkg/utils/pod/scheduling.go`` ``IsStuckTerminating``, used by
``IsDrainable``). Lifeboat applies the same rule to the pods it waits for before it answers
an Auto Scaling terminate hook, on a node that is NotReady or impaired (its instance-impaired
taint); on a node whose kubelet answers, it still waits (NTH issue #355).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from kubemu import Emulator, load_cluster_file
from lifeboat.aws.lifecycle import AutoScalingLifecycle
from lifeboat.aws.sweep import Ec2InstanceStatuses, sweep_request
from lifeboat.flow.pipeline import OneCluster, Pipeline
from lifeboat.kube.client import KubeApi, RetryPolicy
from lifeboat.model.ledger import MemoryLedger
from lifeboat.model.report import Report
from lifeboat.model.settings import Settings
from lifeboat.wakeup.codec import MemoryWakeups, encode
from lifeboat_local.directory import directory_from_objects
from tests.integration.aws.test_instance_status import (
    NODE_GROUP_INSTANCE,
    NODE_GROUP_NODE,
    NOW,
    ec2_client,
    instance_status,
    one_set,
    stub_sweep,
)
from tests.integration.flow.test_lifecycle_completion import HOOK
from tests.support.paths import EVENTS

EVICTED = ("coredns-", "metrics-server-")  # the node group node's pods a drain evicts


@dataclass
class Rig:
    emulator: Emulator
    pipeline: Pipeline
    ec2: Stubber
    asg: Stubber
    wakeups: MemoryWakeups
    clock: dict[str, datetime]

    def at(self, moment: datetime) -> None:
        self.clock["now"] = moment
        self.emulator.clock.set(moment, frozen=True)

    def sweep_impaired(self) -> Report:
        since = self.clock["now"] - timedelta(minutes=5)
        status = instance_status(NODE_GROUP_INSTANCE, impaired_since=since, zone="us-east-1a")
        stub_sweep(self.ec2, *one_set([status]))
        request = sweep_request("sweep-1", self.clock["now"].isoformat())
        [result] = self.pipeline.process([json.dumps(request)])
        assert result.error is None, result.error
        [report] = result.reports
        return report

    def hook(self) -> Report:
        event = json.loads((EVENTS / "asg-termination.json").read_text())
        event["time"] = self.clock["now"].isoformat().replace("+00:00", "Z")
        [result] = self.pipeline.process([json.dumps(event)])
        assert result.error is None, result.error
        [report] = result.reports
        return report

    def wake(self) -> Report:
        due = self.wakeups.pop_due(self.clock["now"])
        [result] = self.pipeline.process([encode(w) for w in due])
        [report] = result.reports
        return report

    def terminating(self) -> list[str]:
        return sorted(
            p["metadata"]["name"]
            for p in self.emulator.objects("Pod")
            if p["spec"].get("nodeName") == NODE_GROUP_NODE
            and p["metadata"].get("deletionTimestamp")
        )


def _not_ready(objects: list[dict[str, Any]]) -> None:
    """The impaired instance's kubelet is unreachable: the node controller's Ready Unknown."""
    for obj in objects:
        if obj["kind"] == "Node" and obj["metadata"]["name"] == NODE_GROUP_NODE:
            obj["status"]["conditions"] = [
                {"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown"}
            ]


def _rig(ready: bool) -> Iterator[Rig]:
    objects = copy.deepcopy(load_cluster_file(EVENTS / "cluster.yaml"))
    for obj in objects:  # coredns keeps its 30 s of grace
        if obj["kind"] == "Pod" and obj["metadata"]["name"].startswith("metrics-server-"):
            obj["spec"]["terminationGracePeriodSeconds"] = 75
    if not ready:
        _not_ready(objects)
    autoscaling = boto3.client(
        "autoscaling", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    ec2 = ec2_client()
    clock = {"now": NOW}
    wakeups = MemoryWakeups()
    with Emulator(copy.deepcopy(objects)) as emu, Stubber(autoscaling) as asg, Stubber(ec2) as s:
        emu.clock.set(NOW, frozen=True)
        pipeline = Pipeline(
            clusters=OneCluster(KubeApi(emu.api_client(), RetryPolicy(attempts=2))),
            directory=directory_from_objects(objects),
            settings=Settings(),
            clock=lambda: clock["now"],
            lifecycle=AutoScalingLifecycle(autoscaling),
            wakeups=wakeups,
            ledger=MemoryLedger(),
            statuses=Ec2InstanceStatuses(ec2),
        )
        yield Rig(emu, pipeline, s, asg, wakeups, clock)


@pytest.fixture
def impaired() -> Iterator[Rig]:
    yield from _rig(ready=False)


def test_an_impaired_node_group_nodes_stuck_pods_do_not_hold_the_continue(impaired: Rig) -> None:
    """The sweep finds the instance impaired: taint, cordon, evict; the evicted pods stay
    Terminating (NotReady node). Five minutes later the group's health check terminates the
    instance: its lifecycle action is completed at once, the stuck pods named in the reason
    (before: a heartbeat every 30 s up to the hook's 48 h)."""
    rig = impaired
    first = rig.sweep_impaired()
    assert first.outcome == "acted"
    evicted = [a["pod"] for a in first.actions if a["type"] == "evict"]
    assert sorted(p.split("/")[1].split("-")[0] for p in evicted) == ["coredns", "metrics"]

    rig.at(NOW + timedelta(minutes=5))
    assert len(rig.terminating()) == 2  # no kubelet confirmed them
    rig.asg.add_response(
        "complete_lifecycle_action", {}, {**HOOK, "LifecycleActionResult": "CONTINUE"}
    )
    report = rig.hook()
    assert report.outcome == "acted"
    kinds = [a["type"] for a in report.actions]
    assert kinds[-1] == "complete-lifecycle-action" and "evict" not in kinds
    assert "2 pod(s) stuck terminating" in report.reason
    assert "IsStuckTerminating" in report.reason
    rig.asg.assert_no_pending_responses()
    assert rig.wakeups.next_due() is None


def test_pods_within_a_minute_of_their_deletion_timestamp_are_still_waited_for(
    impaired: Rig,
) -> None:
    """``clk.Since(DeletionTimestamp) > time.Minute``: the hook drains the node itself
    (coredns 30 s of grace, metrics-server 75 s); while a pod is within its grace period or
    the minute after it, heartbeat and no CONTINUE; at exactly a minute past, still waited
    for; the follow-up after the last pod's minute completes the action."""
    rig = impaired
    rig.asg.add_response("record_lifecycle_action_heartbeat", {}, HOOK)
    first = rig.hook()
    assert "complete-lifecycle-action" not in [a["type"] for a in first.actions]
    assert "2 evicted pod(s) still terminating" in first.reason
    for seconds in (30, 60, 90):  # at 90 s coredns is exactly 60 s past: not stuck yet
        rig.at(NOW + timedelta(seconds=seconds))
        rig.asg.add_response("record_lifecycle_action_heartbeat", {}, HOOK)
        report = rig.wake()
        assert "2 evicted pod(s) still terminating" in report.reason, seconds
        assert "stuck" not in report.reason
    rig.at(NOW + timedelta(seconds=120))
    rig.asg.add_response("record_lifecycle_action_heartbeat", {}, HOOK)
    middle = rig.wake()
    assert "1 evicted pod(s) still terminating" in middle.reason
    assert "1 pod(s) stuck terminating" in middle.reason
    rig.asg.assert_no_pending_responses()

    rig.at(NOW + timedelta(seconds=150))  # metrics-server 75 s past its deletionTimestamp
    rig.asg.add_response(
        "complete_lifecycle_action", {}, {**HOOK, "LifecycleActionResult": "CONTINUE"}
    )
    last = rig.wake()
    assert [a["type"] for a in last.actions] == ["complete-lifecycle-action"]
    assert "2 pod(s) stuck terminating" in last.reason
    rig.asg.assert_no_pending_responses()
    assert len(rig.terminating()) == 2  # still there: nobody confirmed them


def test_on_a_node_whose_kubelet_answers_a_pod_held_by_a_finalizer_is_still_waited_for() -> None:
    """Only a node that is NotReady or impaired lets stuck pods go: on a Ready node a pod
    two minutes past its deletionTimestamp (a finalizer holds the object) keeps the
    heartbeat going, as before (NTH issue #355)."""
    for rig in _rig(ready=True):
        for pod in rig.emulator.objects("Pod"):
            if pod["spec"].get("nodeName") == NODE_GROUP_NODE and pod["metadata"][
                "name"
            ].startswith("coredns-"):
                pod["metadata"]["finalizers"] = ["example.com/keep"]
                rig.emulator.put_object(pod)
        rig.asg.add_response("record_lifecycle_action_heartbeat", {}, HOOK)
        rig.hook()
        rig.at(NOW + timedelta(minutes=3))
        rig.asg.add_response("record_lifecycle_action_heartbeat", {}, HOOK)
        later = rig.wake()
        assert "1 evicted pod(s) still terminating" in later.reason
        assert "stuck" not in later.reason
        rig.asg.assert_no_pending_responses()
