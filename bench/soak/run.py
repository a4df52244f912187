"""One soak: build the world, queue the messages, let the simulated SQS queue feed the real
handler (``lifeboat.runtime.handler.handle_batch`` over a real ``Pipeline`` on the emulator), follow
the wake-ups it schedules on a simulated clock, then audit."""

from __future__ import annotations

import random
import time
from collections import Counter
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from bench.cluster import CLUSTER, REGION
from bench.events import ACCOUNT
from kubemu import Emulator
from lifeboat.flow.pipeline import OneCluster, Pipeline
from lifeboat.kube import nodes
from lifeboat.kube.client import KubeApi, RetryPolicy
from lifeboat.marks import node_marks
from lifeboat.model.settings import Settings
from lifeboat.wakeup.codec import MemoryWakeups, encode
from lifeboat_local.replay import RecordedLifecycle, SimulatedClock

from .audit import (
    ServerLog,
    audit,
    audit_replacements,
    check_expectations,
    fates,
    read_server,
    replacements_by_old_claim,
)
from .config import START, SoakConfig
from .faults import ThrottledDirectory, ledger_for
from .messages import EventFactory, Sent, generate
from .queue import OutcomeMetrics, SimulatedQueue
from .world import build_world


@dataclass
class SoakResult:
    config: SoakConfig
    seconds: float
    sent: list[Sent]
    wakeups: list[Sent]
    batches: int
    batch_errors: int
    outcomes: Counter[str]
    messages_by_fate: Counter[str]
    duplicates_same_batch: int
    duplicates_later: int
    server: ServerLog
    directory_throttled: int
    ledger_throttled: dict[str, int]
    metrics: Counter[str]
    # Everything but the replacement count: lost or silent messages, repeated deletes,
    # evictions and taints, (event, instance) pairs handled twice, wrong fates.
    violations: list[str]
    # One old NodeClaim, more than one replacement (checked apart: issue 10.1).
    replacement_violations: list[str]
    pending_wakeups: int

    def summary(self) -> dict[str, Any]:
        per_claim = replacements_by_old_claim(self.server)
        return {
            "events": self.config.events,
            "messages": len(self.sent),
            "wakeup_messages": len(self.wakeups),
            "seconds": round(self.seconds, 1),
            "batches": self.batches,
            "batches_failed_whole": self.batch_errors,
            "report_outcomes": dict(sorted(self.outcomes.items())),
            "message_fates": dict(sorted(self.messages_by_fate.items())),
            "duplicates_same_batch": self.duplicates_same_batch,
            "duplicates_later_batch": self.duplicates_later,
            "same_instance_pairs": sum(1 for m in self.sent if m.paired_with) // 2,
            "wakeups_delivered_twice": sum(1 for m in self.wakeups if m.duplicate_of),
            "kube_answers": dict(sorted(self.server.answers.items())),
            "describe_instances_throttled": self.directory_throttled,
            "ledger_throttled": self.ledger_throttled,
            "replacements_created": len(self.server.created_claims),
            "old_claims_replaced": len(per_claim),
            "old_claims_replaced_more_than_once": sum(1 for n in per_claim.values() if n > 1),
            "nodeclaims_deleted": sum(self.server.deleted_claims.values()),
            "pods_evicted": sum(self.server.evictions.values()),
            "pending_wakeups": self.pending_wakeups,
            "dead_lettered_not_poison": len(unlucky(self)),
            "lost": sum(
                1 for m in [*self.sent, *self.wakeups] if m.reports is None and not m.dead_lettered
            ),
            "violations": len(self.violations),
            "replacement_violations": len(self.replacement_violations),
        }


def unlucky(result: SoakResult) -> list[Sent]:
    """Dead-lettered messages that were not about a poison node."""
    return [m for m in result.sent if m.dead_lettered and m.label != "poison"]


def run_soak(config: SoakConfig) -> SoakResult:
    started = time.monotonic()
    rng = random.Random(config.seed)
    world = build_world(config, rng)
    factory = EventFactory(rng, world)
    sent = generate(config, rng, factory)
    clock = SimulatedClock(START)
    wakeups = MemoryWakeups()
    directory = ThrottledDirectory(
        world.directory(), config.aws_fault_rate, random.Random(rng.random())
    )
    metrics = OutcomeMetrics()
    wakeup_rng = random.Random(rng.random())
    original_claims = [m.nodeclaim for m in world.machines if m.nodeclaim]

    with (
        Emulator(world.objects) as emulator,
        ledger_for(config, random.Random(rng.random())) as ledger,
    ):
        for machine in world.machines:
            if machine.instance_id in world.poison:
                # Every request to the node fails (read or written): its messages must end
                # in the dead-letter queue, whatever the path that reaches the node first.
                emulator.fail_next(
                    500, times=10**9, verb=None, resource="nodes", name=machine.node_name
                )
        emulator.set_fault_rate(
            rate=config.kube_fault_rate,
            seed=config.seed,
            statuses=config.kube_fault_statuses,
            timeout_rate=config.kube_timeout_rate,
            timeout_delay=config.timeout_delay,
        )
        retry = RetryPolicy(
            attempts=4, base_delay=0.002, max_delay=0.02, request_timeout=config.request_timeout
        )
        pipeline = Pipeline(
            clusters=OneCluster(KubeApi(emulator.api_client(), retry)),
            directory=directory,
            settings=Settings(clusters=(CLUSTER,), account_id=ACCOUNT, region=REGION),
            clock=clock,
            lifecycle=RecordedLifecycle(),
            wakeups=wakeups,
            ledger=ledger.ledger,
            holder="soak",
            workers=config.workers,
        )
        queue = SimulatedQueue(
            pipeline,
            batch_size=config.batch_size,
            max_receive=config.max_receive,
            visibility=ledger.visibility,
            context=ledger.context,
            metrics=metrics,
        )
        queue.send(sent)
        queue.drain()
        # Follow the wake-ups the run scheduled, on the simulated clock, through the same
        # queue; some are delivered twice, as a scheduler may.
        wakeup_messages: list[Sent] = []
        until = START + timedelta(minutes=config.follow_minutes)
        while (due := wakeups.next_due()) is not None and due <= until:
            clock.now = max(clock.now, due)
            launch_replacements(emulator)
            due_now: list[Sent] = []
            for wakeup in wakeups.pop_due(clock.now):
                message = Sent(
                    factory.message_id(),
                    encode(wakeup),
                    f"wakeup:{wakeup.task}",
                    wakeup.notice.event_id,
                    wakeup=True,
                )
                due_now.append(message)
                if wakeup_rng.random() < config.wakeup_duplicate_rate:
                    due_now.append(message.copy(factory.message_id()))
            wakeup_messages += due_now
            queue.send(due_now)
            queue.drain()
        emulator.clear_faults()
        final_nodes = emulator.objects("Node")
        server = read_server(emulator, original_claims)
        ledger_throttled = ledger.throttled()

    outcomes, messages_by_fate, violations = fates([*sent, *wakeup_messages])
    violations += queue.stats.violations
    violations += audit(sent, wakeup_messages, server, final_nodes)
    violations += check_expectations(sent)
    metric_outcomes = sum(v for k, v in metrics.counts.items() if k.startswith("Outcomes."))
    reported = sum(outcomes.values()) + queue.stats.reports_of_failed_deliveries
    if metric_outcomes != reported:
        violations.append(f"Outcomes metrics {metric_outcomes} != reports {reported}")
    later_dups = sum(1 for m in sent if m.duplicate_of) - queue.stats.duplicates_same_batch
    return SoakResult(
        config=config,
        seconds=time.monotonic() - started,
        sent=sent,
        wakeups=wakeup_messages,
        batches=queue.stats.batches,
        batch_errors=queue.stats.batch_errors,
        outcomes=outcomes,
        messages_by_fate=messages_by_fate,
        duplicates_same_batch=queue.stats.duplicates_same_batch,
        duplicates_later=later_dups,
        server=server,
        directory_throttled=directory.throttled,
        ledger_throttled=ledger_throttled,
        metrics=metrics.counts,
        violations=violations,
        replacement_violations=audit_replacements(server),
        pending_wakeups=len(wakeups.pending),
    )


def launch_replacements(emulator: Emulator) -> None:
    """What Karpenter does with a new NodeClaim, reduced to what Lifeboat looks at: it
    becomes Ready. (``lifeboat_local.karpenter_sim`` does the whole of it, but scans every
    pod per node and would cost more than the soak itself.)"""
    for claim in emulator.objects("NodeClaim"):
        if node_marks.REPLACES_LABEL not in nodes.labels_of(claim):
            continue
        if claim.get("status", {}).get("conditions"):
            continue
        claim["status"] = {"conditions": [{"type": "Ready", "status": "True"}]}
        emulator.put_object(claim)
