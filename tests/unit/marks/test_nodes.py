"""What a Node's taints say about Lifeboat's work on it (lifeboat.kube.nodes)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from lifeboat.karpenter import disruption_rules
from lifeboat.marks import node_marks


def node_with(*taints: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "ip-10-0-1-12.ec2.internal"}, "spec": {"taints": list(taints)}}


MARK = {"key": "lifeboat.dev/rebalance-recommendation", "effect": "PreferNoSchedule"}
ACTED = {"key": "lifeboat.dev/spot-interruption", "effect": "NoSchedule"}


def test_a_node_acted_on_after_another_notice_marked_it_is_acted_on() -> None:
    """A deferred rebalance mark came first, then a Spot warning took the node out of
    service: the node is acted on, whatever the order of its taints (the first Lifeboat
    taint alone once made it look merely marked)."""
    for order in ((MARK, ACTED), (ACTED, MARK)):
        node = node_with(*order)
        assert node_marks.acted_on(node)
        assert node_marks.lifeboat_taint(node) == ACTED


def test_a_marked_node_is_not_acted_on() -> None:
    node = node_with({"key": "team", "value": "a", "effect": "NoSchedule"}, MARK)
    assert not node_marks.acted_on(node)
    assert node_marks.lifeboat_taint(node) == MARK
    assert node_marks.lifeboat_taint(node_with()) is None


def test_stuck_terminating_is_more_than_a_minute_past_the_deletion_timestamp() -> None:
    """Karpenter's ``IsStuckTerminating`` (core pkg/utils/pod/scheduling.go):
    ``IsTerminating(pod) && clk.Since(pod.DeletionTimestamp.Time) > time.Minute``."""
    ends = datetime(2026, 12, 1, 14, 0, 30, tzinfo=UTC)
    pod: dict[str, Any] = {"metadata": {"name": "p", "deletionTimestamp": "2026-12-01T14:00:30Z"}}
    assert not disruption_rules.stuck_terminating(pod, ends + timedelta(seconds=60))
    assert disruption_rules.stuck_terminating(pod, ends + timedelta(seconds=61))
    assert not disruption_rules.stuck_terminating(
        {"metadata": {"name": "p"}}, ends + timedelta(hours=1)
    )


def test_a_node_is_unresponsive_when_not_ready_or_tainted_impaired() -> None:
    ready: dict[str, Any] = {
        "metadata": {"name": "n"},
        "spec": {},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }
    assert not node_marks.unresponsive(ready)
    unknown = {**ready, "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}}
    assert node_marks.unresponsive(unknown)
    impaired = {
        **ready,
        "spec": {"taints": [{"key": "lifeboat.dev/instance-impaired", "effect": "NoSchedule"}]},
    }
    assert node_marks.unresponsive(impaired)
    other = {**ready, "spec": {"taints": [{"key": "lifeboat.dev/spot-interruption"}]}}
    assert not node_marks.unresponsive(other)
