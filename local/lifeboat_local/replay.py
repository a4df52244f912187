"""``lifeboat replay``: events in, decisions out, on the emulator and a simulated clock."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TextIO

from kubemu import Emulator, dump_cluster_file, load_cluster_file
from lifeboat.events.notice import LifecycleHook
from lifeboat.instances import InstanceDirectory
from lifeboat.kube import KubeApi, RetryPolicy
from lifeboat.ledger import MemoryLedger
from lifeboat.pipeline import OneCluster, Pipeline
from lifeboat.report import Outcome, Report
from lifeboat.settings import Settings
from lifeboat.wakeup import MemoryWakeups, encode
from lifeboat_local.cli import EXIT_OK, EXIT_REJECTED, EXIT_USAGE, UsageError, read_event_file
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


def replay(args: argparse.Namespace, out: TextIO | None = None) -> int:
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
        for bodies in bodies_per_file:
            for result in pipeline.process(bodies):
                for report in result.reports:
                    any_rejected |= report.outcome is Outcome.REJECTED
                    _print(report, args.json, out)
                if result.error is not None:
                    failed = True
                    print(f"lifeboat: error: {result.error}", file=sys.stderr)
        # No Karpenter to simulate on a live cluster (--kubeconfig): the real one runs there.
        karpenter = KarpenterSimulation(emulator, clock.now) if emulator is not None else None
        for _ in range(MAX_FOLLOW_STEPS if args.follow else 0):
            due = wakeups.next_due()
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
    if kubeconfig is not None:
        with open_cluster(None, kubeconfig, getattr(args, "context", None)) as live:
            directory = live_directory(live.kube)
            settings = Settings(dry_run=not getattr(args, "apply", False))
            yield None, live.kube, directory, settings
        return
    try:
        objects = load_cluster_file(args.cluster)
    except (OSError, ValueError) as error:
        raise UsageError(f"--cluster {args.cluster}: {error}") from None
    with Emulator(objects) as emulator:
        kube = KubeApi(emulator.api_client(), RetryPolicy(attempts=2, base_delay=0.01))
        yield emulator, kube, directory_from_objects(objects), Settings()
