"""One truthful view of a cluster: ``replay`` and ``explain`` read the same kinds through one
loader and reach the same decisions, whether the cluster file holds the workload controllers
or only the PDBs' exported status (what ``kubectl get nodes,pods,pdb`` gives).

The disruption controller (``pkg/controller/disruption/disruption.go``, getExpectedPodCount)
computes a ``maxUnavailable`` PDB's expected pods from its pods' controllers' scale; a copy
without the controllers cannot recompute it, so the tools take the PDB's exported
``status.expectedPods`` (what the real controller computed) and say so on stderr. Without
that status either, the controller's fail-safe (no disruption) applies, and is said too.
"""

from __future__ import annotations

import io
import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubemu import Emulator, dump_cluster_file, load_cluster_file
from lifeboat_local.cli import build_parser
from lifeboat_local.explain import run as explain_run
from lifeboat_local.replay import run as replay_run
from lifeboat_local.source import EXPORT_KINDS
from tests.support.kubeconfigs import write_kubeconfig
from tests.support.paths import EVENTS, SAMPLE_CLUSTER

Obj = dict[str, Any]
CONTROLLERS = ("ReplicaSet", "StatefulSet", "Deployment")
EVENING = "2026-12-01T18:00:00Z"  # after general's weekday freeze: its budget allows 2
IN_WINDOW = "2026-12-01T14:05:00Z"
# ip-10-0-2-13 (pool general) runs coredns-...-9mzl7, under kube-system/coredns maxUnavailable 1.
COREDNS_NODE_INSTANCE = "i-0a1b2c3d4e5f60003"
SAMPLES = sorted(p.name for p in EVENTS.glob("*.json"))


def _exported_statuses() -> dict[str, Obj]:
    """Each sample PDB's status as the disruption controller computes it (with controllers)."""
    with Emulator(load_cluster_file(SAMPLE_CLUSTER)) as emulator:
        return {p["metadata"]["name"]: p["status"] for p in emulator.view("PodDisruptionBudget")}


def _variant(path: Path, *, controllers: bool, status: bool) -> Path:
    """The sample cluster, with or without its controllers and its PDBs' exported status."""
    statuses = _exported_statuses()
    objects: list[Obj] = []
    for obj in load_cluster_file(SAMPLE_CLUSTER):
        if obj["kind"] in CONTROLLERS and not controllers:
            continue
        if obj["kind"] == "PodDisruptionBudget" and status:
            obj = {**obj, "status": statuses[obj["metadata"]["name"]]}
        objects.append(obj)
    dump_cluster_file(objects, path)
    return path


def _rebalance(tmp_path: Path, instance: str) -> Path:
    event = json.loads((EVENTS / "rebalance-recommendation.json").read_text())
    event["id"] = f"rebalance-{instance}"
    event["detail"]["instance-id"] = instance
    event["resources"] = [f"arn:aws:ec2:us-east-1c:instance/{instance}"]
    path = tmp_path / f"rebalance-{instance}.json"
    path.write_text(json.dumps(event))
    return path


def _run(command: str, *argv: str) -> list[Obj]:
    args = build_parser().parse_args([command, *argv, "--json"])
    out = io.StringIO()
    run = replay_run if command == "replay" else explain_run
    assert run(args, out) in (0, 2)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def _decisions(command: str, *argv: str) -> list[tuple[Any, ...]]:
    """(event, instance, outcome, deferred_until) per record, whichever tool printed it."""
    found = []
    for line in _run(command, *argv):
        decision = line.get("decision") or line
        found.append(
            (
                line.get("event_id"),
                line.get("instance_id"),
                decision["outcome"],
                decision.get("deferred_until"),
            )
        )
    return found


@pytest.fixture(params=["with-controllers", "status-only"])
def cluster(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    controllers = request.param == "with-controllers"
    return _variant(tmp_path / f"{request.param}.yaml", controllers=controllers, status=True)


@pytest.mark.parametrize("at", [IN_WINDOW, EVENING])
@pytest.mark.parametrize("sample", SAMPLES)
def test_explain_and_replay_agree_on_every_sample(cluster: Path, sample: str, at: str) -> None:
    event = str(EVENTS / sample)
    argv = (event, "--cluster", str(cluster), "--at", at)
    replayed = _decisions("replay", *argv)
    assert replayed
    assert _decisions("explain", *argv) == replayed


def test_a_maxunavailable_pdb_allows_what_its_exported_status_says_without_controllers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    event = str(_rebalance(tmp_path, COREDNS_NODE_INSTANCE))
    outcomes = {}
    for name, controllers in (("with", True), ("without", False)):
        cluster = _variant(tmp_path / f"{name}.yaml", controllers=controllers, status=True)
        argv = (event, "--cluster", str(cluster), "--at", EVENING)
        [replayed] = _run("replay", *argv)
        [explained] = _run("explain", *argv)
        outcomes[name] = (replayed["outcome"], explained["decision"]["outcome"])
        pdb = next(p for p in explained["pdbs"] if p["name"] == "coredns")
        assert (pdb["disruptionsAllowed"], pdb["expectedPods"]) == (1, 2)
    assert outcomes == {"with": ("acted", "acted"), "without": ("acted", "acted")}
    err = capsys.readouterr().err
    assert (
        "PDB kube-system/coredns: its pods' controller(s) ReplicaSet "
        "kube-system/coredns-5d78c9869d not among the objects read; trusting the PDB's "
        "exported status (expectedPods 2, disruptionsAllowed 1)"
    ) in err


def test_without_controllers_or_status_the_fail_safe_is_said_with_the_export_to_make(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    event = str(_rebalance(tmp_path, COREDNS_NODE_INSTANCE))
    cluster = _variant(tmp_path / "bare.yaml", controllers=False, status=False)
    argv = (event, "--cluster", str(cluster), "--at", EVENING)
    [replayed] = _run("replay", *argv)
    [explained] = _run("explain", *argv)
    assert replayed["outcome"] == explained["decision"]["outcome"] == "deferred"
    assert "PDB kube-system/coredns" in replayed["reason"]
    err = capsys.readouterr().err
    assert "the PDB has no exported status: no disruption is allowed" in err
    assert f"kubectl get {EXPORT_KINDS} -A -o yaml" in err
    assert "replicasets,statefulsets" in EXPORT_KINDS


@pytest.fixture(params=["with-controllers", "status-only"])
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Path]:
    """A served cluster (as ``lifeboat serve`` serves a file) and a kubeconfig for it."""
    controllers = request.param == "with-controllers"
    path = _variant(tmp_path / "served.yaml", controllers=controllers, status=True)
    with Emulator(load_cluster_file(path)) as emulator:
        emulator.trust_exported_pdb_status()
        yield write_kubeconfig(tmp_path / "kubeconfig", emulator.url)


def test_explain_and_replay_agree_on_a_served_cluster_with_maxunavailable_pdbs(
    served: Path, tmp_path: Path
) -> None:
    event = str(_rebalance(tmp_path, COREDNS_NODE_INSTANCE))
    argv = (event, "--kubeconfig", str(served), "--at", EVENING)
    replayed = _decisions("replay", *argv)
    assert [outcome for _, _, outcome, _ in replayed] == ["acted"]
    assert _decisions("explain", *argv) == replayed


def test_follow_drains_the_node_without_controllers_as_with_them(tmp_path: Path) -> None:
    """The Spot-like state change on ip-10-0-2-13 (coredns under maxUnavailable 1): the
    simulated drain honours the PDB's exported status, so the node is drained and removed
    before its deadline, as with the controllers in the file."""
    event = str(EVENTS / "state-change.json")
    for name, controllers in (("with", True), ("without", False)):
        cluster = _variant(tmp_path / f"{name}.yaml", controllers=controllers, status=True)
        state = tmp_path / f"{name}-after.yaml"
        argv = (event, "--cluster", str(cluster), "--at", IN_WINDOW, "--follow")
        _run("replay", *argv, "--state-out", str(state))
        after = load_cluster_file(state)
        assert "ip-10-0-2-13.ec2.internal" not in {
            o["metadata"]["name"] for o in after if o["kind"] == "Node"
        }, name
        assert not [
            o
            for o in after
            if o["kind"] == "Pod" and o["spec"].get("nodeName") == "ip-10-0-2-13.ec2.internal"
        ], name


def test_a_follow_left_unsettled_says_which_node_still_drains(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without controllers or status the fail-safe holds coredns on the node for good: the
    timeline ends with the node still draining, and says so (never silently)."""
    cluster = _variant(tmp_path / "bare.yaml", controllers=False, status=False)
    argv = (str(EVENTS / "state-change.json"), "--cluster", str(cluster), "--at", IN_WINDOW)
    _run("replay", *argv, "--follow")
    err = capsys.readouterr().err
    assert (
        "--follow stopped at 2026-12-01T14:21:00Z: the simulated Karpenter made no progress "
        "for 15m0s (still draining: ip-10-0-2-13.ec2.internal)"
    ) in err


@pytest.mark.parametrize("controllers", [True, False], ids=["with-controllers", "status-only"])
def test_lifeboat_serve_then_replay_and_explain_through_its_kubeconfig_agree(
    tmp_path: Path, controllers: bool
) -> None:
    """The issue's case: a cluster served by ``lifeboat serve`` (a subprocess, as a user runs
    it), then ``replay --kubeconfig`` and ``explain --kubeconfig`` against it."""
    cluster = _variant(tmp_path / "cluster.yaml", controllers=controllers, status=True)
    kubeconfig = tmp_path / "kubeconfig"
    command = [sys.executable, "-m", "lifeboat_local.cli", "serve", "--cluster", str(cluster)]
    server = subprocess.Popen(
        [*command, "--kubeconfig-out", str(kubeconfig)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        for _ in range(600):  # written once the server answers
            if kubeconfig.exists() or server.poll() is not None:
                break
            time.sleep(0.05)
        assert kubeconfig.exists(), server.communicate(timeout=10)
        event = str(_rebalance(tmp_path, COREDNS_NODE_INSTANCE))
        argv = (event, "--kubeconfig", str(kubeconfig), "--at", EVENING)
        replayed = _decisions("replay", *argv)
        assert [outcome for _, _, outcome, _ in replayed] == ["acted"]
        assert _decisions("explain", *argv) == replayed
    finally:
        server.send_signal(signal.SIGTERM)
        _, err = server.communicate(timeout=30)
    assert server.returncode == 0
    trusted = "PDB kube-system/coredns: its pods' controller(s)" in err
    assert trusted is not controllers
