"""Issue 35, item 1: waiting is not failing. A node held back by a blocker with a known end
(a NodePool budget of 0 until its window opens, a do-not-disrupt pod whose duration ends)
waits for it, with the default 10-minute health gate, and the rotation completes; the
Event, the notification and ``lifeboat status`` say what it waits for and until when.
Blockers with no known end still fail it (tests/integration/rotation/test_rotation_stuck.py).

Karpenter's own rules for the blockers: ``karpenter.sh/do-not-disrupt`` with a duration is
active while ``now - status.startTime < d`` (``pod.IsDoNotDisruptActive``); a budget with a
schedule is active for ``duration`` from each cron hit (``Budget.IsActive``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from kubemu import dump_cluster_file
from lifeboat.aws.notify import ROTATION_CHANGE, detail_type
from lifeboat.kube import nodes
from lifeboat.model.report import Outcome
from lifeboat.rotation import plan
from lifeboat.rotation.model import NodePhase, Phase
from tests.conftest import CliRun
from tests.support.rotation_rig import LEGACY, START, minutes, request, rig, sample_objects

# NodePool general's two nodes in us-east-1b; its budget is "0" 09:00-17:00 on weekdays.
ZONE_B = ["ip-10-0-1-12.ec2.internal", "ip-10-0-1-17.ec2.internal"]
OPENS = START.replace(hour=17, minute=0)


def _zone_b_default_gate() -> dict[str, Any]:
    labels = {"karpenter.sh/nodepool": "general", "topology.kubernetes.io/zone": "us-east-1b"}
    event = request("zone-b", rotation="zone-b", selector={"labels": labels}, maxInFlight=2)
    event["detail"].pop("healthGate")  # the default: 600 s
    return event | {"id": "6f3d9a2e-4b1c-4e8f-9a7d-2c5b8e1f0c01"}


def test_a_closed_budget_window_waits_until_it_opens_then_completes(
    cli: Callable[..., CliRun], tmp_path: Path
) -> None:
    """Before: ``failed`` after 10 minutes ("health gate ... failed after 10m held back,
    never drained"). Now: both nodes wait until 17:00 and are then replaced."""
    with rig() as r:
        r.send(_zone_b_default_gate())
        waiting = [rep for _, rep in r.log if rep.rotation_change == plan.NODE_WAITING]
        assert sorted(rep.node or "" for rep in waiting) == ZONE_B
        assert all(rep.outcome is Outcome.DEFERRED for rep in waiting)
        assert all(rep.deferred_until == OPENS for rep in waiting)
        assert all("waiting until 2026-12-01T17:00:00Z" in rep.reason for rep in waiting)
        assert all(detail_type(rep) == ROTATION_CHANGE for rep in waiting)  # notified
        [event, *_] = r.events(plan.NODE_WAITING, "Node")
        assert "waiting until 2026-12-01T17:00:00Z" in event["message"]
        assert "NodePool general budget" in event["message"]

        r.follow(until=START.replace(hour=16, minute=0))  # far past the 10-minute gate
        rotation = r.rotation("zone-b")
        assert rotation.phase is Phase.RUNNING, rotation.reason
        assert [n.phase for n in rotation.nodes] == [NodePhase.WAITING] * 2
        assert all(n.gate_started is None and n.waits_until == OPENS for n in rotation.nodes)
        state = tmp_path / "waiting.yaml"
        dump_cluster_file(r.emu.objects(), state)

        r.follow()
        rotation = r.rotation("zone-b")
        assert rotation.phase is Phase.COMPLETED, rotation.summary()
        acted = [t for t, rep in r.log if rep.node in ZONE_B and rep.outcome is Outcome.ACTED]
        assert min(acted) == OPENS
    status = cli("status", "zone-b", "--cluster", state)
    assert "waiting until 2026-12-01T17:00:00Z: " in status.out
    assert "running" in status.out.splitlines()[0]


def _storefront_held_until_14_45() -> list[dict[str, Any]]:
    """storefront-7b9c6d5f4-k2v8n, on the first legacy node, started 13:45 with
    ``karpenter.sh/do-not-disrupt: 1h``: it may not be disrupted before 14:45."""
    objects = sample_objects()
    for obj in objects:
        if obj["kind"] == "Pod" and obj["metadata"]["name"] == "storefront-7b9c6d5f4-k2v8n":
            obj["metadata"].setdefault("annotations", {})[nodes.DO_NOT_DISRUPT] = "1h"
            obj["status"]["startTime"] = "2026-12-01T13:45:00Z"
    return objects


def test_a_do_not_disrupt_with_an_end_waits_for_it_then_the_rotation_completes() -> None:
    """Before: ``failed`` at 14:15 (the gate's 10 minutes from the first hold-back)."""
    with rig(_storefront_held_until_14_45()) as r:
        r.send(request())
        first = r.rotation().node(LEGACY[0])
        assert first.phase is NodePhase.WAITING
        assert first.waits_until == START.replace(minute=45)
        assert "storefront-7b9c6d5f4-k2v8n" in first.note and "until 2026-12-01T14:45:00Z" in (
            first.note
        )
        r.follow(until=START + minutes(30))
        assert r.rotation().phase is Phase.RUNNING
        assert not r.out_of_service(LEGACY[0])
        r.follow()
        rotation = r.rotation()
        assert rotation.phase is Phase.COMPLETED, rotation.summary()
        acted = [t for t, rep in r.log if rep.node == LEGACY[0] and rep.outcome is Outcome.ACTED]
        assert acted and min(acted) >= START.replace(minute=45)
