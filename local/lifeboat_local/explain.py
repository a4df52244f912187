"""``lifeboat explain``: why Lifeboat decides what it decides about each (event, instance).

Each notice is judged by the Lambda's own pipeline, in its batch, on a disposable copy of the
cluster (the cluster file on the emulator, or a copy of a live cluster's Nodes, Pods, PDBs,
NodePools, NodeClaims and workload controllers): files in order, each one batch, exactly as
``replay`` runs them, so a notice sees the budget slot an earlier notice of the same batch
took. Nothing in the cluster given is changed. For each (event, instance) it shows the facts
the decision was made on, read at that moment: the notice and its deadline, the node, NodeClaim
and NodePool, every budget and whether it is active, the pool's disrupting nodes, do-not-
disrupt marks, the PodDisruptionBudgets that cover the node's pods; then the decision and what
carrying it out did to the copy. Each file is judged at ``--at`` as if sent then
(``lifeboat_local.arrival``): its deadline keeps its offset, and the entry says the shift.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO
from zoneinfo import ZoneInfo

from lifeboat.aws.capacity_blocks import find_instances
from lifeboat.decide import Decision
from lifeboat.events import parse_message
from lifeboat.flow.pipeline import MessageResult
from lifeboat.flow.resolve import Resolver
from lifeboat.kube.client import KubeApi
from lifeboat.model.instances import InstanceDirectory, ReservationDirectory
from lifeboat.model.notice import MalformedMessage, Notice
from lifeboat.model.report import Outcome, Report
from lifeboat.model.target import Target
from lifeboat.wakeup.codec import MemoryWakeups
from lifeboat_local.arrival import arriving_at, shift_text
from lifeboat_local.common import (
    EXIT_OK,
    EXIT_REJECTED,
    EXIT_USAGE,
    ToolSettings,
    add_at_flag,
    add_cluster_flags,
    add_command,
    add_settings_flags,
    add_strict_flag,
    read_event_file,
    strict_status,
    tool_settings,
    warn,
    warnings_said,
)
from lifeboat_local.directory import directory_from_objects
from lifeboat_local.explain_facts import fmt, notice_facts, target_facts
from lifeboat_local.explain_text import render_text
from lifeboat_local.harness import SimulatedClock, local_pipeline
from lifeboat_local.localtime import annotate_instants, shift_warning, zone
from lifeboat_local.partial import MissingKind, in_file_reason, kinds_of
from lifeboat_local.source import open_cluster, serve, snapshot

TYPO_HINT = "(did you mean "

# ---------------------------------------------------------------------------------------------
# One (event, instance)


class Observer:
    """The pipeline's ``on_decision``: reads the facts of each decision at the moment it is
    made (after earlier notices of the batch acted on the copy), read only."""

    def __init__(self, kube: KubeApi, at: datetime) -> None:
        self.kube = kube
        self.at = at
        self.seen: dict[str, dict[str, Any]] = {}

    def __call__(self, notice: Notice, target: Target, decision: Decision) -> None:
        facts: dict[str, Any] = {"node": None}
        if target.node is not None:
            # decide() saw the pool's counts only for voluntary notices; show them anyway.
            full = (
                target
                if target.counts is not None
                else Resolver(self.kube).with_budget_state(target)
            )
            facts = target_facts(self.kube, full, self.at)
        facts["decision"] = {
            "outcome": str(decision.outcome),
            "reason": decision.reason,
            "steps": [str(s) for s in decision.steps],
            "deferred_until": fmt(decision.deferred_until),
            "recheck_at": fmt(decision.recheck_at),
            "forced": decision.forced,
            "by": "decide",
        }
        self.seen[notice.dedup_key] = facts

    def entry(self, notice: Notice, report: Report, base: dict[str, Any]) -> dict[str, Any]:
        """The entry of ``notice``: its facts, those seen at its decision, and its report
        (what the pipeline did: the reason as reported, the actions taken on the copy)."""
        entry = {**base, **self.seen.pop(notice.dedup_key, {"node": None})}
        decision = entry.setdefault("decision", _routed(report))
        decision.update(outcome=str(report.outcome), reason=report.reason)
        # When it is decided again, as replay reports it (the follow-up's due time).
        decision["recheck_at"] = fmt(report.next_look)
        decision["actions"] = [dict(a) for a in report.actions]
        return entry


def _routed(report: Report) -> dict[str, Any]:
    """A decision taken before decide(): by triage (unknown instance, unmanaged, foreign),
    the parser (a no-op message) or the ledger (a duplicate delivery)."""
    return {
        "outcome": str(report.outcome),
        "reason": report.reason,
        "steps": [],
        "deferred_until": fmt(report.deferred_until),
        "recheck_at": None,
        "forced": False,
        "by": "routing",
    }


# ---------------------------------------------------------------------------------------------
# Command

EXAMPLES = """
lifeboat explain events/rebalance-recommendation.json --cluster events/cluster.yaml \\
    --at 2026-12-01T14:05:00Z
lifeboat explain events/scheduled-change.json --cluster events/cluster.yaml --json
lifeboat explain events/*.json --cluster cluster.yaml --config-env production
lifeboat explain event.json --kubeconfig ~/.kube/config --context prod   # reads, changes nothing
"""


DESCRIPTION = (
    "Explain the decision about each (event, instance): the facts it was made on (notice, "
    "deadline, node, NodePool, budgets, disrupting nodes, do-not-disrupt, PDBs) and what "
    "carrying it out would do. The Lambda's own pipeline judges every notice in its batch, as "
    "replay does, on a disposable copy of the cluster: nothing in the cluster is changed."
)


def add_parser(commands: Any) -> None:
    parser = add_command(
        commands,
        "explain",
        summary="explain the decision about each (event, instance), changing nothing",
        description=DESCRIPTION,
        examples=EXAMPLES,
    )
    parser.add_argument("events", nargs="+", type=Path, metavar="EVENT_FILE")
    add_cluster_flags(
        parser,
        kubeconfig_help="a live cluster, read only: its Nodes, Pods, PDBs, NodePools, "
        "NodeClaims and workload controllers are listed once and copied onto the local "
        "emulator, where the pipeline runs",
    )
    add_at_flag(parser, "the clock to judge at (now)")
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    parser.add_argument(
        "--tz",
        metavar="ZONE",
        help="also show every instant in this IANA time zone (e.g. Europe/Madrid) and warn "
        "where a budget's UTC schedule moves by an hour twice a year there; the decision "
        "stays UTC's",
    )
    add_strict_flag(parser)
    add_settings_flags(parser)


def check_args(args: argparse.Namespace) -> None:
    if getattr(args, "tz", None) is not None:
        zone(args.tz)


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    tz = zone(args.tz) if getattr(args, "tz", None) is not None else None
    said_before = warnings_said()
    clock = SimulatedClock(args.at or datetime.now(UTC))
    # Each judged at --at, as if it arrived then (its deadline moved with it).
    arrivals = [arriving_at(clock.now, read_event_file(path)) for path in args.events]
    tool = tool_settings(args)
    rejected = failed = False
    with disposable_copy(args, tool) as (kube, directory, missing):
        tool.announce()
        observer = Observer(kube, clock.now)
        pipeline = local_pipeline(
            kube, directory, tool.one_cluster, clock, MemoryWakeups(), on_decision=observer
        )
        for file, shift in arrivals:
            # Its times moved to --at: how much, said beside what the message says.
            shifted_by = shift_text(shift) if shift else None
            for index, result in enumerate(pipeline.process(file.bodies)):
                origin = {
                    **file.origin(index),
                    "where": file.where(index),
                    "shifted_by": shifted_by,
                }
                entries = _entries(
                    file.bodies[index], result, observer, tool, clock.now, pipeline.reservations
                )
                for entry in entries:
                    entry = in_file_entry(entry, missing)
                    rejected |= entry["decision"]["outcome"] == str(Outcome.REJECTED)
                    if TYPO_HINT in (entry["decision"]["reason"] or ""):
                        warn(f"{file.where(index)}: {entry['decision']['reason']}")
                    failed |= entry["decision"]["outcome"] == RETRIED
                    if tz is not None:
                        entry = _in_zone(entry, tz, clock.now)
                    _emit({**origin, **entry}, args.json, out, tz)
    if failed:
        return EXIT_USAGE
    return strict_status(args, EXIT_REJECTED if rejected else EXIT_OK, said_before)


# An exception: the Lambda would return the message to the queue (not a contract outcome).
RETRIED = "retried"


def _entries(
    body: str,
    result: MessageResult,
    observer: Observer,
    tool: ToolSettings,
    at: datetime,
    reservations: ReservationDirectory | None = None,
) -> list[dict[str, Any]]:
    """One entry per notice of the message (one for a message rejected whole); an ending
    Capacity Block's notice is one per instance of the block, as the pipeline made them."""
    try:
        notices = find_instances(parse_message(body, received_at=at), reservations, {})
    except MalformedMessage:
        notices = []
    if result.error is not None:
        why = f"{result.error}; the message would go back to the queue"
        return [
            {**notice_facts(n, tool.settings, at), "node": None, "decision": _failed(why)}
            for n in notices
        ] or [{"event_id": None, "kind": "unsupported", "decision": _failed(why)}]
    if len(notices) != len(result.reports):  # a wake-up message, or the parse was rejected
        return [
            {
                "event_id": r.event_id,
                "kind": r.kind,
                "instance_id": r.instance_id,
                "rejected": r.outcome is Outcome.REJECTED,
                "decision": _routed(r),
            }
            for r in result.reports
        ]
    return [
        observer.entry(notice, report, notice_facts(notice, tool.settings, at))
        for notice, report in zip(notices, result.reports, strict=True)
    ]


def _failed(why: str) -> dict[str, Any]:
    return {
        "outcome": RETRIED,
        "reason": why,
        "steps": [],
        "deferred_until": None,
        "recheck_at": None,
        "forced": False,
        "by": "pipeline",
        "actions": [],
    }


@contextmanager
def disposable_copy(
    args: argparse.Namespace, tool: ToolSettings
) -> Iterator[tuple[KubeApi, InstanceDirectory, tuple[MissingKind, ...]]]:
    """A copy of the cluster to judge on, on the local emulator: the cluster file, or what
    a live cluster holds (read through the kubeconfig, never written); and the kinds the
    cluster file lacks (none for a live cluster: it is asked for every kind)."""
    # The copy holds the namespace of Lifeboat's Leases, as deploy/rbac.yaml makes sure a
    # cluster does (a live cluster's namespaces are not copied).
    namespace = tool.settings.lease_namespace
    if args.kubeconfig is None:
        with open_cluster(args.cluster, None, args.context) as source:
            assert source.emulator is not None
            source.emulator.ensure_namespace(namespace)
            directory = directory_from_objects(
                source.objects or (), tool.eks_cluster, tool.assumed_tags
            )
            yield source.kube, directory, source.missing
        return
    with open_cluster(None, args.kubeconfig, args.context) as live:
        objects = snapshot(live.kube)
    with serve(objects) as (emulator, kube):
        emulator.ensure_namespace(namespace)
        yield kube, directory_from_objects(objects, tool.eks_cluster, tool.assumed_tags), ()


def in_file_entry(entry: dict[str, Any], missing: tuple[MissingKind, ...]) -> dict[str, Any]:
    """An entry judged on a cluster file that lacks ``missing``: its reason says "not in the
    file" where it said "not found", and ``missing_kinds`` lists them (the text says "not in
    the file" where it would say "none")."""
    if not missing:
        return entry
    decision = dict(entry["decision"])
    decided = entry.get("node") is not None
    decision["reason"] = in_file_reason(decision["reason"] or "", missing, decided=decided)
    return {**entry, "decision": decision, "missing_kinds": kinds_of(missing)}


def _in_zone(entry: dict[str, Any], tz: ZoneInfo, at: datetime) -> dict[str, Any]:
    """``--tz``: the zone, and the schedules of the node's pool that move there."""
    budgets = (entry.get("pool") or {}).get("budgets") or []
    warnings = [shift_warning(b["index"], b.get("schedule"), tz, at) for b in budgets]
    return {**entry, "tz": tz.key, "tz_warnings": [w for w in warnings if w is not None]}


def _emit(entry: dict[str, Any], as_json: bool, out: TextIO, tz: ZoneInfo | None = None) -> None:
    if as_json:
        out.write(json.dumps(entry) + "\n")
        return
    if tz is None:
        render_text(entry, out)
        return
    text = io.StringIO()
    render_text(entry, text)
    body = annotate_instants(text.getvalue(), tz).rstrip("\n")
    for warning in entry.get("tz_warnings", []):
        body += f"\n  {tz.key}: warning: {warning}"
    out.write(body + "\n\n")
