"""``lifeboat replay``: events in, decisions out, on the emulator and a simulated clock."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TextIO

from lifeboat.events.notice import LifecycleHook
from lifeboat.kube import KubeApi, RetryPolicy
from lifeboat.pipeline import MemoryLedger, OneCluster, Pipeline
from lifeboat.report import Outcome, Report
from lifeboat.settings import Settings
from lifeboat.wakeup import MemoryWakeups, encode
from lifeboat_local.cli import EXIT_OK, EXIT_REJECTED, EXIT_USAGE, UsageError, read_event_file
from lifeboat_local.directory import directory_from_objects
from lifeboat_local.kubemu import Emulator, dump_cluster_file, load_cluster_file


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


def replay(args: argparse.Namespace, out: TextIO = sys.stdout) -> int:
    try:
        objects = load_cluster_file(args.cluster)
    except (OSError, ValueError) as error:
        raise UsageError(f"--cluster {args.cluster}: {error}") from None
    bodies_per_file = [read_event_file(path) for path in args.events]
    clock = SimulatedClock(args.at or datetime.now(UTC))
    wakeups = MemoryWakeups()
    any_rejected = failed = False
    with Emulator(objects) as emulator:
        pipeline = Pipeline(
            clusters=OneCluster(
                KubeApi(emulator.api_client(), RetryPolicy(attempts=2, base_delay=0.01))
            ),
            directory=directory_from_objects(objects),
            settings=Settings(),
            clock=clock,
            lifecycle=RecordedLifecycle(),
            wakeups=wakeups,
            ledger=MemoryLedger(),
        )
        for bodies in bodies_per_file:
            for result in pipeline.process(bodies):
                for report in result.reports:
                    any_rejected |= report.outcome is Outcome.REJECTED
                    _print(report, args.json, out)
                if result.error is not None:
                    failed = True
                    print(f"lifeboat: error: {result.error}", file=sys.stderr)
        while args.follow and (due := wakeups.next_due()) is not None:
            clock.now = max(clock.now, due)
            batch = [encode(w) for w in wakeups.pop_due(clock.now)]
            for result in pipeline.process(batch):
                for report in result.reports:
                    _print(report, args.json, out, at=clock.now)
                if result.error is not None:
                    failed = True
                    print(f"lifeboat: error: {result.error}", file=sys.stderr)
        if args.state_out:
            dump_cluster_file(emulator.dump(), args.state_out)
    if failed:
        return EXIT_USAGE
    return EXIT_REJECTED if any_rejected else EXIT_OK


def _print(report: Report, as_json: bool, out: TextIO, at: datetime | None = None) -> None:
    if as_json:
        line = report.to_json()
        if at is not None:
            line["at"] = at.strftime("%Y-%m-%dT%H:%M:%SZ")
        out.write(json.dumps(line) + "\n")
        return
    out.write(format_report(report, at) + "\n")


def format_report(report: Report, at: datetime | None = None) -> str:
    """One readable line: when (with --follow), outcome, kind, instance, node, actions, why."""
    parts = []
    if at is not None:
        parts.append(at.strftime("%Y-%m-%dT%H:%M:%SZ"))
    parts.append(f"{report.outcome!s:<8}")
    parts.append(f"{report.kind:<24}")
    parts.append(report.instance_id or "-")
    if report.node:
        parts.append(f"{report.node}" + (f" ({report.nodepool})" if report.nodepool else ""))
    if report.actions:
        parts.append("[" + ", ".join(_action_text(a) for a in report.actions) + "]")
    if report.deferred_until:
        parts.append(f"until {report.deferred_until.strftime('%Y-%m-%dT%H:%M:%SZ')}")
    return "  ".join(parts) + f"  -- {report.reason}"


def _action_text(action: dict[str, object]) -> str:
    detail = action.get("name") or action.get("key") or action.get("pod") or ""
    return f"{action['type']} {detail}".strip()
