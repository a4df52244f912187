"""The two hand-overs of a voluntary notice, measured in the replay's Karpenter simulation
(``python -m bench.hand_over``; also part of ``python -m bench``).

The sample cluster's pool ``general`` (6 nodes) gets one budget of 2 nodes and a template
edited since its nodes were made, so Karpenter's drift replaces its nodes (one command at a
time, replacement first, the old claim deleted once the replacement is initialized), while
rebalance recommendations for four of its nodes arrive through Lifeboat's real pipeline. The
same run with ``hand_over`` ``at-once`` and ``when-ready``; after every pass of the simulated
controllers and every Lifeboat batch the cluster is sampled:

- pod-Pending-seconds: pods with no node (not being deleted), integrated over simulated
  time, in total and per replacement Lifeboat created; the longest one pod waited;
- the peak of the pool's disrupting nodes against its budget, counted as Lifeboat counts
  them (Karpenter's view plus Lifeboat's own NoSchedule taint) and as Karpenter alone does
  (``BuildDisruptionBudgetMapping``: not Ready, claim deleting, in one of its commands,
  ``karpenter.sh/disrupted``);
- old nodes replaced twice (Lifeboat's replacement and one of Karpenter's drift), empty
  nodes Karpenter consolidated, hand-overs given up, and when the last original node of the
  pool was gone.

Claims launch 5 s after creation and their Node is Ready and initialized 60 s later
(``karpenter_sim.lifecycle``); a deleted claim's node is removed 90 s after at the earliest.
"""

from __future__ import annotations

import argparse
import json
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from kubemu import Emulator, load_cluster_file
from lifeboat.flow.pipeline import OneCluster, Pipeline
from lifeboat.karpenter import disruption_rules
from lifeboat.karpenter.nodepool_hash import HASH_ANNOTATION, nodepool_hash
from lifeboat.kube import nodes
from lifeboat.kube.client import KubeApi
from lifeboat.marks import node_marks
from lifeboat.model.ledger import MemoryLedger
from lifeboat.model.report import Outcome, Report
from lifeboat.model.settings import AT_ONCE, WHEN_READY, Settings
from lifeboat.wakeup.codec import MemoryWakeups, encode
from lifeboat_local.directory import directory_from_objects
from lifeboat_local.karpenter_sim import KarpenterSimulation, SimStep

CLUSTER = Path(__file__).resolve().parents[1] / "events" / "cluster.yaml"
EVENT = Path(__file__).resolve().parents[1] / "events" / "rebalance-recommendation.json"
POOL, BUDGET = "general", 2
START = datetime(2026, 12, 1, 18, 0, tzinfo=UTC)  # after general's weekday freeze
INSTANCES = [f"i-0a1b2c3d4e5f6000{n}" for n in "1237"]  # four of general's six nodes
HORIZON = timedelta(hours=3)
Obj = dict[str, Any]


def drifted_cluster() -> list[Obj]:
    """The sample cluster with every claim of ``general`` drifted (NodePoolDrifted: the
    pool's hash rewritten after a template edit) and one budget of ``BUDGET`` nodes."""
    objects = load_cluster_file(CLUSTER)
    (pool,) = [o for o in objects if o["kind"] == "NodePool" and o["metadata"]["name"] == POOL]
    pool["spec"]["disruption"]["budgets"] = [{"nodes": str(BUDGET)}]
    pool["spec"]["template"]["metadata"]["annotations"] = {"example.com/revision": "2"}
    pool["metadata"]["annotations"][HASH_ANNOTATION] = nodepool_hash(pool)
    return objects


def _rebalance(instance: str) -> str:
    event = json.loads(EVENT.read_text())
    event["id"] = f"rebalance-{instance}"
    event["time"] = "2026-12-01T17:59:00Z"
    event["detail"]["instance-id"] = instance
    return json.dumps(event)


def disrupting(emulator: Emulator, marked: frozenset[str], *, lifeboat: bool) -> int:
    """The pool's managed, initialized nodes that use up its budget now; ``lifeboat``: also
    those only Lifeboat's NoSchedule taint marks (Lifeboat's count; Karpenter's without)."""
    claims = {
        (c.get("status") or {}).get("providerID"): c
        for c in emulator.objects("NodeClaim")
        if (c.get("status") or {}).get("providerID")
    }
    count = 0
    for node in emulator.objects("Node"):
        if nodes.labels_of(node).get(nodes.NODEPOOL_LABEL) != POOL:
            continue
        claim = claims.get(node["spec"].get("providerID"))
        if claim is None or not disruption_rules.is_initialized(node):
            continue
        if nodes.condition_true(claim, "InstanceTerminating"):
            continue
        keys = {(t.get("key"), t.get("effect")) for t in nodes.taints(node)}
        ours = any(
            str(key).startswith(f"{node_marks.DOMAIN}/") and effect != "PreferNoSchedule"
            for key, effect in keys
        )
        if (
            not nodes.is_ready(node)
            or claim["metadata"].get("deletionTimestamp")
            or claim["metadata"]["name"] in marked
            or ("karpenter.sh/disrupted", "NoSchedule") in keys
            or (lifeboat and ours)
        ):
            count += 1
    return count


def _pending(emulator: Emulator) -> list[str]:
    return [
        f"{p['metadata'].get('namespace')}/{p['metadata']['name']}"
        for p in emulator.objects("Pod")
        if not p["spec"].get("nodeName") and not p["metadata"].get("deletionTimestamp")
    ]


@dataclass
class Sampler:
    """The cluster sampled after every controller pass and Lifeboat batch, in time order."""

    emulator: Emulator
    last: datetime | None = None
    pending_now: list[str] = field(default_factory=list)
    pending_seconds: float = 0.0
    waited: dict[str, float] = field(default_factory=dict)
    peak_lifeboat: int = 0
    peak_karpenter: int = 0

    def sample(self, at: datetime, marked: frozenset[str]) -> None:
        if self.last is not None and at > self.last:
            elapsed = (at - self.last).total_seconds()
            self.pending_seconds += elapsed * len(self.pending_now)
            for pod in self.pending_now:
                self.waited[pod] = self.waited.get(pod, 0.0) + elapsed
        self.last = max(at, self.last or at)
        self.pending_now = _pending(self.emulator)
        self.peak_lifeboat = max(
            self.peak_lifeboat, disrupting(self.emulator, marked, lifeboat=True)
        )
        self.peak_karpenter = max(
            self.peak_karpenter, disrupting(self.emulator, marked, lifeboat=False)
        )


def measure(hand_over: str, *, lifeboat_first: bool = False) -> dict[str, Any]:
    """One run of the scenario with ``hand_over``; its numbers. ``lifeboat_first``: the
    notices arrive before Karpenter's first disruption loop (else just after it)."""
    objects = drifted_cluster()
    originals = {
        o["metadata"]["name"]
        for o in objects
        if o["kind"] == "NodeClaim" and nodes.labels_of(o).get(nodes.NODEPOOL_LABEL) == POOL
    }
    clock = [START]
    wakeups = MemoryWakeups()
    reports: list[Report] = []
    steps: list[SimStep] = []
    last_original_gone: datetime | None = None
    with Emulator(objects) as emulator:
        sampler = Sampler(emulator)
        karpenter: KarpenterSimulation

        def observe(moment: datetime) -> None:
            sampler.sample(moment, karpenter.marked)

        karpenter = KarpenterSimulation(emulator, START, observe=observe)
        pipeline = Pipeline(
            clusters=OneCluster(KubeApi(emulator.api_client())),
            directory=directory_from_objects(objects),
            settings=Settings(hand_over=hand_over),
            clock=lambda: clock[0],
            wakeups=wakeups,
            ledger=MemoryLedger(),
        )
        if not lifeboat_first:
            steps += karpenter.advance(START)  # Karpenter's loop first: its drift starts
        bodies = [_rebalance(instance) for instance in INSTANCES]
        for result in pipeline.process(bodies):
            if result.error is not None:
                raise result.error
            reports += result.reports
        if lifeboat_first:
            steps += karpenter.advance(START)
        sampler.sample(clock[0], karpenter.marked)
        for _ in range(5_000):
            due = [d for d in (wakeups.next_due(), karpenter.next_due()) if d is not None]
            if not due or min(due) > START + HORIZON:
                break
            clock[0] = max(clock[0], min(due))
            steps += karpenter.advance(clock[0])
            for result in pipeline.process([encode(w) for w in wakeups.pop_due(clock[0])]):
                if result.error is not None:
                    raise result.error
                reports += result.reports
            sampler.sample(clock[0], karpenter.marked)
            left = {c["metadata"]["name"] for c in emulator.objects("NodeClaim")} & originals
            if last_original_gone is None and left <= {"general-t6gdw"}:
                # general-t6gdw runs a do-not-disrupt pod: no candidate for either.
                last_original_gone = clock[0]
    created = [
        a
        for r in reports
        for a in r.actions
        if a["type"] == "create-nodeclaim" and a.get("name") and not a.get("existing")
    ]
    replacements = len(created)
    # Old claims Lifeboat replaced for which Karpenter launched a replacement of its own too.
    replaced_by_lifeboat = {
        a["name"] for r in reports for a in r.actions if a["type"] == "delete-nodeclaim"
    }
    doubled = {
        s.detail.rsplit(" ", 1)[-1]
        for s in steps
        if s.action == "provisioned" and s.detail.startswith("replacement for")
    } & replaced_by_lifeboat
    return {
        "hand_over": hand_over,
        "first": "lifeboat" if lifeboat_first else "karpenter",
        "lifeboat_replacements": replacements,
        "karpenter_drift_replacements": sum(
            1 for s in steps if s.action == "disruption-deleted" and s.detail.startswith("drift")
        ),
        "pod_pending_seconds": round(sampler.pending_seconds, 1),
        "pod_pending_seconds_per_replacement": (
            round(sampler.pending_seconds / replacements, 1) if replacements else None
        ),
        "longest_pod_pending_seconds": round(max(sampler.waited.values(), default=0.0), 1),
        "pods_that_waited": len(sampler.waited),
        "replaced_twice": len(doubled),
        "budget": BUDGET,
        "peak_disrupting_lifeboat_count": sampler.peak_lifeboat,
        "peak_disrupting_karpenter_count": sampler.peak_karpenter,
        "consolidated_empty": sum(
            1 for s in steps if s.action == "disruption-deleted" and "empty" in s.detail.lower()
        ),
        "hand_overs_given_up": sum(1 for r in reports if "hand-over given up" in r.reason),
        "deferred_reports": sum(1 for r in reports if r.outcome is Outcome.DEFERRED),
        "originals_replaced_after_seconds": (
            (last_original_gone - START).total_seconds() if last_original_gone else None
        ),
    }


def compare() -> dict[str, Any]:
    """Both hand-overs on the same scenario, Karpenter's drift loop first or the notices."""
    return {
        f"{first}-first": {
            mode: measure(mode, lifeboat_first=first == "lifeboat")
            for mode in (AT_ONCE, WHEN_READY)
        }
        for first in ("karpenter", "lifeboat")
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.hand_over", description=__doc__)
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    logging.getLogger("lifeboat").setLevel(logging.WARNING)
    results = compare()
    text = json.dumps(results, indent=2)
    print(text)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
