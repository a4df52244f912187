"""What anyone in the account can write is checked before it is obeyed (issue 10, items 2
to 4): a wake-up body (anyone who may send to the queue can write one) is validated as
strictly as an event, one bad message never fails another, a wake-up acts only on objects
that still match it, and an EC2 tag never chooses which NodeClaim is deleted.

Through ``handle_batch`` (what the Lambda runs), the official client over HTTP and the
emulator loaded with the sample cluster.
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kubemu import Emulator, load_cluster_file
from lifeboat.events import parse_message
from lifeboat.flow.pipeline import OneCluster, Pipeline
from lifeboat.kube.client import KubeApi, RetryPolicy
from lifeboat.model.instances import InstanceInfo, StaticInstanceDirectory
from lifeboat.model.ledger import MemoryLedger
from lifeboat.model.settings import Settings
from lifeboat.runtime.handler import handle_batch
from lifeboat.wakeup.codec import MemoryWakeups, Task, Wakeup, encode
from lifeboat_local.directory import directory_from_objects

ROOT = Path(__file__).resolve().parents[3]
EVENTS = ROOT / "events"
OBJECTS = load_cluster_file(EVENTS / "cluster.yaml")
NOW = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)
SPOT = (EVENTS / "spot-interruption.json").read_text()
REBALANCE = (EVENTS / "rebalance-recommendation.json").read_text()


def batch(*bodies: str) -> dict[str, Any]:
    return {
        "Records": [
            {"messageId": f"m-{i}", "receiptHandle": f"r-{i}", "body": body, "attributes": {}}
            for i, body in enumerate(bodies)
        ]
    }


def pipeline(emu: Emulator, settings: Settings | None = None) -> Pipeline:
    return Pipeline(
        clusters=OneCluster(KubeApi(emu.api_client(), RetryPolicy(attempts=2, base_delay=0.01))),
        directory=directory_from_objects(OBJECTS),
        settings=settings or Settings(),
        clock=lambda: NOW,
        wakeups=MemoryWakeups(),
        ledger=MemoryLedger(),
        workers=10,
    )


def deferred_rebalance() -> dict[str, Any]:
    [notice] = parse_message(REBALANCE, received_at=NOW)
    body: dict[str, Any] = json.loads(encode(Wakeup(Task.DECIDE, notice, NOW)))
    return body


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda w: w["notice"].update(instance_id=12345), "notice.instance_id"),
        (lambda w: w["notice"].update(instance_id=["a"]), "notice.instance_id"),
        (lambda w: w.update(attempt=float("inf")), "attempt"),
        (lambda w: w.update(attempt=1e400), "attempt"),
        (lambda w: w.update(task="explode"), "task"),
        (lambda w: w["notice"].update(kind="spot-interruption"), "task decide"),
        (lambda w: w.update(due="yesterday"), "due"),
        (lambda w: w["notice"].update(event_time="9999-12-31T23:59:59Z"), "notice.event_time"),
    ],
)
def test_a_malformed_wakeup_is_rejected_and_its_batch_mates_are_handled(
    edit: Any, field: str
) -> None:
    wakeup = deferred_rebalance()
    edit(wakeup)
    with Emulator(copy.deepcopy(OBJECTS)) as emu:
        lifeboat = pipeline(emu)
        results = lifeboat.process([json.dumps(wakeup), SPOT])
        [bad], [spot] = results[0].reports, results[1].reports
        assert bad.outcome == "rejected"
        assert bad.reason.startswith(f"lifeboat-wakeup.{field}") or field in bad.reason
        assert spot.outcome == "acted"
        response = handle_batch(batch(json.dumps(wakeup), SPOT), None, pipeline(emu))
        assert response["batchItemFailures"] == []


def test_a_body_that_breaks_parsing_unexpectedly_fails_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A bug in a parser (not bad input) fails only its own message."""
    import lifeboat.flow.pipeline as module

    real = parse_message  # the function pipeline imported, which this test replaces there

    def broken(message: Any, **kwargs: Any) -> Any:
        if message.get("detail-type") == "EC2 Instance Rebalance Recommendation":
            raise RuntimeError("a bug")
        return real(message, **kwargs)

    monkeypatch.setattr(module, "parse_message", broken)
    with Emulator(copy.deepcopy(OBJECTS)) as emu:
        response = handle_batch(batch(REBALANCE, SPOT), None, pipeline(emu))
        assert response["batchItemFailures"] == [{"itemIdentifier": "m-0"}]
        node = emu.get_object("Node", "ip-10-0-1-11.ec2.internal")
        assert node is not None and node["spec"].get("unschedulable") is True


def test_an_ec2_tag_does_not_choose_which_nodeclaim_is_deleted() -> None:
    """A node-group instance tagged ``karpenter.sh/nodeclaim=<someone else's claim>`` stops:
    the claim's ``status.providerID`` names another instance, so the claim is left alone
    and the node is drained as the node-group node it is."""
    node_group = "i-0a1b2c3d4e5f60006"  # ip-10-0-3-16, node group "system"
    forged = InstanceInfo(
        node_group,
        node_name="ip-10-0-3-16.ec2.internal",
        nodeclaim="general-7xkqz",  # the claim of i-0a1b2c3d4e5f60001
        nodepool="general",
        zone="us-east-1a",
    )
    state = json.loads((EVENTS / "state-change.json").read_text())
    state["detail"].update({"instance-id": node_group, "state": "stopping"})
    with Emulator(copy.deepcopy(OBJECTS)) as emu:
        lifeboat = pipeline(emu)
        lifeboat.directory = StaticInstanceDirectory([forged])
        [result] = lifeboat.process([json.dumps(state)])
        [report] = result.reports
        assert report.outcome == "acted"
        assert "no NodeClaim" in report.reason
        assert all(a["type"] != "delete-nodeclaim" for a in report.actions)
        assert emu.get_object("NodeClaim", "general-7xkqz") is not None
        assert not any(nodes_of(c).get("lifeboat.dev/replaces") for c in emu.objects("NodeClaim"))


def nodes_of(obj: dict[str, Any]) -> dict[str, str]:
    return dict(obj["metadata"].get("labels") or {})


# -- forged follow-ups (issue 10.2) ------------------------------------------------------------

ACCOUNT, REGION = "123456789012", "us-east-1"
MANAGED = "lifeboat/managed"
GUARDED = Settings(clusters=("prod",), account_id=ACCOUNT, region=REGION, managed_tag=MANAGED)
KARPENTER_NODE = InstanceInfo(
    "i-0a1b2c3d4e5f60001",
    node_name="ip-10-0-1-11.ec2.internal",
    nodepool="general",
    cluster="prod",
    zone="us-east-1a",
    tags={MANAGED: "true"},
)
GROUP_NODE = InstanceInfo(
    "i-0a1b2c3d4e5f60006",
    node_name="ip-10-0-3-16.ec2.internal",
    cluster="prod",
    auto_scaling_group="eks-system-20260101-1a2b3c4d",
    zone="us-east-1a",
    tags={},  # no managed tag
)
OLD_UID = "0b7e6a1c-5d2f-4c3a-9e1b-000000000101"  # general-7xkqz, on i-0a1b2c3d4e5f60001


def guarded(emu: Emulator, *infos: InstanceInfo) -> tuple[Pipeline, Any]:
    from lifeboat_local.replay import RecordedLifecycle

    lifecycle = RecordedLifecycle()
    lifeboat = pipeline(emu, GUARDED)
    lifeboat.directory = StaticInstanceDirectory(infos)
    lifeboat.lifecycle = lifecycle
    return lifeboat, lifecycle


def follow_up(task: Task, instance: str, **fields: Any) -> str:
    spot = json.loads(SPOT)
    spot["detail"]["instance-id"] = instance
    spot.update(account=ACCOUNT, region=REGION)
    [notice] = parse_message(json.dumps(spot), received_at=NOW)
    overrides = fields.pop("notice", {})
    if overrides:
        from dataclasses import replace

        notice = replace(notice, **overrides)
    return encode(Wakeup(task, notice, NOW, **fields))


HAND_OVER = {"replacement": "general-0123456789", "old_nodeclaim": "general-7xkqz"}


@pytest.mark.parametrize(
    ("body", "why"),
    [
        # Another account, a made-up instance: refused before anything is read.
        (
            lambda: follow_up(
                Task.FINISH_REPLACEMENT,
                "i-0ffffffffffffffff",
                notice={"account": "999999999999"},
                old_nodeclaim_uid=OLD_UID,
                cluster="prod",
                **HAND_OVER,
            ),
            "account 999999999999",
        ),
        # A made-up instance EC2 does not know, the claim's real uid: the claim runs on
        # another instance, so the follow-up does not match the cluster.
        (
            lambda: follow_up(
                Task.FINISH_REPLACEMENT,
                "i-0ffffffffffffffff",
                old_nodeclaim_uid=OLD_UID,
                cluster="prod",
                **HAND_OVER,
            ),
            "not on instance i-0ffffffffffffffff",
        ),
        # A cluster this stack does not manage.
        (
            lambda: follow_up(
                Task.FINISH_REPLACEMENT,
                "i-0ffffffffffffffff",
                old_nodeclaim_uid=OLD_UID,
                cluster="someone-elses",
                **HAND_OVER,
            ),
            "not managed here",
        ),
        # A known instance, but the follow-up names another cluster than EC2's.
        (
            lambda: follow_up(
                Task.FINISH_REPLACEMENT,
                "i-0a1b2c3d4e5f60001",
                old_nodeclaim_uid=OLD_UID,
                cluster="stage",
                **HAND_OVER,
            ),
            "names cluster stage",
        ),
    ],
)
def test_a_forged_hand_over_deletes_nothing(body: Any, why: str) -> None:
    with Emulator(copy.deepcopy(OBJECTS)) as emu:
        lifeboat, _ = guarded(emu, KARPENTER_NODE)
        [result] = lifeboat.process([body()])
        [report] = result.reports
        assert report.outcome == "rejected"
        assert why in report.reason
        assert emu.get_object("NodeClaim", "general-7xkqz") is not None
        assert not [e for e in emu.request_log if e[0] == "delete"]


def test_a_hand_over_for_a_claim_now_someone_elses_deletes_nothing() -> None:
    """The name was reused (a new claim, a new uid) since the follow-up was scheduled."""
    with Emulator(copy.deepcopy(OBJECTS)) as emu:
        lifeboat, _ = guarded(emu, KARPENTER_NODE)
        body = follow_up(
            Task.FINISH_REPLACEMENT,
            "i-0a1b2c3d4e5f60001",
            old_nodeclaim_uid="00000000-0000-4000-8000-000000000000",
            cluster="prod",
            **HAND_OVER,
        )
        [result] = lifeboat.process([body])
        assert result.reports[0].outcome == "ignored"
        assert "is now another claim" in result.reports[0].reason
        assert emu.get_object("NodeClaim", "general-7xkqz") is not None


def test_a_genuine_hand_over_still_deletes_the_old_claim() -> None:
    with Emulator(copy.deepcopy(OBJECTS)) as emu:
        lifeboat, _ = guarded(emu, KARPENTER_NODE)
        body = follow_up(
            Task.FINISH_REPLACEMENT,
            "i-0a1b2c3d4e5f60001",
            old_nodeclaim_uid=OLD_UID,
            cluster="prod",
            replacement="general-gone",
            old_nodeclaim="general-7xkqz",
        )
        [result] = lifeboat.process([body])
        assert result.reports[0].outcome == "acted"
        gone = emu.get_object("NodeClaim", "general-7xkqz")  # Karpenter drains it now
        assert gone is not None and gone["metadata"].get("deletionTimestamp")


HOOK: dict[str, Any] = {
    "auto_scaling_group": "eks-system-20260101-1a2b3c4d",
    "hook_name": "lifeboat-drain",
    "action_token": "5b8e2f4a-9c1d-4e7b-8a3f-6d0c2e9b1a75",
    "instance_id": "i-0a1b2c3d4e5f60006",
}


def test_a_forged_drain_of_an_unmanaged_instance_evicts_nothing() -> None:
    """The instance lacks the managed tag: as an AWS event for it would be, ignored."""
    from lifeboat.events.notice import LifecycleHook

    with Emulator(copy.deepcopy(OBJECTS)) as emu:
        lifeboat, lifecycle = guarded(emu, GROUP_NODE)
        body = follow_up(
            Task.CONTINUE_DRAIN,
            "i-0a1b2c3d4e5f60006",
            notice={"lifecycle": LifecycleHook(**HOOK)},
            cluster="prod",
        )
        [result] = lifeboat.process([body])
        assert result.reports[0].outcome == "ignored"
        assert "lacks the managed tag" in result.reports[0].reason
        assert not [e for e in emu.request_log if e[2] == "pods/eviction"]
        assert lifecycle.calls == []


def test_a_lifecycle_hook_of_another_group_is_never_completed() -> None:
    """A drain follow-up, or an AWS lifecycle event, naming an Auto Scaling group the
    instance is not in (EC2's aws:autoscaling:groupName tag says which it is)."""
    from lifeboat.events.notice import LifecycleHook

    managed = InstanceInfo(**{**GROUP_NODE.__dict__, "tags": {MANAGED: "true"}})
    other = {**HOOK, "auto_scaling_group": "payments-workers"}
    with Emulator(copy.deepcopy(OBJECTS)) as emu:
        lifeboat, lifecycle = guarded(emu, managed)
        body = follow_up(
            Task.CONTINUE_DRAIN,
            "i-0a1b2c3d4e5f60006",
            notice={"lifecycle": LifecycleHook(**other)},
            cluster="prod",
        )
        event = json.loads((EVENTS / "asg-termination.json").read_text())
        event.update(account=ACCOUNT, region=REGION)
        event["detail"]["AutoScalingGroupName"] = "payments-workers"
        results = lifeboat.process([body, json.dumps(event)])
        for result in results:
            [report] = result.reports
            assert report.outcome == "rejected"
            assert "payments-workers" in report.reason
        assert lifecycle.calls == []
        assert not [e for e in emu.request_log if e[2] == "pods/eviction"]
