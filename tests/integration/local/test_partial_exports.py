"""A cluster file that lacks kinds the answers depend on says so (issue 38.1): stderr names the
missing kinds and the export that adds them, ``--json`` lists them, ``--strict`` exits 3, and
the answers that depend on them say "not in the file" instead of "not found" or "none".

The partial files are exported the way users make them: the stock kubectl's ``kubectl get
KINDS -A -o yaml`` against the sample cluster served by the emulator (as ``lifeboat serve``
serves it), so they have kubectl's own shape (one ``kind: List``, no type per item list).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kubemu import Emulator
from lifeboat_local.partial import missing_kinds
from tests.conftest import CliRun
from tests.support.kubeconfigs import write_kubeconfig
from tests.support.paths import EVENTS, SAMPLE_CLUSTER

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
AT = "2026-12-01T14:05:00Z"
REBALANCE = EVENTS / "rebalance-recommendation.json"
RETIREMENT = EVENTS / "scheduled-change.json"
SPOT = EVENTS / "spot-interruption.json"
CONTROLLERS = "deployments,replicasets,statefulsets,daemonsets,replicationcontrollers"
FULL = f"nodes,pods,pdb,nodepools,nodeclaims,{CONTROLLERS}"


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], Path]]:
    """``export("nodes,pods")``: the file ``kubectl get nodes,pods -A -o yaml`` writes."""
    folder = tmp_path_factory.mktemp("exports")
    with Emulator.from_file(SAMPLE_CLUSTER) as emulator:
        kubeconfig = write_kubeconfig(folder / "kubeconfig", emulator.url)

        def run(kinds: str) -> Path:
            assert KUBECTL is not None
            path = folder / f"{kinds.replace(',', '-')}.yaml"
            done = subprocess.run(
                [KUBECTL, "--kubeconfig", str(kubeconfig), "get", kinds, "-A", "-o", "yaml"],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            assert done.returncode == 0, done.stderr
            path.write_text(done.stdout, encoding="utf-8")
            return path

        yield run


def _records(run: CliRun) -> dict[str, dict[str, object]]:
    """Each instance's first record (the event's own, before any wake-up's)."""
    first: dict[str, dict[str, object]] = {}
    for record in run.records:
        first.setdefault(str(record["instance_id"]), record)
    return first


def test_a_full_export_lacks_nothing(
    cli: Callable[..., CliRun], export: Callable[..., Path]
) -> None:
    run = cli("replay", REBALANCE, "--cluster", export(FULL), "--at", AT, "--strict", "--json")
    assert run.code == 0, run.err
    assert "holds no" not in run.err
    assert all("missing_kinds" not in r for r in run.records)


def test_nodes_and_pods_only(cli: Callable[..., CliRun], export: Callable[..., Path]) -> None:
    """The issue's first export: the rebalance went from deferred to "NodePool general not
    found ... giving up", silently, exit 0 even with --strict."""
    cluster = export("nodes,pods")
    run = cli("replay", REBALANCE, RETIREMENT, "--cluster", cluster, "--at", AT, "--json")
    retirement = _records(run)["i-0a1b2c3d4e5f60004"]
    assert "NodePool batch not in the file (it holds no NodePools)" in str(retirement["reason"])
    run = cli("replay", REBALANCE, "--cluster", cluster, "--at", AT, "--json")
    assert run.code == 0, run.err
    for plural in ("PodDisruptionBudgets", "NodePools", "NodeClaims", "workload controllers"):
        assert f"--cluster {cluster} holds no {plural}" in run.err
    assert "add the missing kinds with `kubectl get pdb,nodepools,nodeclaims," in run.err
    rebalance = _records(run)["i-0a1b2c3d4e5f60002"]
    missing = ["PodDisruptionBudget", "NodePool", "NodeClaim", "controllers"]
    assert rebalance["missing_kinds"] == missing
    reason = str(rebalance["reason"])
    assert "NodePool general not in the file (it holds no NodePools)" in reason
    assert "not found" not in reason
    assert "judged without PodDisruptionBudgets, NodePools, NodeClaims" in reason
    strict = cli("replay", REBALANCE, "--cluster", cluster, "--at", AT, "--strict")
    assert strict.code == 3


def test_kubectl_get_all_has_no_nodes(
    cli: Callable[..., CliRun], export: Callable[..., Path]
) -> None:
    """``kubectl get all -A``: no Nodes, so every event was "ignored ... unknown instance"."""
    cluster = export("all")
    run = cli("replay", SPOT, "--cluster", cluster, "--at", AT, "--json", "--strict")
    assert run.code == 3
    assert f"--cluster {cluster} holds no Nodes: every instance is unknown" in run.err
    (record,) = run.records
    assert record["reason"] == "instance i-0a1b2c3d4e5f60001 is not in the file (it holds no Nodes)"
    assert "Node" in record["missing_kinds"]


@pytest.mark.parametrize(
    ("left_out", "kind"),
    [
        ("pdb", "PodDisruptionBudget"),
        ("nodeclaims", "NodeClaim"),
        ("nodepools", "NodePool"),
        (CONTROLLERS, "controllers"),
    ],
    ids=["no-pdbs", "no-nodeclaims", "no-nodepools", "no-controllers"],
)
def test_one_kind_left_out(
    cli: Callable[..., CliRun], export: Callable[..., Path], left_out: str, kind: str
) -> None:
    """Leaving out one kind changed decisions silently; now it is said, listed and fails
    --strict."""
    kinds = ",".join(k for k in FULL.split(",") if k not in left_out.split(","))
    cluster = export(kinds)
    run = cli("replay", REBALANCE, "--cluster", cluster, "--at", AT, "--json", "--strict")
    assert run.code == 3, run.err
    assert f"--cluster {cluster}: add the missing kinds with `kubectl get {left_out} " in run.err
    (record,) = run.records
    assert record["missing_kinds"] == [kind]


def test_explain_says_pdbs_not_in_the_file(
    cli: Callable[..., CliRun], export: Callable[..., Path]
) -> None:
    """The issue: explain printed "PDBs: none select this node's pods" where PDB
    shop/checkout covers the pod, when the PDBs were left out."""
    with_pdbs = cli("explain", REBALANCE, "--cluster", export(FULL), "--at", AT)
    assert "PDB:         shop/checkout" in with_pdbs.out
    kinds = ",".join(k for k in FULL.split(",") if k != "pdb")
    run = cli("explain", REBALANCE, "--cluster", export(kinds), "--at", AT, "--strict")
    assert run.code == 3
    assert "PDBs:        not in the file (the file holds no PodDisruptionBudgets)" in run.out
    assert "none select" not in run.out
    nodes_pods = cli("explain", REBALANCE, "--cluster", export("nodes,pods"), "--at", AT)
    assert "NodeClaim:   general-b4wpl (not in the file: named by the Node)" in nodes_pods.out
    assert "(NOT IN THE FILE)" in nodes_pods.out
    as_json = cli("explain", REBALANCE, "--cluster", export("nodes,pods"), "--at", AT, "--json")
    assert as_json.records[0]["missing_kinds"][:2] == ["PodDisruptionBudget", "NodePool"]


def test_windows_and_audit_say_it_too(
    cli: Callable[..., CliRun], export: Callable[..., Path]
) -> None:
    cluster = export("nodes,pods")
    for command in ("windows", "audit"):
        run = cli(command, "--cluster", cluster, "--at", AT)
        assert f"--cluster {cluster} holds no NodePools" in run.err, command


def test_a_typed_empty_list_says_the_cluster_has_none() -> None:
    """A cluster with no PDBs at all: ``kubectl get --raw`` of the kind's list (typed, no
    items) says so, and the kind is not missing."""
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}
    assert [m.kind for m in missing_kinds([node, pod])] == ["PodDisruptionBudget"]
    assert missing_kinds([node, pod], declared={"PodDisruptionBudget"}) == ()


def test_a_cluster_without_karpenter_needs_no_nodeclaims() -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "b"}}
    assert missing_kinds([node, pod, pdb]) == ()
    labelled = {**node, "metadata": {"name": "k", "labels": {"karpenter.sh/nodepool": "g"}}}
    assert [m.kind for m in missing_kinds([labelled, pod, pdb])] == ["NodePool", "NodeClaim"]


def test_a_typed_empty_list_in_a_file(cli: Callable[..., CliRun], tmp_path: Path) -> None:
    text = SAMPLE_CLUSTER.read_text(encoding="utf-8")
    kept = [d for d in text.split("\n---\n") if "kind: PodDisruptionBudget" not in d]
    empty = "apiVersion: policy/v1\nkind: PodDisruptionBudgetList\nitems: []\n"
    cluster = tmp_path / "no-pdbs.yaml"
    cluster.write_text("\n---\n".join([*kept, empty]), encoding="utf-8")
    run = cli("replay", SPOT, "--cluster", cluster, "--at", AT, "--strict")
    assert "holds no PodDisruptionBudgets" not in run.err
