"""Issue 35, items 3 and 4, through the real pipeline and the emulator: a rollback undoes
only what the rotation did; commands name their rotation by uid and carry a time.

- A node an AWS notice holds (its own ``lifeboat.dev/<kind>`` taint) keeps that hold: only
  the rotation's taint comes off; it stays cordoned, reported as not returned to service.
- A when-ready hand-over still waiting for its replacement is cancelled before the node is
  returned: the old NodeClaim is kept (its wake-up, found rolled back, deletes nothing) and
  the replacement loses Lifeboat's do-not-disrupt, so Karpenter may consolidate it.
- A completed rotation cannot be rolled back: rejected, saying why and what to do.
- Locally, a drained node-group node stays (cordoned, empty) until the group is scaled
  down, as on a real cluster.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from lifeboat.kube import nodes
from lifeboat.marks import node_marks
from lifeboat.marks.handover import PROTECTED_ANNOTATION
from lifeboat.model.report import Outcome
from lifeboat.model.settings import Settings
from lifeboat.rotation.model import NodePhase, Phase
from lifeboat.wakeup.codec import Task, encode
from tests.conftest import CliRun
from tests.integration.rotation.test_rotation import with_do_not_disrupt
from tests.integration.rotation.test_rotation_rollback import in_service
from tests.support.rotation_rig import (
    LEGACY,
    ROTATION,
    START,
    control,
    minutes,
    request,
    rig,
)

UID = "6f3d9a2e-4b1c-4e8f-9a7d-2c5b8e1f0a41"  # the sample request's (its event id)
RETIREMENT = {"key": "lifeboat.dev/scheduled-change", "effect": "NoSchedule"}


def test_a_node_an_aws_notice_holds_keeps_its_hold_after_the_rollback() -> None:
    """Before: ``--rollback`` stripped every lifeboat.dev/* taint, so a node facing an AWS
    Health retirement went back into service."""
    with rig() as r:
        r.send(request(waves=["1"]))
        r.follow()
        assert r.rotation().node(LEGACY[0]).phase is NodePhase.DONE
        node = r.node(LEGACY[0])
        assert node is not None
        node["spec"]["taints"].append(RETIREMENT)  # the Health notice acted on it too
        r.emu.put_object(node)
        reports = r.send(control("rollback", "a1000000-0000-4000-8000-0000000000o1"))
        held = r.node(LEGACY[0])
        assert held is not None and held["spec"].get("unschedulable") is True
        assert RETIREMENT in nodes.taints(held)
        assert not any(t["key"] == "lifeboat.dev/rotation" for t in nodes.taints(held))
        [warning] = [rep for rep in reports if rep.node == LEGACY[0]]
        assert warning.outcome is Outcome.IGNORED
        assert "stays out of service: Lifeboat's lifeboat.dev/scheduled-change" in warning.reason
        rotation = r.rotation()
        assert rotation.phase is Phase.ROLLED_BACK
        assert rotation.node(LEGACY[0]).phase is NodePhase.DONE  # not claimed restored
        assert r.events("RotationNodeNotRestored", "Node")


def _general_zone_b() -> dict[str, Any]:
    labels = {"karpenter.sh/nodepool": "general", "topology.kubernetes.io/zone": "us-east-1b"}
    event = request("zone-b", rotation="zone-b", selector={"labels": labels}, maxInFlight=1)
    return event | {"id": "6f3d9a2e-4b1c-4e8f-9a7d-2c5b8e1f0d01", "time": "2026-12-01T18:05:00Z"}


def test_a_rollback_cancels_a_pending_when_ready_hand_over_first() -> None:
    """Before: the node was reported "restored", and the pending hand-over deleted its claim
    a minute later. At 18:05 general's freeze is over (its budget allows 2 of 6)."""
    evening = START.replace(hour=18)
    with rig(settings=Settings(hand_over="when-ready"), start=evening) as r:
        r.send(_general_zone_b())
        node = r.rotation("zone-b").nodes[0]
        assert node.phase is NodePhase.REPLACING and node.nodeclaim is not None
        old = r.node(node.name)
        assert old is not None and nodes.annotations_of(old).get(PROTECTED_ANNOTATION) == "true"
        [replacement] = [
            c
            for c in r.emu.objects("NodeClaim")
            if nodes.labels_of(c).get(node_marks.REPLACES_LABEL) == node.nodeclaim
        ]
        r.clock.now += timedelta(seconds=20)  # the replacement is not initialized yet
        rollback = control("rollback", "a1000000-0000-4000-8000-0000000000o2")
        rollback["detail"]["rotation"] = "zone-b"
        rollback["detail"]["uid"] = "6f3d9a2e-4b1c-4e8f-9a7d-2c5b8e1f0d01"
        rollback["time"] = "2026-12-01T18:05:20Z"
        reports = r.send(rollback)
        assert [rep.outcome for rep in reports if rep.node == node.name] == [Outcome.ACTED]
        r.follow(until=evening + minutes(20))
        claim = r.emu.get_object("NodeClaim", node.nodeclaim)
        assert claim is not None and not claim["metadata"].get("deletionTimestamp")
        assert in_service(r.node(node.name))
        assert PROTECTED_ANNOTATION not in nodes.annotations_of(r.node(node.name) or {})
        fresh = r.emu.get_object("NodeClaim", nodes.name_of(replacement))
        assert fresh is None or nodes.DO_NOT_DISRUPT not in nodes.annotations_of(fresh)
        cancelled = [rep for _, rep in r.log if rep.wakeup == str(Task.HAND_OVER)]
        assert cancelled and all(rep.outcome is Outcome.IGNORED for rep in cancelled)
        assert "its hand-over was cancelled" in cancelled[0].reason


def test_a_completed_rotation_cannot_be_rolled_back_and_replay_exits_non_zero(
    cli: Callable[..., CliRun], tmp_path: Path
) -> None:
    """Before: rolling back a completed rotation was accepted and reported ``rolled-back``.
    Also: the drained node-group nodes stay, cordoned, until the group is scaled down."""
    with rig() as r:
        r.send(request())
        r.follow()
        assert r.rotation().phase is Phase.COMPLETED
        for name in LEGACY:  # not terminated by the simulation: nothing scales it down
            found = r.node(name)
            assert found is not None and found["spec"].get("unschedulable") is True
        [refused] = r.send(control("rollback", "a1000000-0000-4000-8000-0000000000o3"))
        assert refused.outcome is Outcome.REJECTED
        assert "a completed rotation cannot be rolled back" in refused.reason
        assert "kubectl uncordon" in refused.reason
        assert r.rotation().phase is Phase.COMPLETED
    # lifeboat replay: the request, then the rollback at 14:40 once it completed: exit 2.
    run = cli(
        "replay",
        ROTATION / "legacy-to-karpenter.json",
        ROTATION / "rollback.json",
        "--cluster",
        ROTATION.parent / "cluster.yaml",
        "--at",
        "2026-12-01T14:05:00Z",
        "--json",
    )
    assert run.code == 2, run.err
    assert "a completed rotation cannot be rolled back" in run.out


def test_a_command_for_another_uid_or_older_than_the_rotation_is_rejected() -> None:
    """Before: a Resume dated a week before the rotation passed its checkpoint; a Rollback
    dated a week earlier rolled it back: commands bound to a name only."""
    with rig() as r:
        r.send(request(waves=["1"]))
        r.follow()
        assert r.rotation().phase is Phase.PAUSED
        old = control("resume", "a1000000-0000-4000-8000-0000000000o4")
        old["time"] = "2026-11-24T14:05:00Z"
        [rejected] = r.send(old)
        assert rejected.outcome is Outcome.REJECTED
        assert "before the rotation was requested at 2026-12-01T14:05:00Z" in rejected.reason
        other = control("rollback", "a1000000-0000-4000-8000-0000000000o5")
        other["detail"]["uid"] = "0f6b2c1e-9a8d-4c3b-8e7f-6a5d4c3b2a10"
        [rejected] = r.send(other)
        assert rejected.outcome is Outcome.REJECTED
        assert f"rotation legacy-to-karpenter is uid {UID}" in rejected.reason
        assert r.rotation().phase is Phase.PAUSED
        # The right uid, sent after the rotation: applied; an older one after it is not.
        resume = control("resume", "a1000000-0000-4000-8000-0000000000o6")
        resume["time"] = "2026-12-01T14:30:00Z"
        assert r.send(resume)[0].outcome is Outcome.ACTED
        late = control("pause", "a1000000-0000-4000-8000-0000000000o7")
        late["time"] = "2026-12-01T14:20:00Z"
        [rejected] = r.send(late)
        assert rejected.outcome is Outcome.REJECTED and "out of order" in rejected.reason


def test_a_paused_nodes_wake_up_delivered_twice_is_scheduled_once() -> None:
    """Before: the paused branch counted the next wake-up from the clock, so a redelivery a
    second later scheduled a second one (17:05:00 and 17:05:01), and both went on."""
    with rig(with_do_not_disrupt("storefront-7b9c6d5f4-k2v8n")) as r:
        r.send(request(healthGate={"timeoutSeconds": 3600}))
        r.send(control("pause", "a1000000-0000-4000-8000-0000000000o8"))
        [decide] = [w for w in r.wakeups.pending.values() if w.task is Task.DECIDE]
        r.advance_to(decide.due)
        [due] = [w for w in r.wakeups.pop_due(r.clock.now) if w.task is Task.DECIDE]
        r.send(encode(due))
        r.clock.now += timedelta(seconds=1)
        r.send(encode(due))  # SQS delivers it again, a second later
        again = [w for w in r.wakeups.pending.values() if w.task is Task.DECIDE]
        assert len(again) == 1 and again[0].due == decide.due + minutes(5)
