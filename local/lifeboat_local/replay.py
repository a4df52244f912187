"""``lifeboat replay``: events in, decisions out, on the emulator and a simulated clock."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from kubemu import Emulator, dump_cluster_file
from lifeboat.events.notice import LifecycleHook
from lifeboat.instances import InstanceDirectory
from lifeboat.instants import format_instant
from lifeboat.kube import KubeApi
from lifeboat.ledger import MemoryLedger
from lifeboat.pipeline import OneCluster, Pipeline
from lifeboat.report import Outcome, Report
from lifeboat.settings import Settings
from lifeboat.wakeup import MemoryWakeups, encode
from lifeboat_local.common import (
    EXIT_OK,
    EXIT_REJECTED,
    EXIT_USAGE,
    UsageError,
    add_at_flag,
    add_cluster_flags,
    read_event_file,
)
from lifeboat_local.directory import directory_from_objects
from lifeboat_local.karpenter_sim import KarpenterSimulation
from lifeboat_local.source import live_directory, open_cluster

# --follow stops after this many wake-up batches, so a loop in the policy cannot hang it.
MAX_FOLLOW_STEPS = 10_000


@dataclass
class SimulatedClock:
    """The replay's "now": fixed unless ``--follow`` moves it to the next wake-up."""

    now: datetime

    def __call__(self) -> datetime:
        return self.now


@dataclass
class RecordedLifecycle:
    """Stands in for Auto Scaling: remembers what would have been sent."""

    calls: list[tuple[str, str, str]] = field(default_factory=list)

    def complete(self, hook: LifecycleHook, result: str = "CONTINUE") -> None:
        self.calls.append(("complete", hook.instance_id, result))

    def heartbeat(self, hook: LifecycleHook) -> None:
        self.calls.append(("heartbeat", hook.instance_id, ""))


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "replay", help="replay events against a cluster file on the local emulator"
    )
    parser.add_argument("events", nargs="+", type=Path, metavar="EVENT_FILE")
    add_cluster_flags(
        parser,
        kubeconfig_help="a live cluster: a dry run (nothing changed) unless --apply. No EC2 "
        "access is assumed, so the instances are found by listing the cluster's Nodes and "
        "NodeClaims once (fine for an operator tool; the Lambda never lists the cluster)",
    )
    parser.add_argument(
        "--apply",
        action="store_true",
        help="with --kubeconfig: really taint, cordon, create and delete NodeClaims, evict. "
        "Auto Scaling lifecycle actions are only reported (no AWS access)",
    )
    add_at_flag(parser, "the clock for windows, budgets and deadlines (default: now)")
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    parser.add_argument(
        "--state-out", type=Path, metavar="FILE", help="write the cluster after the replay, as YAML"
    )
    parser.add_argument(
        "--follow",
        action="store_true",
        help="advance the clock through all deferred work until none is left",
    )


def check_args(args: argparse.Namespace) -> None:
    """Combinations argparse cannot express: a usage error (exit 1)."""
    if args.kubeconfig is None:
        if args.apply:
            raise UsageError("replay: --apply is only for --kubeconfig")
        return
    if args.state_out is not None:
        raise UsageError("replay: --state-out is only for --cluster (a live cluster is not dumped)")
    if args.apply and args.at is not None:
        raise UsageError(
            "replay: --apply acts on a live cluster now; --at would judge budgets and windows "
            "at another time (use --at without --apply for a what-if)"
        )
    if args.apply and args.follow:
        raise UsageError(
            "replay: --follow moves a simulated clock ahead, which would act on a live "
            "cluster before windows open; not allowed with --apply"
        )


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """``lifeboat replay``."""
    # sys.stdout as it is when called (a default bound at import misses redirections).
    out = out or sys.stdout
    bodies_per_file = [read_event_file(path) for path in args.events]
    clock = SimulatedClock(args.at or datetime.now(UTC))
    wakeups = MemoryWakeups()
    any_rejected = failed = False
    with replay_target(args) as (emulator, kube, directory, settings):
        pipeline = Pipeline(
            clusters=OneCluster(kube),
            directory=directory,
            settings=settings,
            clock=clock,
            lifecycle=RecordedLifecycle(),
            wakeups=wakeups,
            ledger=MemoryLedger(),
        )
        # No Karpenter to simulate on a live cluster (--kubeconfig): the real one runs there.
        # Built before the first event, so that it knows the pods Lifeboat may evict.
        karpenter = KarpenterSimulation(emulator, clock.now) if emulator is not None else None
        for bodies in bodies_per_file:
            for result in pipeline.process(bodies):
                for report in result.reports:
                    any_rejected |= report.outcome is Outcome.REJECTED
                    _print(report, args.json, out)
                if result.error is not None:
                    failed = True
                    print(f"lifeboat: error: {result.error}", file=sys.stderr)
        for _ in range(MAX_FOLLOW_STEPS if args.follow else 0):
            due = wakeups.next_due()
            if karpenter is not None:
                # Follow the simulated cluster too, until it settles: the hand-over (drain,
                # pods moving, the old node removed) plays out after Lifeboat's last step.
                simulated = karpenter.next_due()
                due = min((d for d in (due, simulated) if d is not None), default=None)
            if due is None:
                break
            clock.now = max(clock.now, due)
            if karpenter is not None:
                karpenter.advance(clock.now)
            batch = [encode(w) for w in wakeups.pop_due(clock.now)]
            for result in pipeline.process(batch):
                for report in result.reports:
                    _print(report, args.json, out, at=clock.now)
                if result.error is not None:
                    failed = True
                    print(f"lifeboat: error: {result.error}", file=sys.stderr)
        if args.state_out and emulator is not None:
            try:
                dump_cluster_file(emulator.dump(), args.state_out)
            except OSError as error:
                why = error.strerror or error
                raise UsageError(f"--state-out {args.state_out}: {why}") from None
    if failed:
        return EXIT_USAGE
    return EXIT_REJECTED if any_rejected else EXIT_OK


def _print(report: Report, as_json: bool, out: TextIO, at: datetime | None = None) -> None:
    if as_json:
        line = report.to_json()
        if at is not None:
            line["at"] = format_instant(at)
        out.write(json.dumps(line) + "\n")
        return
    out.write(format_report(report, at) + "\n")


def format_report(report: Report, at: datetime | None = None) -> str:
    """One readable line: when (with --follow), outcome, kind, instance, node, actions, why."""
    parts = []
    if at is not None:
        parts.append(format_instant(at))
    parts.append(f"{report.outcome!s:<8}")
    parts.append(f"{report.kind:<24}")
    parts.append(report.instance_id or "-")
    if report.node:
        parts.append(f"{report.node}" + (f" ({report.nodepool})" if report.nodepool else ""))
    if report.actions:
        parts.append("[" + ", ".join(_action_text(a) for a in report.actions) + "]")
    if report.deferred_until:
        parts.append(f"until {format_instant(report.deferred_until)}")
    return "  ".join(parts) + f"  -- {report.reason}"


def _action_text(action: dict[str, object]) -> str:
    detail = action.get("name") or action.get("key") or action.get("pod") or ""
    return f"{action['type']} {detail}".strip()


# ---------------------------------------------------------------------------------------------
# Where the replay runs (kept apart, so it merges easily with other work on replay)


@contextmanager
def replay_target(
    args: argparse.Namespace,
) -> Iterator[tuple[Emulator | None, KubeApi, InstanceDirectory, Settings]]:
    """(emulator, kube client, instance directory, settings) for the replay.

    ``--cluster``: the cluster file on the emulator; instances from the file; acting for real
    on the emulated cluster. ``--kubeconfig``: a live cluster (emulator None); instances from
    one list of its Nodes and NodeClaims (no EC2 access assumed); a dry run unless ``--apply``.
    """
    kubeconfig = getattr(args, "kubeconfig", None)
    with open_cluster(args.cluster, kubeconfig, getattr(args, "context", None)) as source:
        if source.emulator is None:
            settings = Settings(dry_run=not getattr(args, "apply", False))
            yield None, source.kube, live_directory(source.kube), settings
        else:
            directory = directory_from_objects(source.objects or ())
            yield source.emulator, source.kube, directory, Settings()
