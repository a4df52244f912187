"""Issue 22, item 1-2: voluntary work only where a replacement can launch, through
``lifeboat replay --json`` on cluster files shaped as a live cluster (events/cluster.yaml and
variants of it), and the handler on the emulator.

Karpenter's own voluntary disruption keeps a node it cannot replace: ``Provisioner.NewScheduler``
(pkg/controllers/provisioning/provisioner.go) leaves out NodePools that are static, being
deleted or not Ready (the readiness controller sets Ready False when the node class is not
Ready, ``NodeClassReady``), and ``Provisioner.Create`` refuses a claim once
``Spec.Limits.ExceededBy(cluster.NodePoolResourcesFor(pool))``, a usage summed from the pool's
NodeClaims and Nodes (``Cluster.updateNodePoolResources``, pkg/controllers/state/cluster.go),
not from ``status.resources``. Lifeboat's voluntary kinds keep the old claim likewise;
involuntary kinds still hand the node over (the instance goes anyway).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kubemu import Emulator, load_cluster_file
from lifeboat.flow.pipeline import OneCluster, Pipeline
from lifeboat.kube import nodes
from lifeboat.kube.client import KubeApi, RetryPolicy
from lifeboat.marks import node_marks
from lifeboat.model.instances import InstanceInfo, StaticInstanceDirectory
from lifeboat.model.ledger import MemoryLedger
from lifeboat.model.settings import Settings
from lifeboat.runtime.handler import handle_batch
from tests.support import kube
from tests.support.events import sample, sqs_batch
from tests.support.nodeclaim_crd import crd_problems
from tests.support.replaying import (
    EVENING,
    IN_WINDOW,
    Obj,
    find,
    of_kind,
    rebalance_event,
    replay,
    sample_cluster,
    save,
    spot_event,
    types,
)

INSTANCE, CLAIM = "i-0a1b2c3d4e5f60002", "general-b4wpl"


def _general_not_ready(objects: list[Obj]) -> None:
    """As Karpenter's NodePool readiness controller writes it when the EC2NodeClass is not
    Ready (pkg/controllers/nodepool/readiness)."""
    pool = find(objects, "NodePool", "general")
    for condition in pool["status"]["conditions"]:
        if condition["type"] in ("NodeClassReady", "Ready"):
            condition["status"] = "False"
            condition["reason"] = "NodeClassNotReady"
            condition["message"] = "EC2NodeClass default is not Ready"


def _rebalance(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, objects: list[Obj]
) -> tuple[dict[str, Any], list[Obj]]:
    cluster = save(objects, tmp_path / "cluster.yaml")
    state = tmp_path / "after.yaml"
    (line,) = replay(
        capsys,
        rebalance_event(tmp_path, INSTANCE),
        "--cluster",
        cluster,
        "--at",
        EVENING,
        "--state-out",
        state,
    )
    return line, load_cluster_file(state)


def _claim_kept(after: list[Obj]) -> bool:
    return not find(after, "NodeClaim", CLAIM)["metadata"].get("deletionTimestamp")


def _replacements(after: list[Obj]) -> list[Obj]:
    return [
        c for c in of_kind(after, "NodeClaim") if node_marks.REPLACES_LABEL in nodes.labels_of(c)
    ]


def test_rebalance_on_a_pool_whose_node_class_is_not_ready_keeps_the_claim(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``Provisioner.NewScheduler``: a NodePool not Ready is left out, so nothing could land
    the drained pods. The rebalance is deferred, the old claim kept, the reason names it."""
    objects = sample_cluster()
    _general_not_ready(objects)
    line, after = _rebalance(capsys, tmp_path, objects)
    assert line["outcome"] == "deferred"
    assert "delete-nodeclaim" not in types(line)
    assert "create-nodeclaim" not in types(line)
    assert (
        "NodePool general is not Ready: NodeClassReady False, NodeClassNotReady" in (line["reason"])
    )
    assert f"NodeClaim {CLAIM} kept" in line["reason"]
    assert _claim_kept(after) and _replacements(after) == []


def test_spot_interruption_on_a_pool_not_ready_still_hands_the_node_over(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Involuntary kinds are unchanged: the instance goes in two minutes whatever Lifeboat
    does, so the claim is deleted (Karpenter's interruption controller does the same)."""
    objects = sample_cluster()
    _general_not_ready(objects)
    cluster = save(objects, tmp_path / "cluster.yaml")
    (line,) = replay(
        capsys,
        spot_event(tmp_path, INSTANCE, "2026-12-01T14:02:00Z"),
        "--cluster",
        cluster,
        "--at",
        IN_WINDOW,
    )
    assert line["outcome"] == "acted"
    assert types(line)[-1] == "delete-nodeclaim"
    assert "no replacement: NodePool general is not Ready" in line["reason"]


def test_limits_are_counted_from_the_claims_without_nodepool_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``Cluster.updateNodePoolResources``: the usage is the capacity of the pool's state
    nodes (2 cpu and one ``nodes`` each for general's six), with no ``status.resources``.
    Room left: the rebalance acts and makes its replacement. At ``limits.nodes: 5`` the
    pool is past its limit (``Limits.ExceededBy``): deferred, claim kept."""
    objects = sample_cluster()
    general = find(objects, "NodePool", "general")
    del general["status"]  # a pool Karpenter never counted, or a hand-written file
    general["spec"]["limits"] = {"cpu": "13", "nodes": "6"}
    (tmp_path / "room").mkdir()
    (tmp_path / "full").mkdir()
    line, after = _rebalance(capsys, tmp_path / "room", objects)
    assert line["outcome"] == "acted"
    assert types(line)[-2:] == ["create-nodeclaim", "delete-nodeclaim"]
    assert len(_replacements(after)) == 1

    general["spec"]["limits"] = {"cpu": "13", "nodes": "5"}
    line, after = _rebalance(capsys, tmp_path / "full", objects)
    assert line["outcome"] == "deferred"
    assert "NodePool general is past its limit nodes: 6 used of 5" in line["reason"]
    assert _claim_kept(after) and _replacements(after) == []


def test_rebalance_on_a_static_pool_is_let_go_and_the_claim_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Static pools are never in ``NewScheduler``'s list: no replacement can ever come from
    Lifeboat, so the voluntary notice is let go (as one whose window never opens)."""
    objects = sample_cluster()
    batch = find(objects, "NodePool", "general")
    batch["spec"]["replicas"] = 6
    batch["spec"]["limits"] = {"nodes": "8"}
    line, after = _rebalance(capsys, tmp_path, objects)
    assert line["outcome"] == "ignored"
    assert "no replacement can launch: NodePool general is static" in line["reason"]
    assert "giving up" in line["reason"]
    assert _claim_kept(after)


# -- the handler on the emulator: a replacement the API server refuses ----------------------

NOW = datetime(2026, 12, 5, 10, 0, tzinfo=UTC)  # a Saturday: general's budget allows one
NODE = "ip-10-0-1-12.ec2.internal"


def _emulated_pool() -> list[dict[str, Any]]:
    pool = kube.nodepool(uid="pool-uid", requirements=[], budgets=[{"nodes": "50%"}])
    objects: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "lifeboat"}},
        pool,
    ]
    for index, (claim_name, node_name, instance) in enumerate(
        [
            (CLAIM, NODE, INSTANCE),
            ("general-other", "ip-10-0-1-13.ec2.internal", "i-0a1b2c3d4e5f60003"),
        ]
    ):
        claim, node = kube.nodeclaim_and_node(
            name=claim_name,
            uid=f"claim-uid-{index}",
            instance_id=instance,
            node_name=node_name,
            nodepool_uid="pool-uid",
        )
        objects += [claim, node]
    return objects


def test_a_refused_replacement_keeps_the_old_claim_of_a_voluntary_notice() -> None:
    """The API server refuses the replacement (403, e.g. an admission policy): the old claim
    of a rebalance is kept (deleting it would leave its pods nowhere to go), the notice is
    deferred and looked at again; nothing is deleted."""
    event = sample("rebalance-recommendation")
    event["detail"]["instance-id"] = INSTANCE
    event["time"] = "2026-12-05T09:59:00Z"
    info = InstanceInfo(INSTANCE, node_name=NODE, nodeclaim=CLAIM, nodepool="general")
    with Emulator(_emulated_pool()) as emu:
        emu.fail_next(403, times=1, verb="create", resource="nodeclaims")
        api = KubeApi(emu.api_client(), RetryPolicy(attempts=1))
        pipeline = Pipeline(
            clusters=OneCluster(api),
            directory=StaticInstanceDirectory([info]),
            settings=Settings(),
            clock=lambda: NOW,
            ledger=MemoryLedger(),
        )
        response = handle_batch(sqs_batch(event), None, pipeline)
        assert response["batchItemFailures"] == []
        claim = next(c for c in emu.objects("NodeClaim") if nodes.name_of(c) == CLAIM)
        assert not claim["metadata"].get("deletionTimestamp")
        assert not any(entry[0] == "delete" for entry in emu.request_log)
        # Recorded as a Kubernetes Event on the node: deferred, with the refusal named.
        (event,) = [e for e in emu.objects("Event") if e["involvedObject"]["name"] == NODE]
        assert "replacement not created (refused by the API server: 403" in event["message"]
        assert "NodeClaim kept" in event["message"]


# -- item 3: the reclaimed capacity reservation -----------------------------------------------

RESERVED_INSTANCE, RESERVED_CLAIM = "i-0a1b2c3d4e5f60007", "general-n5sjx"
RESERVATION_ID = "karpenter.k8s.aws/capacity-reservation-id"


def _reservation_event(tmp_path: Path) -> Path:
    event = sample("capacity-reservation-interruption")
    path = tmp_path / "reservation.json"
    path.write_text(json.dumps(event))
    return path


def test_a_reservation_interruptions_replacement_excludes_the_reclaimed_reservation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``InterruptionHandler.markUnavailableOfferings`` (karpenter-provider-aws,
    pkg/controllers/interruption) marks the claim's reservation unavailable
    (``capacityReservationProvider.MarkUnavailable``): the replacement says ``NotIn`` it,
    which on-demand, Spot and other reservations still satisfy; the CRD accepts it."""
    state = tmp_path / "after.yaml"
    (line,) = replay(
        capsys,
        _reservation_event(tmp_path),
        "--cluster",
        save(sample_cluster(), tmp_path / "cluster.yaml"),
        "--at",
        IN_WINDOW,
        "--state-out",
        state,
    )
    assert line["outcome"] == "acted"
    assert types(line)[-2:] == ["create-nodeclaim", "delete-nodeclaim"]
    (replacement,) = _replacements(load_cluster_file(state))
    assert crd_problems(replacement) == []
    reservation = [r for r in replacement["spec"]["requirements"] if r["key"] == RESERVATION_ID]
    assert reservation == [
        {"key": RESERVATION_ID, "operator": "NotIn", "values": ["cr-0a1b2c3d4e5f60007"]}
    ]


def test_a_pool_allowing_only_the_reclaimed_reservation_gets_no_replacement(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Excluding the reservation leaves no valid claim: none is made, the action says so,
    and the involuntary rule holds (the instance goes anyway: the old claim is deleted)."""
    objects = sample_cluster()
    find(objects, "NodePool", "general")["spec"]["template"]["spec"]["requirements"].append(
        {"key": RESERVATION_ID, "operator": "In", "values": ["cr-0a1b2c3d4e5f60007"]}
    )
    state = tmp_path / "after.yaml"
    (line,) = replay(
        capsys,
        _reservation_event(tmp_path),
        "--cluster",
        save(objects, tmp_path / "cluster.yaml"),
        "--at",
        IN_WINDOW,
        "--state-out",
        state,
    )
    assert line["outcome"] == "acted"
    created = next(a for a in line["actions"] if a["type"] == "create-nodeclaim")
    assert created["name"] is None
    assert (
        "yields no valid NodeClaim without the reclaimed capacity reservation" in (created["error"])
    )
    assert types(line)[-1] == "delete-nodeclaim"
    after = load_cluster_file(state)
    assert _replacements(after) == []
    assert find(after, "NodeClaim", RESERVED_CLAIM)["metadata"].get("deletionTimestamp")
