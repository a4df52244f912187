"""A rotation rehearsal at fleet size (issue 35): ``python -m bench.rehearsal --nodes 200``.

What an SRE migrating a node group to Karpenter rehearses: a group of ``--nodes`` nodes
(``eks.amazonaws.com/nodegroup=legacy``), each running two pods of two-replica ReplicaSets
(each ReplicaSet's pods on two neighbouring nodes) guarded by ``maxUnavailable: 1`` PDBs,
and the aws-node DaemonSet; the NodePool and EC2NodeClass ``lifeboat convert`` makes of the
group's settings merged into the file; the request ``lifeboat rotate legacy --node-group
legacy --max-in-flight 2`` writes; then ``lifeboat replay --follow --progress``. The
simulated Karpenter must launch nodes for the evicted pods from the converted pool, and
the rotation must complete. Prints the wall time, the simulated time and the nodes launched.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

AT = "2026-12-01T14:05:00Z"
GROUP = "legacy"
SETTINGS = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: legacy}
data:
  k8s_instance_type: m5.xlarge
  k8s_root_volume_size: '50'
  k8s_max_node_number: '400'
  multi_az_provisioned_workers: 'true'
  asg_launch_type: 'launch_template'
  gpu_enabled: 'false'
"""
DAEMONSET_UID = "7a2b0000-0000-4000-8000-0000000d0001"


def _node(index: int) -> dict[str, Any]:
    name = f"ip-10-1-{index // 250}-{index % 250}.ec2.internal"
    zone = "us-east-1" + "abc"[index % 3]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": f"0b7e6a1c-0000-4000-8000-{index:012d}",
            "creationTimestamp": f"2025-03-10T09:{index // 60 % 60:02d}:{index % 60:02d}Z",
            "labels": {
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/os": "linux",
                "kubernetes.io/hostname": name,
                "node.kubernetes.io/instance-type": "m5.xlarge",
                "topology.kubernetes.io/zone": zone,
                "eks.amazonaws.com/nodegroup": GROUP,
            },
        },
        "spec": {"providerID": f"aws:///{zone}/i-0{index:016x}"},
        "status": {
            "allocatable": {"cpu": "3920m", "memory": "14400Mi", "pods": "58"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
        },
    }


def _pod(name: str, node: str, owner: dict[str, Any], labels: dict[str, str]) -> dict[str, Any]:
    cpu, memory = ("50m", "64Mi") if owner["kind"] == "DaemonSet" else ("1", "2Gi")
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "shop" if owner["kind"] != "DaemonSet" else "kube-system",
            "labels": labels,
            "ownerReferences": [{**owner, "controller": True}],
        },
        "spec": {
            "nodeName": node,
            "containers": [
                {"name": "app", "resources": {"requests": {"cpu": cpu, "memory": memory}}}
            ],
        },
        "status": {
            "phase": "Running",
            "startTime": "2026-12-01T09:00:00Z",
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _workload(index: int, nodes: list[str]) -> list[dict[str, Any]]:
    """ReplicaSet web<index> (2 replicas, on nodes index and index + 1) and its PDB."""
    name, uid = f"web{index}", f"7a2b0000-0000-4000-8000-{index:012d}"
    labels = {"app": name}
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": name, "uid": uid}
    replica_set = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": "shop", "uid": uid, "labels": labels},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "app"}]}},
        },
    }
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": "shop"},
        "spec": {"selector": {"matchLabels": labels}, "maxUnavailable": 1},
    }
    pods = [
        _pod(f"{name}-{suffix}", nodes[(index + offset) % len(nodes)], owner, labels)
        for offset, suffix in ((0, "a0001"), (1, "b0002"))
    ]
    return [replica_set, pdb, *pods]


def converted(folder: Path) -> list[dict[str, Any]]:
    """What ``lifeboat convert --settings`` prints for the group's settings: its NodePool
    and EC2NodeClass."""
    settings = folder / "legacy-settings.yaml"
    settings.write_text(SETTINGS)
    # The settings form names no AMI: pinned to a release, as a node group's never changes.
    command = [
        *(sys.executable, "-m", "lifeboat_local.cli", "convert", "--settings", str(settings)),
        *("--ami-alias", "al2023@v20241121"),
    ]
    run = subprocess.run(command, capture_output=True, text=True, check=True)
    return list(yaml.safe_load(run.stdout)["items"])


def rehearsal_cluster(count: int, pools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The node group, its workloads, and ``pools`` (what ``lifeboat convert`` made of it)."""
    machines = [_node(i) for i in range(count)]
    names = [m["metadata"]["name"] for m in machines]
    daemon = {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "aws-node"}
    daemon_owner = {**daemon, "uid": DAEMONSET_UID}
    objects: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "lifeboat"}},
        *machines,
    ]
    for index, node in enumerate(names):
        objects.append(_pod(f"aws-node-{index:05d}", node, daemon_owner, {"k8s-app": "aws-node"}))
    for index in range(count):
        objects += _workload(index, names)
    return objects + pools


def request_event(max_in_flight: int) -> dict[str, Any]:
    """What ``lifeboat rotate legacy --node-group legacy --max-in-flight N --out`` writes."""
    return {
        "version": "0",
        "id": "0f6b2c1e-9a8d-4c3b-8e7f-6a5d4c3b2a10",
        "detail-type": "Lifeboat Rotation Requested",
        "source": "lifeboat",
        "time": AT,
        "resources": [],
        "detail": {
            "rotation": GROUP,
            "uid": "0f6b2c1e-9a8d-4c3b-8e7f-6a5d4c3b2a10",
            "selector": {"labels": {"eks.amazonaws.com/nodegroup": GROUP}},
            "maxInFlight": max_in_flight,
            "healthGate": {"timeoutSeconds": 600},
        },
    }


def write(folder: Path, count: int, max_in_flight: int) -> tuple[Path, Path]:
    cluster, event = folder / "cluster.yaml", folder / "rotate.json"
    items = rehearsal_cluster(count, converted(folder))
    cluster.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    event.write_text(json.dumps(request_event(max_in_flight)))
    return cluster, event


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.rehearsal", description=__doc__)
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--max-in-flight", type=int, default=2)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        cluster, event = write(Path(folder), args.nodes, args.max_in_flight)
        state = Path(folder) / "after.yaml"
        command = [sys.executable, "-m", "lifeboat_local.cli", "replay", str(event)]
        command += ["--cluster", str(cluster), "--at", AT, "--follow", "--progress"]
        command += ["--state-out", str(state)]
        started = time.perf_counter()
        run = subprocess.run(command, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - started
        status = subprocess.run(
            [sys.executable, "-m", "lifeboat_local.cli", "status", "--cluster", str(state)],
            capture_output=True,
            text=True,
            check=False,
        )
    launched = run.stdout.count(" provisioned ")
    print(f"replay exit {run.returncode} in {wall:.1f} s; status exit {status.returncode}")
    print(status.stdout.splitlines()[0] if status.stdout else status.stderr)
    print(f"claims provisioned by the simulated Karpenter: {launched}")
    print("last progress line:", (run.stderr.strip().splitlines() or ["(none)"])[-1])
    return 0 if run.returncode == 0 and status.returncode == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
