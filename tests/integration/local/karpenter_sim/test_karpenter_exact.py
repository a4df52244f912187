"""Issue 11, "Karpenter-exact", point by point, through ``lifeboat replay --json`` on cluster
files shaped as a live Karpenter cluster looks (events/cluster.yaml and variants of it).

Each test names the Karpenter function or rule it was checked against (kubernetes-sigs/
karpenter v1, aws/karpenter-provider-aws). Every NodeClaim a scenario creates is checked
against the NodeClaim CRD's validation rules (``nodeclaim_crd``): a live API server would
have answered 422 to one that breaks them.
"""

from __future__ import annotations

import functools
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

import kubemu
from kubemu import load_cluster_file
from lifeboat.karpenter.nodepool_hash import HASH_ANNOTATION, nodepool_hash
from lifeboat.kube import nodes
from lifeboat.marks import node_marks
from lifeboat_local import replay as replay_module
from lifeboat_local.karpenter_sim import KarpenterSimulation, SimStep
from lifeboat_local.karpenter_sim.disruption import drift_reason
from tests.support.nodeclaim_crd import crd_problems
from tests.support.replaying import (
    EVENING,
    IN_WINDOW,
    Obj,
    find,
    follow,
    of_kind,
    rebalance_event,
    replay,
    run_with_timeout,
    sample,
    sample_cluster,
    save,
    spot_event,
    types,
    write,
)

SPOT_NODE, SPOT_CLAIM, SPOT_INSTANCE = (
    "ip-10-0-1-11.ec2.internal",
    "general-7xkqz",
    "i-0a1b2c3d4e5f60001",
)
REBALANCE_NODE, REBALANCE_CLAIM = "ip-10-0-1-12.ec2.internal", "general-b4wpl"
REBALANCE_INSTANCE = "i-0a1b2c3d4e5f60002"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"


def _replacements(objects: list[Obj]) -> list[Obj]:
    """Lifeboat's replacements in a cluster; each must be one the API server accepts."""
    found = [
        c for c in of_kind(objects, "NodeClaim") if node_marks.REPLACES_LABEL in nodes.labels_of(c)
    ]
    for claim in found:
        assert crd_problems(claim) == [], claim["metadata"]["name"]
    return found


def _deleting(objects: list[Obj], claim: str) -> bool:
    return bool(find(objects, "NodeClaim", claim)["metadata"].get("deletionTimestamp"))


@pytest.fixture
def steps(monkeypatch: pytest.MonkeyPatch) -> list[SimStep]:
    """What the replay's Karpenter simulation did (replay prints only Lifeboat's reports)."""
    seen: list[SimStep] = []
    advance = KarpenterSimulation.advance

    def recording(self: KarpenterSimulation, now: Any) -> list[SimStep]:
        done = advance(self, now)
        seen.extend(done)
        return done

    monkeypatch.setattr(KarpenterSimulation, "advance", recording)
    return seen


# -- 11.1: a replacement the API server rejects never blocks the notice -----------------------


def test_min_values_pool_gets_a_replacement_the_crd_accepts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's pool: ``In [m5.large, m5a.large] minValues: 2`` and a Spot m5.large. The
    CRD rule "requirements with 'minValues' must have at least that many values" forbids
    dropping m5.large, so the exclusion is skipped (and the action says why)."""
    objects = sample_cluster()
    general = find(objects, "NodePool", "general")
    general["spec"]["template"]["spec"]["requirements"].append(
        {
            "key": INSTANCE_TYPE,
            "operator": "In",
            "values": ["m5.large", "m5a.large"],
            "minValues": 2,
        }
    )
    cluster = save(objects, tmp_path / "min-values.yaml")
    state = tmp_path / "after.yaml"
    (line,) = replay(
        capsys,
        spot_event(tmp_path, SPOT_INSTANCE, "2026-12-01T14:02:00Z"),
        "--cluster",
        cluster,
        "--at",
        IN_WINDOW,
        "--state-out",
        state,
    )
    assert line["outcome"] == "acted"
    assert types(line) == ["taint", "cordon", "label", "create-nodeclaim", "delete-nodeclaim"]
    created = line["actions"][3]
    assert "error" not in created
    assert "fewer than minValues 2" in created["note"]
    after = load_cluster_file(state)
    (replacement,) = _replacements(after)
    assert crd_problems(replacement) == []
    assert {
        "key": INSTANCE_TYPE,
        "operator": "In",
        "values": ["m5.large", "m5a.large"],
        "minValues": 2,
    } in replacement["spec"]["requirements"]
    assert _deleting(after, SPOT_CLAIM)


@pytest.fixture
def refusing_api_server(monkeypatch: pytest.MonkeyPatch) -> None:
    """The replay's emulator answers every NodeClaim create with 422, as a live API server
    does for a claim breaking the CRD's rules."""
    start = kubemu.Emulator.start

    def start_refusing(self: kubemu.Emulator) -> str:
        url = start(self)
        self.fail_next(422, times=1000, verb="create", resource="nodeclaims")
        return url

    monkeypatch.setattr(kubemu.Emulator, "start", start_refusing)


@pytest.mark.usefixtures("refusing_api_server")
@pytest.mark.parametrize("kind", ["spot-interruption", "rebalance-recommendation"])
def test_a_refused_replacement_does_not_hold_up_the_old_claims_deletion(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    """Issue 11.1: the action raised before the old claim was deleted, and every redelivery
    repeated it until the instance was gone. Now the refusal is reported on the action and
    in the reason, the old claim is deleted (Karpenter provisions for its pods), and the
    message is done (exit 0, no error)."""
    state = tmp_path / "after.yaml"
    if kind == "spot-interruption":
        event, instance, claim, at = (
            spot_event(tmp_path, SPOT_INSTANCE, "2026-12-01T17:59:00Z"),
            SPOT_INSTANCE,
            SPOT_CLAIM,
            EVENING,
        )
    else:
        event, instance, claim, at = (
            rebalance_event(tmp_path, REBALANCE_INSTANCE),
            REBALANCE_INSTANCE,
            REBALANCE_CLAIM,
            EVENING,
        )
    (line,) = replay(capsys, event, "--cluster", sample_path(), "--at", at, "--state-out", state)
    after = load_cluster_file(state)
    assert _replacements(after) == []
    if kind == "rebalance-recommendation":
        # Issue 22: voluntary work never deletes a claim its replacement did not follow:
        # the pods would wait with nowhere to go. Deferred, looked at again, claim kept.
        assert (line["instance_id"], line["outcome"]) == (instance, "deferred")
        assert types(line) == ["taint", "cordon", "label", "create-nodeclaim"]
        assert "replacement not created (refused by the API server: 422" in line["reason"]
        assert not _deleting(after, claim)
        return
    assert (line["instance_id"], line["outcome"]) == (instance, "acted")
    assert types(line) == ["taint", "cordon", "label", "create-nodeclaim", "delete-nodeclaim"]
    assert line["actions"][3]["error"].startswith("422")
    assert line["actions"][4] == {"type": "delete-nodeclaim", "name": claim}
    assert "create-nodeclaim not done: 422" in line["reason"]
    assert _deleting(after, claim)


def sample_path() -> Path:
    return Path(__file__).resolve().parents[4] / "events" / "cluster.yaml"


# -- 11.2: the replacement is the claim Karpenter's provisioner would build -------------------


def test_replacement_has_karpenters_labels_and_is_not_drifted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], steps: list[SimStep]
) -> None:
    """``resolveCustomLabelsFromRequirements`` labels custom requirement keys, without which
    ``areRequirementsDrifted`` marks the claim drifted; ``NewNodeClaimTemplate`` stamps the
    pool hash ``areStaticFieldsDrifted`` compares. The replay's drift controller (the same
    two checks) runs through the hand-over and finds nothing to replace again."""
    objects = sample_cluster()
    general = find(objects, "NodePool", "general")
    general["spec"]["template"]["spec"]["requirements"] += [
        {"key": "example.com/tier", "operator": "In", "values": ["gold", "silver"]},
        {"key": "example.com/rack", "operator": "Exists"},
    ]
    # Karpenter labelled its claims (and so their Nodes) from these requirements at creation.
    for obj in [*of_kind(objects, "Node"), *of_kind(objects, "NodeClaim")]:
        if nodes.labels_of(obj).get("karpenter.sh/nodepool") == "general":
            silver = obj["metadata"]["name"] in (REBALANCE_NODE, REBALANCE_CLAIM)
            obj["metadata"]["labels"].update(
                {"example.com/tier": "silver" if silver else "gold", "example.com/rack": "12"}
            )
    cluster = save(objects, tmp_path / "custom-keys.yaml")
    state = tmp_path / "after.yaml"
    lines = follow(capsys, rebalance_event(tmp_path, REBALANCE_INSTANCE), cluster, EVENING, state)
    assert lines[0]["outcome"] == "acted"
    after = load_cluster_file(state)
    (replacement,) = _replacements(after)
    labels = nodes.labels_of(replacement)
    assert labels["example.com/tier"] == "silver"  # the old node's value, which its pods select
    assert labels["example.com/rack"] == "12"
    assert labels["karpenter.sh/nodepool"] == "general"
    assert labels["karpenter.k8s.aws/ec2nodeclass"] == "default"
    pool = find(after, "NodePool", "general")
    assert nodes.annotations_of(replacement)[HASH_ANNOTATION] == nodepool_hash(pool)
    assert (
        nodes.annotations_of(replacement)[HASH_ANNOTATION]
        == nodes.annotations_of(pool)[HASH_ANNOTATION]
    )
    assert crd_problems(replacement) == []
    # Launched and initialized by the simulation, still not drifted.
    assert nodes.condition_true(replacement, "Initialized")
    assert drift_reason(pool, replacement) is None
    assert not [s for s in steps if s.action == "drifted"]
    assert not nodes.condition_true(replacement, "Drifted")


def test_static_nodepool_gets_no_replacement_karpenter_keeps_its_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], steps: list[SimStep]
) -> None:
    """Static NodePools (``spec.replicas``): static provisioning creates claims up to the
    count, and static deprovisioning would delete an extra one (unlaunched claims first).
    Lifeboat adds none. A scheduled change waits (voluntary work never deletes a claim no
    replacement can follow, issue 22) until the maintenance lead, then deletes the old claim
    (the instance goes anyway); the simulated Karpenter restores the count."""
    objects = sample_cluster()
    batch = find(objects, "NodePool", "batch")
    batch["spec"]["replicas"] = 2
    batch["spec"]["limits"] = {"nodes": "4"}  # only limits.nodes on static pools (CRD rule)
    cluster = save(objects, tmp_path / "static.yaml")
    state = tmp_path / "after.yaml"
    lines = follow(
        capsys, sample_path().parent / "scheduled-change.json", cluster, IN_WINDOW, state
    )
    mine = [line for line in lines if line["instance_id"] == "i-0a1b2c3d4e5f60004"]
    first, last = mine[0], mine[-1]
    assert first["outcome"] == "deferred"
    assert (
        "no replacement can launch: NodePool batch is static (spec.replicas 2)" in (first["reason"])
    )
    assert "delete-nodeclaim" not in types(first)
    assert last["outcome"] == "acted"
    assert types(last) == ["taint", "cordon", "label", "delete-nodeclaim"]
    assert "static (spec.replicas 2)" in last["reason"]
    assert [s.claim for s in steps if s.action == "provisioned"]
    after = load_cluster_file(state)
    live = [
        c
        for c in of_kind(after, "NodeClaim")
        if nodes.labels_of(c).get("karpenter.sh/nodepool") == "batch"
        and not c["metadata"].get("deletionTimestamp")
    ]
    assert len(live) == 2
    assert _replacements(after) == []


def test_pool_past_its_limits_gets_no_replacement(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``filterByRemainingResources``: no instance type fits ``limits - usage`` of the other
    nodes once the pool is past a limit (here lowered below its usage, 12 cpu)."""
    objects = sample_cluster()
    find(objects, "NodePool", "general")["spec"]["limits"] = {"cpu": "10"}
    cluster = save(objects, tmp_path / "limits.yaml")
    state = tmp_path / "after.yaml"
    (line,) = replay(
        capsys,
        spot_event(tmp_path, SPOT_INSTANCE, "2026-12-01T14:02:00Z"),
        "--cluster",
        cluster,
        "--at",
        IN_WINDOW,
        "--state-out",
        state,
    )
    assert types(line) == ["taint", "cordon", "label", "delete-nodeclaim"]
    assert "past its limit cpu: 12 used of 10" in line["reason"]
    assert _replacements(load_cluster_file(state)) == []


# -- 11.4: the pool counted as Karpenter counts it ------------------------------------------


def test_pool_is_counted_as_karpenter_counts_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``BuildDisruptionBudgetMapping``: only managed, initialized nodes count; a claim with
    ``InstanceTerminating`` is skipped; a deleting claim whose Node is gone holds no slot; a
    replacement not yet initialized holds none either. Here general's six nodes are joined
    by one of each: the count stays 6 nodes, 0 disrupting, and the rebalance acts."""
    objects = sample_cluster()
    template = find(objects, "NodeClaim", "general-x3mhb")
    extra: list[Obj] = []
    for name, provider, deleting, terminating in (
        ("general-launching", "aws:///us-east-1a/i-0aaaaaaaaaaaaaa01", False, False),
        ("general-nodegone", "aws:///us-east-1a/i-0aaaaaaaaaaaaaa02", True, False),
        ("general-terminating", "aws:///us-east-1a/i-0aaaaaaaaaaaaaa03", False, True),
    ):
        claim = {**template, "metadata": {**template["metadata"], "name": name, "uid": name}}
        claim["status"] = {**template["status"], "providerID": provider, "nodeName": f"{name}.x"}
        if deleting:
            claim["metadata"]["deletionTimestamp"] = "2026-12-01T17:50:00Z"
        if terminating:
            claim["status"]["conditions"] = [
                *template["status"]["conditions"],
                {
                    "type": "InstanceTerminating",
                    "status": "True",
                    "reason": "InstanceTerminating",
                    "lastTransitionTime": "2026-12-01T17:55:00Z",
                },
            ]
        extra.append(claim)
    # The launching replacement's Node registered but not initialized (NotReady); the
    # terminating claim's Node still there, Ready, drained.
    node = find(objects, "Node", "ip-10-0-2-19.ec2.internal")
    for name, ready in (("general-launching", False), ("general-terminating", True)):
        labels = {
            k: v for k, v in node["metadata"]["labels"].items() if k != "karpenter.sh/initialized"
        }
        if name == "general-terminating":
            labels["karpenter.sh/initialized"] = "true"
        extra.append(
            {
                **node,
                "metadata": {
                    **node["metadata"],
                    "name": f"{name}.x",
                    "uid": f"node-{name}",
                    "labels": labels,
                    "ownerReferences": [
                        {
                            "apiVersion": "karpenter.sh/v1",
                            "kind": "NodeClaim",
                            "name": name,
                            "uid": name,
                        }
                    ],
                },
                "spec": {
                    "providerID": next(c for c in extra if c["metadata"]["name"] == name)["status"][
                        "providerID"
                    ]
                },
                "status": {
                    **node["status"],
                    "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
                },
            }
        )
    cluster = save(objects + extra, tmp_path / "counting.yaml")
    (line,) = replay(
        capsys, rebalance_event(tmp_path, REBALANCE_INSTANCE), "--cluster", cluster, "--at", EVENING
    )
    assert line["outcome"] == "acted"
    assert 'budget[0] "20%" of 6 nodes = 2, 0 disrupting' in line["reason"]


@pytest.mark.parametrize(
    ("nodes_value", "expect"),
    [("4294967296", '"4294967296" = 0, 0 disrupting'), ("2147483648", "= -2147483648")],
)
def test_budget_nodes_keep_their_low_32_bits_as_intstr_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], nodes_value: str, expect: str
) -> None:
    """``Budget.GetAllowedDisruptions``: ``intstr.FromInt`` truncates to int32; a limit of 0
    (or below) always active allows nothing, ever: the rebalance is let go, not blocked."""
    objects = sample_cluster()
    find(objects, "NodePool", "general")["spec"]["disruption"]["budgets"] = [{"nodes": nodes_value}]
    cluster = save(objects, tmp_path / "int32.yaml")
    (line,) = replay(
        capsys, rebalance_event(tmp_path, REBALANCE_INSTANCE), "--cluster", cluster, "--at", EVENING
    )
    assert line["outcome"] == "ignored"
    assert expect in line["reason"]
    assert "giving up" in line["reason"]
    assert "blocked" not in line["reason"]  # allowed 0, not an error


def test_a_cron_number_beyond_64_bits_blocks_the_pool_as_robfig_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """robfig ``mustParseInt`` (strconv.Atoi): "value out of range" is a parse error, so
    ``Budget.IsActive`` errors and ``MustGetAllowedDisruptions`` returns 0 (fail closed)."""
    objects = sample_cluster()
    budgets = find(objects, "NodePool", "general")["spec"]["disruption"]["budgets"]
    budgets[1]["schedule"] = "*/99999999999999999999 * * * *"
    cluster = save(objects, tmp_path / "overflow.yaml")
    (line,) = replay(
        capsys, rebalance_event(tmp_path, REBALANCE_INSTANCE), "--cluster", cluster, "--at", EVENING
    )
    assert line["outcome"] == "deferred"
    assert "NodePool general blocked" in line["reason"]
    assert "value out of range" in line["reason"]


def test_a_schedule_past_robfigs_horizon_never_makes_a_deferral_wake_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """robfig ``SpecSchedule.Next`` returns the zero time when no hit lies before the year
    start.year + 5, and ``Budget.IsActive`` reads that as active: in June 2097 a 29 February
    freeze is active until robfig can see 2104-02-29. The deferral waits until then (and
    --follow terminates), instead of waking at once in a loop."""
    objects = sample_cluster()
    find(objects, "NodePool", "batch")["spec"]["disruption"]["budgets"] = [
        {"nodes": "1"},
        {"nodes": "0", "schedule": "0 0 29 2 *", "duration": "1h"},
    ]
    cluster = save(objects, tmp_path / "leap.yaml")
    event = sample("scheduled-change.json")
    event["time"] = "2097-06-01T11:00:00Z"
    event["detail"]["startTime"] = "Wed, 01 Jun 2100 09:00:00 GMT"
    event["detail"]["endTime"] = "Wed, 01 Jun 2100 11:00:00 GMT"
    path = write(tmp_path, "change-2097.json", event)
    lines = run_with_timeout(
        lambda: replay(
            capsys, path, "--cluster", cluster, "--at", "2097-06-01T12:00:00Z", "--follow"
        )
    )
    first = lines[:2]
    assert [line["outcome"] for line in first] == ["deferred", "deferred"]
    assert {line["deferred_until"] for line in first} == {"2099-01-01T00:59:59Z"}
    assert len(lines) < 30


# -- 11.5: do-not-disrupt on pods, as IsDoNotDisruptActive ------------------------------------

SPARK_INSTANCE, SPARK = "i-0a1b2c3d4e5f60008", "spark-etl-driver-0"


@pytest.mark.parametrize(
    ("annotation", "status", "outcome", "until"),
    [
        # A duration counts from status.startTime (20 minutes ago), not from creation.
        (
            "1h",
            {"phase": "Running", "startTime": "2026-12-01T17:40:00Z"},
            "deferred",
            "2026-12-01T18:40:00Z",
        ),
        # No startTime yet: "fail safe", active, no known end.
        ("1h", {"phase": "Pending"}, "deferred", None),
        # Terminal and terminating pods never block (IsDisruptable).
        ("true", {"phase": "Succeeded", "startTime": "2026-11-25T10:00:05Z"}, "acted", None),
    ],
    ids=["duration-from-start-time", "no-start-time", "terminal-pod"],
)
def test_do_not_disrupt_on_pods_follows_is_do_not_disrupt_active(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    annotation: str,
    status: dict[str, Any],
    outcome: str,
    until: str | None,
) -> None:
    objects = sample_cluster()
    pod = find(objects, "Pod", SPARK)
    pod["metadata"]["annotations"]["karpenter.sh/do-not-disrupt"] = annotation
    pod["status"] = status
    cluster = save(objects, tmp_path / "dnd.yaml")
    (line,) = replay(
        capsys, rebalance_event(tmp_path, SPARK_INSTANCE), "--cluster", cluster, "--at", EVENING
    )
    assert line["outcome"] == outcome
    assert line["deferred_until"] == until
    if outcome == "deferred":
        assert f"pod data/{SPARK} has karpenter.sh/do-not-disrupt={annotation}" in line["reason"]


# -- 11.6: a PDB that allows no disruption makes a node no candidate --------------------------


def test_a_pdb_allowing_no_disruption_defers_a_voluntary_action_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``ValidatePodsDisruptable`` with ``pdb.Limits.CanEvictPods``: a pod whose PDB has
    ``disruptionsAllowed: 0`` makes the node no candidate. Lifeboat defers instead of taking
    a budget slot and a spare node while the drain would wait; nothing is tainted NoSchedule,
    no claim created or deleted."""
    objects = sample_cluster()
    find(objects, "PodDisruptionBudget", "checkout")["spec"] = {
        "selector": {"matchLabels": {"app": "checkout"}},
        "minAvailable": "100%",
    }
    cluster = save(objects, tmp_path / "pdb.yaml")
    (line,) = replay(
        capsys, rebalance_event(tmp_path, REBALANCE_INSTANCE), "--cluster", cluster, "--at", EVENING
    )
    assert line["outcome"] == "deferred"
    assert "PDB shop/checkout allows no disruption now" in line["reason"]
    assert line["actions"] == [
        {
            "type": "taint",
            "key": "lifeboat.dev/rebalance-recommendation",
            "effect": "PreferNoSchedule",
        }
    ]


def test_scheduled_maintenance_still_acts_at_start_time_minus_lead_despite_the_pdb(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    objects = sample_cluster()
    find(objects, "PodDisruptionBudget", "checkout")["spec"] = {
        "selector": {"matchLabels": {"app": "checkout"}},
        "minAvailable": "100%",
    }
    cluster = save(objects, tmp_path / "pdb.yaml")
    event = sample("scheduled-change.json")
    event["resources"] = [f"arn:aws:ec2:us-east-1:123456789012:instance/{REBALANCE_INSTANCE}"]
    event["detail"]["affectedEntities"] = [{"entityValue": REBALANCE_INSTANCE}]
    # Sent at --at, so handled as sent (a replayed event's times keep their offsets from
    # --at): maintenance starts 10 minutes after the instant it is handled.
    event["time"] = EVENING
    event["detail"]["startTime"] = "Tue, 01 Dec 2026 18:10:00 GMT"
    event["detail"]["endTime"] = "Tue, 01 Dec 2026 20:10:00 GMT"
    (line,) = replay(
        capsys, write(tmp_path, "soon.json", event), "--cluster", cluster, "--at", EVENING
    )
    assert line["outcome"] == "acted"
    assert "acting regardless of budgets, do-not-disrupt and PodDisruptionBudgets" in line["reason"]
    assert types(line) == ["taint", "cordon", "label", "create-nodeclaim", "delete-nodeclaim"]


# -- 11.7: beside Karpenter's interruption queue ----------------------------------------------


def _handled_by_karpenter(objects: list[Obj], claim: str, node: str, *, deleting: bool) -> None:
    """What Karpenter leaves on the objects: a deleted claim (its interruption controller's
    deleteNodeClaim) makes the finalizer delete the Node and taint it; a disruption command
    in flight (markDisrupted) only taints the Node and sets DisruptionReason."""
    the_claim, the_node = find(objects, "NodeClaim", claim), find(objects, "Node", node)
    the_node["spec"].setdefault("taints", []).append(
        {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}
    )
    if deleting:
        the_claim["metadata"]["deletionTimestamp"] = "2026-12-01T17:59:01Z"
        the_node["metadata"]["deletionTimestamp"] = "2026-12-01T17:59:02Z"
    else:
        the_claim["status"]["conditions"].append(
            {
                "type": "DisruptionReason",
                "status": "True",
                "reason": "Drifted",
                "lastTransitionTime": "2026-12-01T17:58:00Z",
            }
        )


def test_a_notice_for_a_node_karpenter_already_terminates_adds_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Both running: Karpenter's interruption controller deleted the claim first (it skips a
    claim already deleting: ``deleteNodeClaim``); Lifeboat reports exactly that, sends no
    second delete and creates no replacement."""
    objects = sample_cluster()
    _handled_by_karpenter(objects, SPOT_CLAIM, SPOT_NODE, deleting=True)
    _handled_by_karpenter(objects, REBALANCE_CLAIM, REBALANCE_NODE, deleting=True)
    cluster = save(objects, tmp_path / "both.yaml")
    state = tmp_path / "after.yaml"
    spot_line, rebalance_line = replay(
        capsys,
        spot_event(tmp_path, SPOT_INSTANCE, "2026-12-01T17:59:00Z"),
        rebalance_event(tmp_path, REBALANCE_INSTANCE),
        "--cluster",
        cluster,
        "--at",
        EVENING,
        "--same-instant",  # both judged at EVENING
        "--state-out",
        state,
    )
    # The Spot path reads no claim: the Node being deleted (Karpenter deletes it right after
    # the claim) says it. The rebalance lists the pool's claims: the claim itself says it.
    assert f"node {SPOT_NODE} is already being deleted" in spot_line["reason"]
    assert f"NodeClaim {REBALANCE_CLAIM} is already being deleted" in rebalance_line["reason"]
    for line in (spot_line, rebalance_line):
        assert line["outcome"] == "ignored"
        assert line["actions"] == []
    assert _replacements(load_cluster_file(state)) == []


def test_a_node_karpenter_is_disrupting_gets_no_second_replacement(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Karpenter command in flight (drift: tainted, its replacement launching, the claim
    not deleted yet): a Spot warning deletes the claim as Karpenter's interruption controller
    would (CordonAndDrain), with no second replacement; a rebalance waits for Karpenter."""
    objects = sample_cluster()
    _handled_by_karpenter(objects, SPOT_CLAIM, SPOT_NODE, deleting=False)
    _handled_by_karpenter(objects, REBALANCE_CLAIM, REBALANCE_NODE, deleting=False)
    cluster = save(objects, tmp_path / "drifting.yaml")
    spot_line, rebalance_line = replay(
        capsys,
        spot_event(tmp_path, SPOT_INSTANCE, "2026-12-01T17:59:00Z"),
        rebalance_event(tmp_path, REBALANCE_INSTANCE),
        "--cluster",
        cluster,
        "--at",
        EVENING,
        "--same-instant",  # both judged at EVENING
    )
    assert spot_line["outcome"] == "acted"
    assert types(spot_line) == ["taint", "cordon", "label", "delete-nodeclaim"]
    assert "Karpenter is already replacing node" in spot_line["reason"]
    assert rebalance_line["outcome"] == "deferred"
    assert "Karpenter is already disrupting node" in rebalance_line["reason"]
    assert rebalance_line["actions"] == []


# -- 11.3: the hand-over closes the consolidation race ----------------------------------------


def _slow_scheduler(monkeypatch: pytest.MonkeyPatch, delay: timedelta) -> None:
    """The replay's simulation with a kube-scheduler that uses a new node only ``delay``
    after it is Ready: the replacement sits Ready, initialized and empty that long, an
    emptiness candidate (consolidateAfter 0s) unless something protects it."""
    monkeypatch.setattr(
        replay_module,
        "KarpenterSimulation",
        functools.partial(KarpenterSimulation, bind_delay=delay),
    )


def test_the_hand_over_keeps_the_replacement_until_the_old_nodes_pods_have_moved(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    steps: list[SimStep],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 11.3, with Karpenter's default ``consolidateAfter: 0s``. The old claim is deleted
    as the replacement is created, so Karpenter's provisioner nominates the replacement for
    the draining node's pods (``Results.Record``, renewed every pass while the node carries
    karpenter.sh/disrupted), and a nominated node is no candidate (``ValidateNodeDisruptable``);
    before its initialization it is no candidate at all. So it is never consolidated, though
    the pods reach it only two minutes after it is Ready."""
    _slow_scheduler(monkeypatch, timedelta(minutes=2))
    objects = sample_cluster()
    find(objects, "NodePool", "general")["spec"]["disruption"]["consolidateAfter"] = "0s"
    cluster = save(objects, tmp_path / "eager.yaml")
    state = tmp_path / "after.yaml"
    lines = follow(capsys, rebalance_event(tmp_path, REBALANCE_INSTANCE), cluster, EVENING, state)
    assert lines[0]["outcome"] == "acted"
    replacement = lines[0]["actions"][3]["name"]
    assert [s for s in steps if s.action == "nominated" and s.claim == replacement]
    assert not [
        s
        for s in steps
        if s.claim == replacement and s.action.startswith(("consolidation", "disrupt"))
    ]
    after = load_cluster_file(state)
    claim = find(after, "NodeClaim", replacement)
    assert not claim["metadata"].get("deletionTimestamp")
    checkout = [p for p in of_kind(after, "Pod") if p["metadata"]["name"].startswith("checkout")]
    assert claim["status"]["nodeName"] in {p["spec"].get("nodeName") for p in checkout}
    assert REBALANCE_NODE not in {n["metadata"]["name"] for n in of_kind(after, "Node")}


def test_a_replacement_left_empty_beside_a_live_old_node_is_consolidated(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    steps: list[SimStep],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The test above can fail: a replacement created while the old claim stays (the former
    "replace before delete": here made by hand for a node of general while Lifeboat works on
    pool batch) is empty, initialized and nominated for nothing: the simulated emptiness
    consolidation takes it within seconds of its initialization, as Karpenter's would."""
    _slow_scheduler(monkeypatch, timedelta(minutes=2))
    objects = sample_cluster()
    find(objects, "NodePool", "general")["spec"]["disruption"]["consolidateAfter"] = "0s"
    from lifeboat.karpenter.replacement import replacement_nodeclaim

    built = replacement_nodeclaim(
        find(objects, "NodePool", "general"),
        find(objects, "Node", REBALANCE_NODE),
        REBALANCE_CLAIM,
        "by-hand",
    ).claim
    assert built is not None
    cluster = save([*objects, dict(built)], tmp_path / "by-hand.yaml")
    state = tmp_path / "after.yaml"
    follow(capsys, sample_path().parent / "scheduled-change.json", cluster, EVENING, state)
    name = built["metadata"]["name"]
    (deleted,) = [s for s in steps if s.claim == name and s.action == "disruption-deleted"]
    (ready,) = [s for s in steps if s.claim == name and s.action == "node-ready"]
    assert deleted.at - ready.at <= timedelta(seconds=30)
    assert name not in {
        c["metadata"]["name"] for c in of_kind(load_cluster_file(state), "NodeClaim")
    }
