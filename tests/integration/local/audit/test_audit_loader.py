"""``audit`` reads a cluster file through the loader ``replay`` and ``explain`` use: the same
kinds kept and skipped, the same refusals, and the same words on stderr for what loading found
(a PDB whose pods' controllers are missing and what is assumed instead).

The disruption controller (``pkg/controller/disruption/disruption.go``, ``finders()``) finds
a pod's scale through its ReplicaSet (or Deployment), its ReplicationController, its
StatefulSet, then any scale subresource: a file's ReplicationController counts for every tool.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lifeboat_local.cli import main
from tests.support import cyaml
from tests.support.paths import EVENTS

Obj = dict[str, Any]
SPOT = EVENTS / "spot-interruption.json"
AT = "2026-12-01T18:00:00Z"


def lifeboat(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    try:
        status = main([str(a) for a in argv])
    except SystemExit as exited:  # argparse's usage errors
        status = int(exited.code or 0)
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def _pod(name: str, owner: Obj | None) -> Obj:
    metadata: Obj = {"name": name, "namespace": "shop", "labels": {"app": "web"}}
    if owner is not None:
        metadata["ownerReferences"] = [{**owner, "controller": True}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"nodeName": "n1", "containers": [{"name": "web", "image": "web"}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }


def _cluster(tmp_path: Path, owner_kind: str, *, with_owner: bool) -> Path:
    """A node, two pods of one controller under a maxUnavailable PDB with its exported status,
    a Service (a kind no tool reads); the controller itself only ``with_owner``."""
    api_version = "v1" if owner_kind == "ReplicationController" else "apps/v1"
    owner: Obj = {"apiVersion": api_version, "kind": owner_kind, "name": "web", "uid": "u-web"}
    items: list[Obj] = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}},
        _pod("web-a", owner),
        _pod("web-b", owner),
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}},
            "status": {"expectedPods": 2, "disruptionsAllowed": 1, "currentHealthy": 2},
        },
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "shop"}},
    ]
    if with_owner:
        items.append(
            {
                "apiVersion": api_version,
                "kind": owner_kind,
                "metadata": {"name": "web", "namespace": "shop", "uid": "u-web"},
                "spec": {"replicas": 2, "selector": {"app": "web"}},
            }
        )
    path = tmp_path / f"{owner_kind}-{with_owner}.yaml"
    path.write_text(cyaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    return path


def _load_lines(err: str) -> list[str]:
    """What loading the file said: the skipped kinds, warnings and assumptions."""
    return [line for line in err.splitlines() if "--cluster" in line or "PDB " in line]


def _audit(capsys: pytest.CaptureFixture[str], cluster: Path) -> tuple[Obj, str]:
    status, out, err = lifeboat(capsys, "audit", "--cluster", cluster, "--at", AT, "--json")
    assert status in (0, 3), err
    document: Obj = json.loads(out)
    return document, err


def _replay_err(capsys: pytest.CaptureFixture[str], cluster: Path) -> str:
    status, _, err = lifeboat(capsys, "replay", SPOT, "--cluster", cluster, "--at", AT)
    assert status in (0, 2), err
    return err


def test_a_pdb_missing_its_controllers_is_said_alike_by_audit_and_replay(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    cluster = _cluster(tmp_path, "ReplicaSet", with_owner=False)
    document, audit_err = _audit(capsys, cluster)
    replay_err = _replay_err(capsys, cluster)
    said = _load_lines(audit_err)
    assert said == _load_lines(replay_err)
    assert any(
        "PDB shop/web: its pods' controller(s) ReplicaSet shop/web not among the objects read"
        in line
        and "expectedPods 2, disruptionsAllowed 1" in line
        for line in said
    ), said
    assert any("skipped 1 object(s) Lifeboat does not read: 1 Service" in s for s in said)
    # The report keeps its own note of what it did not audit, as before.
    assert "not audited: 1 v1/Service" in document["notes"]


def test_a_complete_file_says_nothing_of_controllers_to_either_tool(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    cluster = _cluster(tmp_path, "ReplicaSet", with_owner=True)
    _, audit_err = _audit(capsys, cluster)
    replay_err = _replay_err(capsys, cluster)
    assert _load_lines(audit_err) == _load_lines(replay_err)
    assert not any("PDB " in line for line in _load_lines(audit_err))


def test_replication_controllers_are_read_by_every_tool(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """getPodReplicationController: the RC's scale counts; nothing is missing or assumed."""
    cluster = _cluster(tmp_path, "ReplicationController", with_owner=True)
    document, audit_err = _audit(capsys, cluster)
    replay_err = _replay_err(capsys, cluster)
    assert _load_lines(audit_err) == _load_lines(replay_err)
    assert not any("PDB " in line or "ReplicationController" in line for line in audit_err)
    assert not any("ReplicationController" in note for note in document["notes"])
    # Without it, both say it is missing.
    bare = _cluster(tmp_path, "ReplicationController", with_owner=False)
    _, audit_err = _audit(capsys, bare)
    assert _load_lines(audit_err) == _load_lines(_replay_err(capsys, bare))
    assert "ReplicationController shop/web not among the objects read" in audit_err


def test_a_file_replay_refuses_audit_refuses_in_the_same_words(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    cluster = tmp_path / "bad.yaml"
    cluster.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: shop}\n")
    status, out, audit_err = lifeboat(capsys, "audit", "--cluster", cluster, "--at", AT)
    assert (status, out) == (1, "")
    replay_status, _, replay_err = lifeboat(capsys, "replay", SPOT, "--cluster", cluster)
    assert replay_status == 1
    assert "Pod 'p' is missing spec.containers" in audit_err
    assert audit_err == replay_err
