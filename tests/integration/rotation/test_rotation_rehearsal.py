"""Issue 35, item 2: rehearsals at fleet size. A node group with two-replica ReplicaSets and
``maxUnavailable: 1`` PDBs, converted with ``lifeboat convert`` (its NodePool and
EC2NodeClass merged into the file), rotated two at a time with ``replay --follow``.

Before, the simulated Karpenter launched only in the pool an evicted pod's node belonged to:
a node group's pods have none, so it launched nothing, two pods stayed Pending and the
rotation failed blaming a PDB. Now it provisions as Karpenter's provisioner does
(``Provisioner.NewScheduler``: every Ready pool, by weight; ``Scheduler.addToNewNodeClaim``:
taints, requirements, instance types, limits), and where no pool takes a pod it says so.
The 200-node measure is ``python -m bench.rehearsal`` (a test stays small)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from bench.rehearsal import AT, converted, rehearsal_cluster, request_event
from kubemu import load_cluster_file
from lifeboat.kube import nodes
from tests.conftest import CliRun
from tests.support import cyaml

NODES = 8


def _write(folder: Path, *, class_ref: str = "legacy") -> tuple[Path, Path]:
    pools = converted(folder)
    for pool in pools:
        if pool["kind"] == "NodePool":
            pool["spec"]["template"]["spec"]["nodeClassRef"]["name"] = class_ref
    cluster, event = folder / "cluster.yaml", folder / "rotate.json"
    items = rehearsal_cluster(NODES, pools)
    cluster.write_text(cyaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    event.write_text(json.dumps(request_event(2)))
    return cluster, event


def test_a_converted_group_rehearsal_completes_on_nodes_of_the_converted_pool(
    cli: Callable[..., CliRun], tmp_path: Path
) -> None:
    cluster, event = _write(tmp_path)
    state = tmp_path / "after.yaml"
    args = ["--cluster", cluster, "--at", AT, "--follow", "--state-out", state]
    run = cli("replay", event, *args, "--json", "--progress")
    assert run.code == 0, run.err
    # --json unchanged: every stdout line one record; the progress went to stderr.
    assert all(json.loads(line)["kind"] for line in run.out.splitlines())
    assert "replay: simulated 2026-12-01T14:" in run.err
    assert f"rotation legacy completed: {NODES} of {NODES} node(s) done" in run.err
    status = cli("status", "--cluster", state)
    assert status.code == 0, status.out
    assert status.out.startswith(f"rotation legacy: completed ({NODES} of {NODES} node(s)")
    after = load_cluster_file(state)
    claims = [o for o in after if o["kind"] == "NodeClaim"]
    assert claims and all(nodes.labels_of(c)[nodes.NODEPOOL_LABEL] == "legacy" for c in claims)
    # The converted pool names m5.xlarge: what was launched.
    assert {nodes.labels_of(c)[nodes.INSTANCE_TYPE_LABEL] for c in claims} == {"m5.xlarge"}
    # The drained group nodes stay, cordoned, until the group is scaled down.
    group = [
        o
        for o in after
        if o["kind"] == "Node" and "eks.amazonaws.com/nodegroup" in nodes.labels_of(o)
    ]
    assert len(group) == NODES and all(n["spec"].get("unschedulable") for n in group)


def test_pods_no_pool_takes_are_named_with_why_not_a_pdb_blamed(
    cli: Callable[..., CliRun], tmp_path: Path
) -> None:
    """The NodePool names an EC2NodeClass the file lacks (a typo): Karpenter leaves a pool
    that is not Ready out (``Provisioner.NewScheduler``). The timeline names the pods and
    the reason, and the rotation's verdict says its pods cannot be placed, not only "PDB
    ... allows no disruption"."""
    cluster, event = _write(tmp_path, class_ref="legacy-nodes")
    state = tmp_path / "after.yaml"
    run = cli(
        "replay",
        event,
        "--cluster",
        cluster,
        "--at",
        AT,
        "--follow",
        "--wide",
        "--state-out",
        state,
    )
    lines = [line for line in run.out.splitlines() if "unschedulable" in line]
    assert lines, run.out
    assert "fits no node, and no NodePool takes it: NodePool legacy: is not Ready" in lines[0]
    assert "EC2NodeClass 'legacy-nodes' not found" in lines[0]
    status = cli("status", "--cluster", state)
    first = status.out.splitlines()[0]
    assert status.code != 0 and "failed" in first
    assert "cannot be placed: shop/web" in first
    assert "Pending (Unschedulable: Karpenter: no NodePool can launch a node for it" in first
    assert "EC2NodeClass 'legacy-nodes' not found" in first
