"""Reading a cluster file for the audit, the registry, and the exit status."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lifeboat_local.audit.command import exit_status
from lifeboat_local.audit.findings import Finding, ObjectRef, Severity
from lifeboat_local.audit.registry import CHECK_NAMES, CHECKS, run_checks
from lifeboat_local.audit.sources import read_cluster_file
from lifeboat_local.common import EXIT_FINDINGS, EXIT_OK, UsageError

from .audit_builders import pdb, pod, view, workload

NODE = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n"


def test_kubectl_list_and_documents_are_read(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        "apiVersion: v1\nkind: List\nitems:\n"
        "- {apiVersion: v1, kind: Pod, spec: {containers: [{name: c}]},\n"
        "   metadata: {name: p, creationTimestamp: 2026-12-01T10:00:00Z}}\n"
        "- {apiVersion: v1, kind: Service, metadata: {name: s}}\n"
        f"---\n{NODE}---\n"
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n"
    )
    inventory = read_cluster_file(path)
    assert [p["metadata"]["name"] for p in inventory.pods] == ["p"]
    # Unquoted YAML timestamps become the RFC 3339 strings the API carries.
    assert inventory.pods[0]["metadata"]["creationTimestamp"] == "2026-12-01T10:00:00Z"
    assert len(inventory.nodes) == len(inventory.workloads) == 1
    assert inventory.workload_kinds == {"Deployment"} and not inventory.karpenter
    assert inventory.notes == ("not audited: 1 v1/Service",)


def test_kubectl_json_output_is_read(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    items = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}]
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    assert [n["metadata"]["name"] for n in read_cluster_file(path).nodes] == ["n1"]


def test_a_file_without_the_controllers_of_its_pods_says_they_are_estimated(
    tmp_path: Path,
) -> None:
    path = tmp_path / "c.yaml"
    owned = (
        "apiVersion: v1\nkind: Pod\nspec: {{containers: [{{name: c}}]}}\nmetadata:\n"
        "  name: {name}\n  ownerReferences:\n"
        "  - {{apiVersion: apps/v1, kind: {kind}, name: x, uid: u, controller: true}}\n"
    )
    path.write_text(
        "\n---\n".join(
            owned.format(name=f"p{i}", kind=kind)
            for i, kind in enumerate(["ReplicaSet", "StatefulSet", "DaemonSet", "RayCluster"])
        )
    )
    inventory = read_cluster_file(path)
    assert inventory.workload_kinds == frozenset()
    # DaemonSets have no scale to estimate; a custom kind is no workload the file could hold.
    assert inventory.notes == (
        "the cluster file holds no ReplicaSets, StatefulSets: their scales are estimated from "
        "their pods",
    )


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("a: [b", "not valid YAML"),
        ("- 1\n", "document 0: expected a mapping, got list"),
        (
            f"{NODE}---\napiVersion: v1\nkind: Pod\nmetadata: {{}}\n",
            "document 1: missing metadata.name",
        ),
        ("kind: Node\nmetadata: {name: n}\n", "document 0: missing apiVersion"),
        (
            "apiVersion: v1\nkind: List\nitems: {a: 1}\n",
            "document 0: List items must be a sequence",
        ),
    ],
)
def test_bad_files_are_usage_errors_naming_the_document(
    tmp_path: Path, text: str, error: str
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(UsageError, match=error) as raised:
        read_cluster_file(path)
    assert str(path) in str(raised.value)


def test_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="No such file"):
        read_cluster_file(tmp_path / "absent.yaml")


def test_check_names_are_unique_and_kebab_case() -> None:
    assert len(CHECK_NAMES) == len(CHECKS)
    assert all(c.name == c.name.lower() and " " not in c.name for c in CHECKS)


def test_findings_sorted_errors_first_and_skippable() -> None:
    cluster = view(workload("Deployment", "api"), pdb("never", maxUnavailable=0), pod("web-0"))
    findings = run_checks(cluster)
    severities = [f.severity for f in findings]
    assert severities == sorted(severities, key=lambda s: s.rank)
    assert {f.check for f in findings} >= {
        "pdb-never-allows-eviction",
        "single-replica-without-pdb",
        "unmanaged-pod",
    }
    skipped = run_checks(cluster, skip=["pdb-never-allows-eviction"])
    assert "pdb-never-allows-eviction" not in {f.check for f in skipped}
    assert len(skipped) == len(findings) - 1


def finding(severity: Severity) -> Finding:
    return Finding("x", severity, ObjectRef("Pod", "ns", "p"), "m", "f")


def test_exit_status_errors_fail_warnings_only_with_strict() -> None:
    assert exit_status([], strict=True) == EXIT_OK
    assert exit_status([finding(Severity.INFO)], strict=True) == EXIT_OK
    assert exit_status([finding(Severity.WARNING)], strict=False) == EXIT_OK
    assert exit_status([finding(Severity.WARNING)], strict=True) == EXIT_FINDINGS == 3
    assert exit_status([finding(Severity.ERROR)], strict=False) == EXIT_FINDINGS
