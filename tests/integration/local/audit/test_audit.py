"""``lifeboat audit`` end to end: on a cluster file with one of each problem and on a clean one
(exit codes, JSON shape, human output), and on a live cluster through a kubeconfig: the
emulator over HTTP with the official client, list requests only."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubemu import Emulator
from kubemu.resources import resource_for_object
from lifeboat_local.audit.registry import CHECK_NAMES, CHECKS
from lifeboat_local.audit.sources import read_cluster_file
from lifeboat_local.cli import main
from tests.support import cyaml, docs
from tests.support.kubeconfigs import write_kubeconfig

ROOT = Path(__file__).resolve().parents[4]
FIXTURES = ROOT / "tests" / "fixtures" / "audit"
PROBLEMS = FIXTURES / "problems.yaml"
CLEAN = FIXTURES / "clean.yaml"
AT = "2026-12-01T14:05:00Z"
WRITE_VERBS = ("create", "update", "patch", "delete")

# What the problem sample holds (each object's comment in the file says why).
EXPECTED = {
    ("pdb-never-allows-eviction", "PodDisruptionBudget kube-system/aws-node"),
    ("pdb-never-allows-eviction", "PodDisruptionBudget shop/checkout"),
    ("pod-in-several-pdbs", "PodDisruptionBudget shop/frontend"),
    ("pdb-expected-pods-unknown", "PodDisruptionBudget ml/llm"),
    ("pdb-allows-no-eviction-now", "PodDisruptionBudget shop/orders"),
    ("pdb-unhealthy-pods-held", "PodDisruptionBudget shop/orders"),
    ("pdb-matches-no-pod", "PodDisruptionBudget shop/checkout-typo"),
    ("single-replica-without-pdb", "Deployment shop/api"),
    ("unmanaged-pod", "Pod default/debug-shell"),
    ("do-not-disrupt-on-spot", "Pod data/etl-0"),
    ("do-not-disrupt-invalid", "Pod shop/api-6b5c-a"),
    ("do-not-disrupt-blocks-rotation", "Pod shop/checkout-7c9d-a"),
    ("nodepool-budgets-invalid", "NodePool typo-budget"),
    ("nodepool-budget-never-allows", "NodePool frozen"),
    ("nodepool-budget-unlimited", "NodePool daytime-freeze"),
    ("nodepool-default-budget", "NodePool legacy-defaults"),
    ("nodepool-lifeboat-disabled", "NodePool legacy-defaults"),
    ("invalid-label", "Deployment shop/api"),
    ("invalid-label", "NodePool gpu"),
    ("karpenter-invalid-label", "NodePool gpu"),
    ("node-without-owner", "Node ip-10-0-9-99.ec2.internal"),
    ("node-nodepool-missing", "Node ip-10-0-3-31.ec2.internal"),
    ("karpenter-instance-status", "Deployment kube-system/karpenter"),
    ("migration-pinned-to-node-group", "Pod data/etl-1"),
    ("migration-no-nodepool-fits", "Pod default/debug-shell"),
}


def audit(*argv: str) -> tuple[int, str, str]:
    """``lifeboat audit ARGV`` through the CLI's dispatch: (status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(["audit", *argv])
        except SystemExit as exit_:  # argparse's usage errors
            status = int(exit_.code or 0)
    return status, out.getvalue(), err.getvalue()


def audit_json(*argv: str) -> tuple[int, dict[str, Any]]:
    status, out, _ = audit(*argv, "--json", "--at", AT)
    return status, json.loads(out)


def described(finding: dict[str, Any]) -> tuple[str, str]:
    obj = finding["object"]
    where = f"{obj['namespace']}/{obj['name']}" if obj["namespace"] else obj["name"]
    return finding["check"], f"{obj['kind']} {where}"


def test_every_problem_of_the_sample_is_found() -> None:
    status, document = audit_json("--cluster", str(PROBLEMS))
    assert status == document["status"] == 3
    assert {described(f) for f in document["findings"]} == EXPECTED
    assert {f["check"] for f in document["findings"]} == CHECK_NAMES  # one of each
    severity_of = {c.name: c.severity.value for c in CHECKS}
    assert all(f["severity"] == severity_of[f["check"]] for f in document["findings"])


def test_json_is_one_document_with_stable_fields() -> None:
    _, document = audit_json("--cluster", str(PROBLEMS))
    assert set(document) == {"source", "at", "status", "summary", "notes", "skipped", "findings"}
    assert document["source"] == f"cluster file {PROBLEMS}"
    assert document["at"] == AT
    assert document["notes"] == ["not audited: 1 v1/Service"]
    findings = document["findings"]
    assert document["summary"] == {
        severity: sum(1 for f in findings if f["severity"] == severity)
        for severity in ("error", "warning", "info")
    }
    for finding in findings:
        assert set(finding) == {"check", "severity", "object", "message", "fix"}
        assert set(finding["object"]) == {"kind", "namespace", "name"}
        assert finding["message"] and finding["fix"]
    ranks = [("error", "warning", "info").index(f["severity"]) for f in findings]
    assert ranks == sorted(ranks)


def test_clean_sample_passes() -> None:
    status, document = audit_json("--cluster", str(CLEAN))
    assert status == document["status"] == 0
    assert document["findings"] == []
    assert document["summary"] == {"error": 0, "warning": 0, "info": 0}


def test_warnings_fail_only_with_strict() -> None:
    errors = [c.name for c in CHECKS if c.severity.value == "error"]
    skips = [arg for name in errors for arg in ("--skip", name)]
    status, document = audit_json("--cluster", str(PROBLEMS), *skips)
    assert status == 0 and document["summary"]["error"] == 0 and document["summary"]["warning"]
    assert sorted(document["skipped"]) == sorted(errors)
    strict, _ = audit_json("--cluster", str(PROBLEMS), *skips, "--strict")
    assert strict == 3


def test_human_output_is_grouped_by_severity() -> None:
    status, out, _ = audit("--cluster", str(PROBLEMS), "--at", AT)
    assert status == 3
    lines = out.splitlines()
    assert lines[0] == f"lifeboat audit of cluster file {PROBLEMS} at {AT}"
    headers = [line for line in lines if line and not line.startswith(" ") and "(" in line]
    assert [h.split()[0] for h in headers] == ["ERROR", "WARNING", "INFO"]
    assert "  pod-in-several-pdbs  PodDisruptionBudget shop/frontend" in lines
    index = lines.index("  pod-in-several-pdbs  PodDisruptionBudget shop/frontend")
    assert lines[index + 2].startswith("      fix: make the PDB selectors disjoint")
    assert lines[-1].endswith(": exit 3")


def test_usage_errors_exit_1_without_traceback(tmp_path: Path) -> None:
    status, _, err = audit("--cluster", str(PROBLEMS), "--skip", "no-such-check")
    assert status == 1 and "unknown check no-such-check" in err
    status, _, err = audit("--cluster", str(tmp_path / "absent.yaml"))
    assert status == 1 and "absent.yaml" in err and "Traceback" not in err
    status, _, err = audit("--cluster", str(PROBLEMS), "--context", "prod")
    assert status == 1 and "--context goes with --kubeconfig" in err


def test_the_installed_command_gates_ci() -> None:
    """The exit status of the real process, as a CI job sees it."""

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "lifeboat_local.cli", "audit", *argv, "--at", AT]
        return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)

    assert run("--cluster", str(PROBLEMS)).returncode == 3
    assert run("--cluster", str(CLEAN)).returncode == 0
    assert run("--cluster", str(CLEAN), "--strict").returncode == 0


# ---------------------------------------------------------------------------------------------
# A live cluster: the emulator behind a kubeconfig


def served_objects(path: Path) -> list[dict[str, Any]]:
    """The sample's objects the emulator serves (apps/v1 only once it serves them)."""
    objects = read_cluster_file(path).objects
    return [dict(o) for o in objects if resource_for_object(o["apiVersion"], o["kind"])]


@pytest.fixture
def live() -> Iterator[Emulator]:
    with Emulator(served_objects(PROBLEMS)) as emulator:
        yield emulator


@pytest.fixture
def kubeconfig(tmp_path: Path, live: Emulator) -> Path:
    return write_kubeconfig(tmp_path / "kubeconfig", live.url)


def test_live_cluster_finds_what_the_same_file_finds(
    live: Emulator, kubeconfig: Path, tmp_path: Path
) -> None:
    """Listing a live cluster and reading a file of the same objects agree finding for finding."""
    same = tmp_path / "served.yaml"
    same.write_text(
        cyaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": served_objects(PROBLEMS)})
    )
    live.reset_counts()
    status, from_live = audit_json("--kubeconfig", str(kubeconfig))
    _, from_file = audit_json("--cluster", str(same))
    assert status == 3
    assert from_live["findings"] == from_file["findings"]
    assert {
        ("pod-in-several-pdbs", "PodDisruptionBudget shop/frontend"),
        ("node-without-owner", "Node ip-10-0-9-99.ec2.internal"),
        ("nodepool-budgets-invalid", "NodePool typo-budget"),
    } <= {described(f) for f in from_live["findings"]}
    assert from_live["source"] == f"kubeconfig {kubeconfig}"
    # Read only: lists, no writes.
    assert sum(live.requests[verb] for verb in WRITE_VERBS) == 0
    assert live.requests_by_resource[("list", "pods")] >= 1


def test_live_cluster_without_apps_v1_says_it_estimated(live: Emulator, kubeconfig: Path) -> None:
    """An API server that does not serve the workloads (404, as for a group it lacks)."""
    for resource in ("deployments", "replicasets", "statefulsets", "daemonsets"):
        live.fail_next(404, times=100, verb="list", resource=resource)
    _, document = audit_json("--kubeconfig", str(kubeconfig))
    assert document["notes"] == [
        "the API server does not serve Deployments, ReplicaSets, StatefulSets, DaemonSets: "
        "scales are estimated from pods"
    ]
    [single] = [f for f in document["findings"] if f["check"] == "single-replica-without-pdb"]
    assert single["object"]["name"] == "api-6b5c" and "estimated" in single["message"]


def test_unreachable_cluster_exits_1(tmp_path: Path) -> None:
    config = write_kubeconfig(tmp_path / "kubeconfig", "http://127.0.0.1:9")
    status, _, err = audit("--kubeconfig", str(config), "--at", AT)
    assert status == 1 and "cannot list Nodes" in err and "Traceback" not in err


def _serves_discovery(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/apis", timeout=5):
            return True
    except urllib.error.URLError:
        return False


def test_kubectl_dump_audits_like_the_live_cluster(
    live: Emulator, kubeconfig: Path, tmp_path: Path
) -> None:
    """What ``kubectl get ... -o yaml`` writes is a cluster file the audit reads as it is."""
    kubectl = shutil.which("kubectl")
    if kubectl is None or not _serves_discovery(live.url):
        pytest.skip("needs kubectl and an emulator serving API discovery")
    kinds = (
        "nodes,pods,poddisruptionbudgets,nodepools.karpenter.sh,nodeclaims.karpenter.sh,"
        "deployments,replicasets,statefulsets,daemonsets"
    )
    dump = subprocess.run(
        [kubectl, "--kubeconfig", str(kubeconfig), "get", kinds, "-A", "-o", "yaml"],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    path = tmp_path / "dump.yaml"
    path.write_text(dump.stdout)
    _, from_dump = audit_json("--cluster", str(path))
    _, from_live = audit_json("--kubeconfig", str(kubeconfig))
    assert from_dump["findings"] == from_live["findings"]


def test_the_docs_show_a_real_run_and_every_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/commands/audit.md includes the example file of this run (its output below the
    command; test_docs_examples.py runs every example again), and its table names every
    check."""
    page = docs.page("commands/audit.md")
    assert '--8<-- "docs/examples/audit-problems.txt"' in page
    example = (ROOT / "docs/examples/audit-problems.txt").read_text()
    command = "$ lifeboat audit --cluster tests/fixtures/audit/problems.yaml --at " + AT + "\n"
    monkeypatch.chdir(ROOT)
    status, out, _ = audit("--cluster", "tests/fixtures/audit/problems.yaml", "--at", AT)
    assert status == 3
    assert example.startswith(command) and example.endswith(out)
    section = page.split("# `lifeboat audit`\n", 1)[1]
    assert all(f"| `{name}` |" in section for name in CHECK_NAMES)
