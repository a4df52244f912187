"""Rotations in waves with checkpoints (issue 28, item 3): after each wave the rotation
pauses itself (a RotationCheckpoint Event, `lifeboat status` says so) until it is resumed
(the next wave) or rolled back. Through the real pipeline and the emulator."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from lifeboat.rotation.model import NodePhase, Phase, Rotation, RotationNode
from lifeboat.rotation.plan import wave_limit
from lifeboat.rotation.request import RotationSpec
from tests.conftest import CliRun
from tests.support.rotation_rig import LEGACY, START, control, minutes, request, rig


def test_the_rotation_pauses_at_each_checkpoint_until_resumed() -> None:
    with rig() as r:
        r.send(request(waves=["1", "100%"]))
        r.follow()
        rotation = r.rotation()
        assert rotation.phase is Phase.PAUSED
        assert [n.phase for n in rotation.nodes] == [
            NodePhase.DONE,
            NodePhase.PENDING,
            NodePhase.PENDING,
        ]
        assert rotation.reason.startswith("checkpoint after wave 1 of 2 (1 of 1 node(s) done")
        [event] = r.events("RotationCheckpoint", "ConfigMap")
        assert "resume to go on, roll back to undo" in event["message"]
        assert not r.wakeups.pending  # a checkpoint waits for the operator, polling nothing
        r.clock.now = START + minutes(30)
        r.send(control("resume", "a1000000-0000-4000-8000-0000000000w1"))
        r.follow()
        assert r.rotation().phase is Phase.COMPLETED
        assert [n.phase for n in r.rotation().nodes] == [NodePhase.DONE] * 3


def test_a_rollback_at_a_checkpoint_returns_the_first_wave_to_service() -> None:
    with rig() as r:
        r.send(request(waves=["1"]))
        r.follow()
        assert r.rotation().phase is Phase.PAUSED
        r.send(control("rollback", "a1000000-0000-4000-8000-0000000000w2"))
        rotation = r.rotation()
        assert rotation.phase is Phase.ROLLED_BACK
        assert [n.phase for n in rotation.nodes] == [
            NodePhase.RESTORED,
            NodePhase.RELEASED,
            NodePhase.RELEASED,
        ]
        first = r.node(LEGACY[0])
        assert first is not None and not first["spec"].get("unschedulable")


def _rotation(waves: tuple[str, ...], nodes: int, wave: int) -> Rotation:
    spec = RotationSpec(name="r", labels={"a": "b"}, waves=waves)
    members = tuple(RotationNode(f"n{i}", f"i-{i}") for i in range(nodes))
    return Rotation(spec, "id", START, members, wave=wave)


@pytest.mark.parametrize(
    ("waves", "nodes", "limits"),
    [
        (("1", "10%", "100%"), 40, [1, 4, 40, 40]),
        (("1", "10%", "100%"), 5, [1, 2, 5, 5]),  # 10% of 5 rounds up to 1: one more node
        (("50%",), 3, [2, 3]),  # past the last wave: all of them
        ((), 7, [7]),
    ],
)
def test_wave_limits_are_cumulative_and_grow(
    waves: tuple[str, ...], nodes: int, limits: list[int]
) -> None:
    assert [wave_limit(_rotation(waves, nodes, i)) for i in range(len(limits))] == limits


def test_lifeboat_rotate_waves_reach_the_request(
    cli: Callable[..., CliRun], tmp_path: Path
) -> None:
    out = tmp_path / "r.json"
    run = cli("rotate", "legacy", "--node-group", "legacy", "--waves", "1,10%,100%", "--out", out)
    assert run.code == 0, run.err
    assert json.loads(out.read_text())["detail"]["waves"] == ["1", "10%", "100%"]
    bad = cli("rotate", "legacy", "--node-group", "legacy", "--waves", "0,150%", "--out", out)
    assert bad.code == 1
    assert "waves" in bad.err, bad.err


# -- the health gate's AMI validation (--allowed-ami) ----------------------------------------------

LEGACY_AMI = "ami-0b7e5c4d3a2f19e80"  # events/cluster.yaml: the legacy group's nodegroup-image
POOL_AMI = "ami-0c1d2e3f4a5b6c7d8"  # its NodePool general's NodeClaims' status.imageID


def test_the_health_gate_fails_when_the_load_went_to_a_node_on_an_ami_not_allowed() -> None:
    """The first node's storefront pods land on the legacy nodes not yet rotated (the
    scheduler's choice): they run the old AMI, so the AMI validation fails the gate at once,
    and a rollback returns the node to service."""
    allowed = "ami-0123456789abcdef0"
    with rig() as r:
        r.send(request(healthGate={"timeoutSeconds": 600, "allowedAmis": [allowed]}))
        r.follow()
        rotation = r.rotation()
        assert rotation.phase is Phase.FAILED
        first = rotation.node(LEGACY[0])
        assert first.phase is NodePhase.FAILED
        assert first.note.startswith("health gate failed: its pods run on node(s) not on an")
        assert f"({LEGACY_AMI})" in first.note
        assert first.since is not None and first.since < START + minutes(5)  # at once
        r.send(control("rollback", "a1000000-0000-4000-8000-0000000000a1"))
        node = r.node(LEGACY[0])
        assert node is not None and not node["spec"].get("unschedulable")


def test_the_health_gate_passes_when_the_load_runs_an_allowed_ami() -> None:
    """The pods end on legacy nodes and the pool's: both AMIs allowed, every gate passes;
    the pool's alone, the last node's gate (its pods on the pool's nodes) would pass but the
    first's fails (its pods on legacy nodes), as above."""
    allowed = [LEGACY_AMI, POOL_AMI]
    with rig() as r:
        r.send(request(healthGate={"timeoutSeconds": 600, "allowedAmis": allowed}))
        r.follow()
        assert r.rotation().phase is Phase.COMPLETED, r.rotation().reason


def test_lifeboat_rotate_allowed_ami_reaches_the_health_gate(
    cli: Callable[..., CliRun], tmp_path: Path
) -> None:
    out = tmp_path / "r.json"
    argv = ["rotate", "legacy", "--node-group", "legacy", "--allowed-ami", POOL_AMI]
    run = cli(*argv, "--out", out)
    assert run.code == 0, run.err
    assert json.loads(out.read_text())["detail"]["healthGate"]["allowedAmis"] == [POOL_AMI]


def test_a_checkpoint_is_a_notification() -> None:
    """The checkpoint's report goes out as `Lifeboat Rotation Changed` (notify.detail_type),
    which template.yaml's notification rule sends to the topic."""
    from lifeboat.aws.notify import ROTATION_CHANGE, detail_type

    with rig() as r:
        r.send(request(waves=["1"]))
        r.follow()
        notified = [(rep, detail_type(rep)) for _, rep in r.log if detail_type(rep)]
        changes = [rep.rotation_change for rep, kind in notified if kind == ROTATION_CHANGE]
        assert changes == ["RotationCheckpoint"]
