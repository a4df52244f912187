"""Facts are taken from what a node cannot write (issue 23.3): the NodePool whose budgets
apply, and whose template a replacement gets, is the owning NodeClaim's (matched to the
instance by ``status.providerID``), never the Node's own ``karpenter.sh/nodepool`` label,
which anyone who may patch Nodes (or the node's kubelet) can change. A Node whose label
disagrees is reported and judged by its claim.

Karpenter itself reads the pool from the claim: ``NodeClaim.Labels[karpenter.sh/nodepool]``
is set from the NodePool's template when the claim is made (``pkg/controllers/provisioning/
scheduling/nodeclaim.go``), and disruption budgets count NodeClaims by that label.

Through the pipeline, the official client over HTTP and the emulator loaded with the sample
cluster.
"""

from __future__ import annotations

import copy
import operator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

from kubemu import Emulator, load_cluster_file
from lifeboat.flow.pipeline import OneCluster, Pipeline
from lifeboat.kube.client import KubeApi, RetryPolicy
from lifeboat.model.ledger import MemoryLedger
from lifeboat.model.settings import Settings
from lifeboat.wakeup.codec import MemoryWakeups
from lifeboat_local.directory import directory_from_objects

ROOT = Path(__file__).resolve().parents[3]
EVENTS = ROOT / "events"
OBJECTS = load_cluster_file(EVENTS / "cluster.yaml")
# 14:05 UTC on a Tuesday: general's "0 during working hours" budget is not in force.
NOW = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)
REBALANCE = (EVENTS / "rebalance-recommendation.json").read_text()
NODE = "ip-10-0-1-12.ec2.internal"  # i-0a1b2c3d4e5f60002, NodePool general
BUSY = "ip-10-0-1-11.ec2.internal"  # another node of general


def _objects(general_budget: str, node_label: str | None) -> list[dict[str, Any]]:
    objects = copy.deepcopy(OBJECTS)
    for obj in objects:
        name = obj["metadata"]["name"]
        if obj["kind"] == "NodePool" and name == "general":
            obj["spec"]["disruption"]["budgets"] = [{"nodes": general_budget}]
        if obj["kind"] == "Node" and name == NODE and node_label is not None:
            obj["metadata"]["labels"]["karpenter.sh/nodepool"] = node_label
    return objects


def _pipeline(emu: Emulator, objects: list[dict[str, Any]]) -> Pipeline:
    return Pipeline(
        clusters=OneCluster(KubeApi(emu.api_client(), RetryPolicy(attempts=2, base_delay=0.01))),
        directory=directory_from_objects(objects),
        settings=Settings(),
        clock=lambda: NOW,
        wakeups=MemoryWakeups(),
        ledger=MemoryLedger(),
        workers=4,
    )


def _claims(emu: Emulator) -> list[dict[str, Any]]:
    return list(emu.objects("NodeClaim"))


def test_a_relabelled_node_does_not_escape_its_claims_pool_budget() -> None:
    """Regression: the Node relabelled karpenter.sh/nodepool=batch (budget 1) was judged by
    batch and replaced from batch's template, although its claim's pool general allows 0."""
    objects = _objects(general_budget="0", node_label="batch")
    with Emulator(objects) as emu:
        before = {c["metadata"]["name"] for c in _claims(emu)}
        [result] = _pipeline(emu, objects).process([REBALANCE])
        [report] = result.reports
        assert report.nodepool == "general"
        assert report.outcome == "ignored", report.reason  # no window opens: given up
        assert "NodePool general budget" in report.reason
        assert "karpenter.sh/nodepool=batch disagrees" in report.reason
        assert "NodePool general" in report.reason
        assert {c["metadata"]["name"] for c in _claims(emu)} == before
        node = emu.get_object("Node", NODE)
        assert node is not None and not node["spec"].get("unschedulable")


def test_a_relabelled_node_is_replaced_from_its_claims_pool_template() -> None:
    """Where the claim's pool allows it, the replacement is made from that pool's template
    (general), not the pool the Node's label names."""
    objects = _objects(general_budget="20%", node_label="batch")
    with Emulator(objects) as emu:
        before = {c["metadata"]["name"] for c in _claims(emu)}
        [result] = _pipeline(emu, objects).process([REBALANCE])
        [report] = result.reports
        assert report.outcome == "acted", report.reason
        assert "disagrees" in report.reason
        made = [c for c in _claims(emu) if c["metadata"]["name"] not in before]
        assert made, report.reason
        assert {c["metadata"]["labels"]["karpenter.sh/nodepool"] for c in made} == {"general"}


def test_a_node_whose_label_agrees_is_reported_as_before() -> None:
    objects = _objects(general_budget="20%", node_label=None)
    with Emulator(objects) as emu:
        [result] = _pipeline(emu, objects).process([REBALANCE])
        [report] = result.reports
        assert report.outcome == "acted"
        assert report.nodepool == "general"
        assert "disagrees" not in report.reason


def test_an_owner_reference_to_another_instances_claim_is_not_trusted() -> None:
    """A Node whose ownerReference was pointed at a claim of another instance: that claim is
    not this node's (its providerID says so), so it is neither deleted nor read for the
    pool (here EC2's tag, read from the same objects, names it too, so the node is handled as
    one without a claim: cordoned and drained)."""
    objects = copy.deepcopy(OBJECTS)
    claims = {o["metadata"]["name"]: o for o in objects if o["kind"] == "NodeClaim"}
    node = next(o for o in objects if o["kind"] == "Node" and o["metadata"]["name"] == NODE)
    [own] = [r for r in node["metadata"]["ownerReferences"] if r["kind"] == "NodeClaim"]
    mine = own["name"]
    other = next(
        c
        for n, c in claims.items()
        if n != mine and c["metadata"]["labels"]["karpenter.sh/nodepool"] == "batch"
    )
    own.update(name=other["metadata"]["name"], uid=other["metadata"]["uid"])
    with Emulator(objects) as emu:
        before = {c["metadata"]["name"] for c in _claims(emu)}
        [result] = _pipeline(emu, objects).process([REBALANCE])
        [report] = result.reports
        made = [c for c in _claims(emu) if c["metadata"]["name"] not in before]
        replaced = {c["metadata"]["labels"]["lifeboat.dev/replaces"] for c in made}
        assert other["metadata"]["name"] not in replaced, report.reason
        assert replaced <= {mine}
        left = emu.get_object("NodeClaim", other["metadata"]["name"])
        assert left is not None and "deletionTimestamp" not in left["metadata"]


def test_a_node_deleted_between_read_and_patch_is_gone_not_a_failure() -> None:
    """Regression (issue 23.5): the PATCH's 404 failed the message (retried until the DLQ).
    A node deleted after it was read is gone: nothing to cordon, replace or drain."""
    objects = _objects(general_budget="20%", node_label=None)
    with Emulator(objects) as emu:
        before = {c["metadata"]["name"] for c in _claims(emu)}
        emu.fail_next(404, verb="patch", resource="nodes")
        [result] = _pipeline(emu, objects).process([REBALANCE])
        [report] = result.reports
        assert report.outcome == "acted", report.reason
        assert f"node {NODE} is gone" in report.reason
        assert {c["metadata"]["name"] for c in _claims(emu)} == before
        assert emu.requests_by_resource[("create", "nodeclaims")] == 0


def test_a_squatted_replacement_name_is_not_taken_for_the_replacement() -> None:
    """Regression (issue 23.5): the replacement's name was a 40-bit hash of the old claim's
    name; a claim made under that name (a collision found in seconds) was taken for the
    replacement on the 409, and the old claim got none. The name now comes from the old
    claim's uid (80 bits), and a 409 counts only if the claim there replaces this one."""
    from lifeboat.karpenter.replacement import replacement_name

    objects = _objects(general_budget="20%", node_label=None)
    node = next(o for o in objects if o["kind"] == "Node" and o["metadata"]["name"] == NODE)
    [own] = [r for r in node["metadata"]["ownerReferences"] if r["kind"] == "NodeClaim"]
    claim = next(
        o for o in objects if o["kind"] == "NodeClaim" and o["metadata"]["name"] == own["name"]
    )
    squatter = copy.deepcopy(claim)
    squatter["metadata"] = {
        "name": replacement_name("general", own["name"], own["uid"]),
        "labels": {**claim["metadata"]["labels"], "lifeboat.dev/replaces": "someone-else"},
    }
    squatter.pop("status", None)
    objects.append(squatter)
    with Emulator(objects) as emu:
        [result] = _pipeline(emu, objects).process([REBALANCE])
        [report] = result.reports
        assert f"is not the replacement of {own['name']}" in report.reason, report.reason
        replacing = [
            c
            for c in _claims(emu)
            if c["metadata"]["labels"].get("lifeboat.dev/replaces") == own["name"]
        ]
        assert replacing == []


def test_a_decide_wake_up_delivered_twice_schedules_one_next_wake_up() -> None:
    """Regression (issue 23.5): a DECIDE wake-up delivered twice, one second apart, timed
    its next look from the clock, so the chain forked (two schedule names). What follows a
    wake-up is timed from its due time."""

    from lifeboat.aws.scheduler import schedule_name
    from lifeboat.events import parse_message
    from lifeboat.wakeup.codec import Task, Wakeup, encode

    # A budget of 1 that another node of the pool holds: "waiting for disrupting nodes to
    # finish", looked at again after RECHECK_INTERVAL.
    objects = _objects(general_budget="1", node_label=None)
    busy = next(o for o in objects if o["kind"] == "Node" and o["metadata"]["name"] == BUSY)
    busy["spec"]["taints"] = [{"key": "lifeboat.dev/spot-interruption", "effect": "NoSchedule"}]
    [notice] = parse_message(REBALANCE, received_at=NOW)
    due = NOW + timedelta(minutes=5)
    body = encode(Wakeup(Task.DECIDE, notice, due))
    names: set[str] = set()
    with Emulator(objects) as emu:
        for delay in (timedelta(0), timedelta(seconds=1)):
            wakeups = MemoryWakeups()
            clock = partial(operator.add, due, delay)  # due + delay, each delivery its own
            pipeline = replace(_pipeline(emu, objects), wakeups=wakeups, clock=clock)
            [result] = pipeline.process([body])
            [report] = result.reports
            assert report.outcome == "deferred", report.reason
            names |= {schedule_name(w) for w in wakeups.pending.values()}
    assert len(names) == 1, names
