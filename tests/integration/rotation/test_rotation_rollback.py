"""`lifeboat rotate NAME --rollback` (issue 28, item 3): the rotation is cancelled and the
nodes it took out of service that still exist return to service (uncordoned, Lifeboat's
taints and its load balancer exclusion off); what cannot be undone is reported. Through the
real pipeline and the emulator (tests/support/rotation_rig.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lifeboat.kube import nodes
from lifeboat.marks import node_marks
from lifeboat.model.report import Outcome
from lifeboat.rotation.model import NodePhase, Phase
from lifeboat.rotation.request import Verb, parse_command
from tests.conftest import CliRun
from tests.integration.rotation.test_rotation import pinned_to_first_node
from tests.support.rotation_rig import LEGACY, START, control, minutes, request, rig


def in_service(node: dict[str, Any] | None) -> bool:
    """Schedulable, no taint of Lifeboat's, not excluded from load balancers by Lifeboat."""
    assert node is not None
    return (
        not node.get("spec", {}).get("unschedulable")
        and not any(str(t.get("key", "")).startswith("lifeboat.dev/") for t in nodes.taints(node))
        and nodes.EXCLUDE_FROM_LOAD_BALANCERS_LABEL not in nodes.labels_of(node)
        and node_marks.EXCLUDED_BY_LIFEBOAT_ANNOTATION not in nodes.annotations_of(node)
    )


def test_a_rollback_after_a_failed_health_gate_returns_every_legacy_node_to_service() -> None:
    """The issue's done-when: every legacy node schedulable again and no Lifeboat taint."""
    with rig(pinned_to_first_node()) as r:
        r.send(request(maxInFlight=1, healthGate={"timeoutSeconds": 300}))
        r.follow()
        assert r.rotation().phase is Phase.FAILED
        failed = r.node(LEGACY[0])
        assert failed is not None and failed["spec"].get("unschedulable")  # cordoned
        assert not in_service(failed)
        r.clock.now = START + minutes(40)
        reports = r.send(control("rollback", "a1000000-0000-4000-8000-0000000000r1"))
        assert reports[0].outcome is Outcome.ACTED, reports[0].reason
        assert "rolled back" in reports[0].reason
        assert all(in_service(r.node(name)) for name in LEGACY)
        rotation = r.rotation()
        assert rotation.phase is Phase.ROLLED_BACK
        assert [n.phase for n in rotation.nodes] == [
            NodePhase.RESTORED,
            NodePhase.RELEASED,
            NodePhase.RELEASED,
        ]
        assert {e["involvedObject"]["kind"] for e in r.events("RotationNodeRestored")} >= {"Node"}
        # Nothing wakes up to touch them again.
        r.follow()
        assert all(in_service(r.node(name)) for name in LEGACY)


def test_a_rollback_mid_rotation_cancels_pending_work_and_reports_nodes_gone() -> None:
    """Two nodes rotated, one draining: the first one's instance is terminated (the node is
    gone, reported as not undone); the second and the one in flight return to service."""
    with rig() as r:
        r.send(request(maxInFlight=1))
        r.follow(until=START + minutes(2))
        rotation = r.rotation()
        assert [n.phase for n in rotation.nodes] == [
            NodePhase.DONE,
            NodePhase.DONE,
            NodePhase.DRAINING,
        ]
        r.emu.delete_object("Node", LEGACY[0])
        reports = r.send(control("rollback", "a1000000-0000-4000-8000-0000000000r2"))
        assert [rep.reason for rep in reports if "not undone" in rep.reason] == [
            f"rotation legacy-to-karpenter: {LEGACY[0]} not undone: the node is gone"
        ]
        rotation = r.rotation()
        assert rotation.phase is Phase.ROLLED_BACK
        # The state claims no more than was done: the gone node keeps its phase, and why.
        gone = rotation.node(LEGACY[0])
        assert (gone.phase, gone.note) == (NodePhase.DONE, "not undone: the node is gone")
        assert [rotation.node(n).phase for n in LEGACY[1:]] == [NodePhase.RESTORED] * 2
        assert in_service(r.node(LEGACY[1])) and in_service(r.node(LEGACY[2]))
        [warning] = r.events("RotationNodeNotRestored", "ConfigMap")
        assert warning["type"] == "Warning"
        # Its drain stops: the next wake-ups find the rotation rolled back.
        r.follow()
        assert in_service(r.node(LEGACY[2]))


def test_a_second_rollback_changes_nothing() -> None:
    with rig(pinned_to_first_node()) as r:
        r.send(request(maxInFlight=1, healthGate={"timeoutSeconds": 300}))
        r.follow()
        r.send(control("rollback", "a1000000-0000-4000-8000-0000000000r3"))
        [again] = r.send(control("rollback", "a1000000-0000-4000-8000-0000000000r4"))
        assert again.outcome is Outcome.IGNORED
        assert "rolled back already" in again.reason


def test_lifeboat_rotate_rollback_writes_the_rollback_request(
    tmp_path: Path, cli: Callable[..., CliRun]
) -> None:
    out = tmp_path / "rollback.json"
    run = cli(
        "rotate",
        "legacy-to-karpenter",
        "--cluster-name",
        "prod-a",
        "--rollback",
        "--uid",
        "6f3d9a2e-4b1c-4e8f-9a7d-2c5b8e1f0a41",
        "--out",
        out,
    )
    assert run.code == 0, run.err
    event = json.loads(out.read_text())
    assert event["detail-type"] == "Lifeboat Rotation Rollback Requested"
    assert event["detail"] == {
        "rotation": "legacy-to-karpenter",
        "uid": "6f3d9a2e-4b1c-4e8f-9a7d-2c5b8e1f0a41",
        "cluster": "prod-a",
    }
    assert parse_command(event).verb is Verb.ROLLBACK
