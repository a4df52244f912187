"""Cluster files as people have them: ``kubectl get -o yaml`` output with kinds Lifeboat does
not read (skipped and counted), and the mistakes that cannot be a cluster file (an empty
file, a kubeconfig, Karpenter's pre-1.0 API, broken YAML) named with what to do instead.
Every command opens clusters the same way; each case runs through ``lifeboat_local.cli``.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lifeboat_local.cli import main
from tests.support import cyaml

ROOT = Path(__file__).resolve().parents[3]
EVENTS = ROOT / "events"
CLUSTER = EVENTS / "cluster.yaml"
SPOT = EVENTS / "spot-interruption.json"
AT = "2026-12-01T14:05:00Z"
KUBECTL = shutil.which("kubectl")


def lifeboat(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    try:
        status = main([str(a) for a in argv])
    except SystemExit as exited:  # argparse's usage errors
        status = int(exited.code or 0)
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def sample_items() -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = cyaml.safe_load(CLUSTER.read_text())["items"]
    return items


def kubectl_objects() -> list[dict[str, Any]]:
    """A Secret and a Service as the stock kubectl prints them (client-side dry run)."""
    if KUBECTL is None:
        pytest.skip("kubectl is not installed")
    commands = [
        ["create", "secret", "generic", "app-config", "--from-literal=mode=prod"],
        ["create", "service", "clusterip", "web", "--tcp=80:8080"],
    ]
    return [
        cyaml.safe_load(
            subprocess.run(
                [KUBECTL, *command, "--dry-run=client", "-o", "yaml"],
                capture_output=True, text=True, check=True, timeout=60,
            ).stdout
        )
        for command in commands
    ]  # fmt: skip


@pytest.mark.parametrize("command", ["replay", "explain", "windows"])
def test_other_kinds_in_a_kubectl_list_are_skipped_and_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    node_class = {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "default"},
        "spec": {"amiSelectorTerms": [{"alias": "al2023@latest"}]},
    }
    items = [*kubectl_objects(), node_class, *sample_items()]
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(cyaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    argv: list[str | Path] = [command, "--cluster", cluster, "--at", AT]
    if command != "windows":
        argv.insert(1, SPOT)
    status, out, err = lifeboat(capsys, *argv)
    assert status == 0, err
    assert out
    # The EC2NodeClass is read (issue 35): the replay's simulated Karpenter finds a
    # NodePool's node class there; only the Secret and the Service are skipped.
    assert err.splitlines() == [
        f"lifeboat: --cluster {cluster}: skipped 2 object(s) Lifeboat does not read: "
        "1 Secret, 1 Service"
    ]


def test_a_multi_document_file_and_a_json_list_read_the_same(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items = sample_items()
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {}}
    documents = tmp_path / "cluster.yaml"
    documents.write_text(cyaml.safe_dump_all([secret, *items]))
    listed = tmp_path / "cluster.json"  # what kubectl get -o json prints
    listed.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    outputs = []
    for cluster in (documents, listed):
        status, out, err = lifeboat(capsys, "replay", SPOT, "--cluster", cluster, "--at", AT)
        assert status == 0, err
        outputs.append(out.replace("general-", "<pool>-"))
    assert outputs[0] == outputs[1]
    assert (
        "skipped 1 object(s) Lifeboat does not read: 1 Secret"
        in lifeboat(capsys, "windows", "--cluster", documents)[2]
    )


@pytest.mark.parametrize("content", ["", "\n\n", "# only a comment\n---\n"])
def test_an_empty_cluster_file_is_a_usage_error_with_a_hint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str
) -> None:
    cluster = tmp_path / "empty.yaml"
    cluster.write_text(content)
    status, out, err = lifeboat(capsys, "replay", SPOT, "--cluster", cluster)
    assert (status, out) == (1, "")
    assert f"--cluster {cluster}: the file holds no Kubernetes objects" in err
    assert (
        "kubectl get nodes,pods,pdb,nodepools,nodeclaims,deployments,replicasets,"
        "statefulsets,daemonsets,replicationcontrollers -A -o yaml"
    ) in err
    assert "Traceback" not in err


def test_a_kubeconfig_given_as_cluster_says_to_use_kubeconfig(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if KUBECTL is None:
        pytest.skip("kubectl is not installed")
    kubeconfig = tmp_path / "config"
    subprocess.run(
        [KUBECTL, "config", "set-cluster", "prod", "--server=https://127.0.0.1:6443",
         "--kubeconfig", str(kubeconfig)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    for command in (["replay", SPOT], ["explain", SPOT], ["windows"]):
        status, out, err = lifeboat(capsys, *command, "--cluster", kubeconfig)
        assert (status, out) == (1, "")
        assert f"--cluster {kubeconfig} is a kubeconfig, not a cluster file" in err
        assert f"pass --kubeconfig {kubeconfig}" in err


def test_a_cluster_file_given_as_kubeconfig_says_to_use_cluster(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, _, err = lifeboat(capsys, "windows", "--kubeconfig", CLUSTER)
    assert status == 1
    assert f"(this looks like a cluster file: pass it as --cluster {CLUSTER})" in err


def _kubeconfig(path: Path, server: str, current: str = "prod") -> Path:
    path.write_text(
        cyaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": {}}],
                "contexts": [
                    {"name": name, "context": {"cluster": "c", "user": "u"}}
                    for name in ("prod", "staging")
                ],
                "current-context": current,
            }
        )
    )
    return path


def test_a_wrong_context_names_it_and_the_contexts_there_are(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 38.4: a wrong --context said "this looks like a cluster file"."""
    kubeconfig = _kubeconfig(tmp_path / "config", "http://127.0.0.1:9")
    status, _, err = lifeboat(capsys, "windows", "--kubeconfig", kubeconfig, "--context", "prdo")
    assert status == 1
    assert (
        f"--kubeconfig {kubeconfig}: --context prdo is not among its contexts: prod, staging"
    ) in err
    assert "cluster file" not in err
    dangling = _kubeconfig(tmp_path / "dangling", "http://127.0.0.1:9", current="gone")
    status, _, err = lifeboat(capsys, "windows", "--kubeconfig", dangling)
    assert "its current-context gone is not among its contexts: prod, staging" in err


def test_an_unreachable_server_names_its_url_and_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 38.4: an unreachable server said "GET /api/v1/nodes: 0 no answer:
    NewConnectionError" with no URL."""
    with socket.socket() as unused:  # a port nothing listens on
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    kubeconfig = _kubeconfig(tmp_path / "config", f"http://127.0.0.1:{port}")
    status, _, err = lifeboat(capsys, "windows", "--kubeconfig", kubeconfig)
    assert status == 1
    assert f"no answer from http://127.0.0.1:{port}: NewConnectionError: " in err
    assert "Connection refused" in err


def test_a_missing_kubeconfig_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope" / "config"
    for command in (["replay", SPOT], ["explain", SPOT], ["windows"]):
        status, out, err = lifeboat(capsys, *command, "--kubeconfig", missing)
        assert (status, out) == (1, "")
        assert err.strip() == f"lifeboat: error: --kubeconfig {missing}: no such file"


def test_a_v1beta1_nodepool_needs_karpenter_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items = sample_items()
    for item in items:
        if item["kind"] in ("NodePool", "NodeClaim"):
            item["apiVersion"] = "karpenter.sh/v1beta1"
    cluster = tmp_path / "old.yaml"
    cluster.write_text(cyaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    status, out, err = lifeboat(capsys, "windows", "--cluster", cluster)
    assert (status, out) == (1, "")
    assert "NodePool general is karpenter.sh/v1beta1" in err
    assert "Karpenter >= 1.0, whose API is karpenter.sh/v1" in err


def test_bad_yaml_names_the_file_and_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = tmp_path / "broken.yaml"
    good = cyaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": sample_items()[:2]})
    # Line 4 of the file: a value where YAML allows none.
    cluster.write_text("apiVersion: v1\nkind: List\nitems:\n- kind: Node: x\n" + good)
    status, out, err = lifeboat(capsys, "replay", SPOT, "--cluster", cluster)
    assert (status, out) == (1, "")
    [message] = err.splitlines()
    # (libyaml says "... in this context", the pure-Python parser "... here")
    assert message.startswith(
        f"lifeboat: error: --cluster {cluster}: not valid YAML at line 4, column 13: "
        "mapping values are not allowed"
    )


def test_the_installed_command_reports_a_bad_cluster_file_in_one_line(tmp_path: Path) -> None:
    command = Path(sys.executable).parent / "lifeboat"
    if not command.exists():
        pytest.skip("lifeboat is not installed")
    cluster = tmp_path / "empty.yaml"
    cluster.write_text("")
    done = subprocess.run(
        [command, "replay", SPOT, "--cluster", cluster],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1
    assert "Traceback" not in done.stderr
