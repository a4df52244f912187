"""``lifeboat replay``: events in, decisions out, on the emulator and a simulated clock."""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

from kubemu import Emulator, dump_cluster_file
from lifeboat.flow.pipeline import MessageResult, Pipeline
from lifeboat.karpenter.budgets import format_go_duration
from lifeboat.kube import nodes
from lifeboat.kube.client import KubeApi
from lifeboat.model.instances import InstanceDirectory
from lifeboat.model.instants import format_instant
from lifeboat.model.report import Outcome, Report
from lifeboat.wakeup.codec import MemoryWakeups, encode
from lifeboat_local import progress
from lifeboat_local.arrival import arriving_at
from lifeboat_local.common import (
    EXIT_INCOMPLETE,
    EXIT_OK,
    EXIT_REJECTED,
    EXIT_USAGE,
    ToolSettings,
    UsageError,
    add_at_flag,
    add_cluster_flags,
    add_command,
    add_settings_flags,
    add_strict_flag,
    check_output_file,
    note,
    read_event_file,
    strict_status,
    tool_settings,
    warn,
    warnings_said,
    write_output,
)
from lifeboat_local.directory import directory_from_objects
from lifeboat_local.event_times import schedule
from lifeboat_local.harness import RecordedLifecycle, SimulatedClock, local_pipeline
from lifeboat_local.karpenter_sim import KarpenterSimulation, SimStep
from lifeboat_local.partial import MissingKind, in_file_reason, kinds_of
from lifeboat_local.saved_statuses import SavedStatuses
from lifeboat_local.serve import add_serve_flags, serve
from lifeboat_local.source import live_directory, open_cluster
from lifeboat_local.timeline import WIDTH, Timeline

# What a reason says when the name given is most likely a typo of a known one.
TYPO_HINT = "(did you mean "

__all__ = ["RecordedLifecycle", "SimulatedClock", "add_parser", "check_args", "run"]

# A replay stops after this many steps of its clock (wake-up batches, simulated Karpenter
# work), so a loop in the policy or the simulation cannot hang it; stopping is a warning and
# EXIT_INCOMPLETE, never silent.
MAX_FOLLOW_STEPS = 10_000
# The simulated Karpenter polls while pods wait for a place (a pod a PDB or do-not-disrupt
# holds on a draining node waits forever when the claim has no terminationGracePeriod, as it
# would on a live cluster). Once it has done nothing for this long, the replay stops
# following its polls and moves on to Lifeboat's next wake-up, or ends.
SIMULATION_QUIET = timedelta(minutes=15)

EXAMPLES = """
lifeboat replay events/*.json --cluster events/cluster.yaml --at 2026-12-01T14:05:00Z
lifeboat replay events/scheduled-change.json --cluster events/cluster.yaml --follow
lifeboat replay events/sqs/spot-interruption.json --cluster cluster.yaml --json
lifeboat replay events/*.json --cluster cluster.yaml --config-env production
LIFEBOAT_KIND_ACTIONS=rebalance-recommendation=cordon lifeboat replay ev.json --cluster c.yaml
lifeboat replay ev.json --kubeconfig ~/.kube/config                   # dry run, live cluster
lifeboat replay ev.json --kubeconfig ~/.kube/config --apply           # acts on it
"""


def add_parser(commands: Any) -> None:
    """Every flag of ``replay``, in this one place."""
    parser = add_command(
        commands,
        "replay",
        summary="replay events against a cluster file on the local emulator",
        description="Replay AWS events (EventBridge events, SQS batch events, raw lifecycle "
        "hook messages) through the Lambda's own pipeline against a cluster: each file one "
        "batch, against one cluster state, at its event's time relative to the first (the "
        "simulation running between them; --same-instant: all at --at). One line per "
        "decision (--json: one object).",
        examples=EXAMPLES,
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
    add_at_flag(
        parser,
        "the clock for windows, budgets and deadlines (default: now): the first event is "
        "handled then, every later one at its offset from the first event's time",
    )
    parser.add_argument(
        "--same-instant",
        action="store_true",
        help="handle every event at --at, whatever its time (what if all of these arrived now)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="one JSON object per line, per (event, instance); adds file and record (the "
        "index in an SQS batch) to the documented fields",
    )
    parser.add_argument(
        "--state-out", type=Path, metavar="FILE", help="write the cluster after the replay, as YAML"
    )
    parser.add_argument(
        "--follow",
        action="store_true",
        help="advance the clock through all deferred work until none is left, with a small "
        "Karpenter simulation launching replacements and removing nodes; prints a timeline",
    )
    _add_display_flags(parser)
    add_strict_flag(parser)
    add_settings_flags(parser)
    add_serve_flags(parser)


def _add_display_flags(parser: argparse.ArgumentParser) -> None:
    """How a long replay shows itself: --wide rows, --progress on stderr."""
    parser.add_argument(
        "--wide",
        action="store_true",
        help=f"with --follow: one line per row, however long (default: wrap at {WIDTH})",
    )
    progress.add_flag(parser)


def check_args(args: argparse.Namespace) -> None:
    """Combinations argparse cannot express, and outputs that cannot be written: a usage
    error (exit 1) before any work."""
    if args.wide and not args.follow:
        raise UsageError("replay: --wide goes with --follow (without it, lines are not wrapped)")
    if args.serve != (args.kubeconfig_out is not None):
        raise UsageError("replay: --serve and --kubeconfig-out go together")
    if args.serve and args.kubeconfig is not None:
        raise UsageError("replay: --serve serves the replayed cluster file; not with --kubeconfig")
    if args.kubeconfig is None:
        if args.apply:
            raise UsageError("replay: --apply is only for --kubeconfig")
        if args.state_out is not None:
            check_output_file("--state-out", args.state_out)
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


class _Output:
    """Streams ``--json`` lines; collects the timeline's rows and lays them out at the end."""

    def __init__(self, args: argparse.Namespace, out: TextIO) -> None:
        self.json, self.follow, self.out = args.json, args.follow, out
        self.timeline = Timeline(timed=args.follow, width=None if args.wide else WIDTH)
        self.rejected = self.failed = False
        # A dry run (--kubeconfig without --apply, or the settings' dry run): records say
        # so ("dry_run": true), and text says "would act" where nothing was done.
        self.dry_run = False
        # The kinds the cluster file lacks: answers that depend on them say so.
        self.missing: tuple[MissingKind, ...] = ()

    def result(
        self, result: MessageResult, at: datetime, origin: dict[str, Any] | None, where: str = ""
    ) -> None:
        for report in result.reports:
            report = self._in_file(report)
            self.rejected |= report.outcome is Outcome.REJECTED
            if report.outcome is Outcome.IGNORED and TYPO_HINT in report.reason:
                warn(f"{where or 'wake-up'}: {report.reason}")
            if self.json:
                line = report.to_json()
                line.update(origin or {"at": format_instant(at)})
                if self.dry_run:
                    line["dry_run"] = True
                if self.missing:
                    line["missing_kinds"] = kinds_of(self.missing)
                self.out.write(json.dumps(line) + "\n")
            else:
                self.timeline.report(report, at, where, dry_run=self.dry_run)
        if result.error is not None:
            self.failed = True
            print(f"lifeboat: error: {where or 'wake-up'}: {result.error}", file=sys.stderr)

    def _in_file(self, report: Report) -> Report:
        """The report as an answer from a file that lacks ``missing``: says so."""
        if not self.missing:
            return report
        decided = report.node is not None
        return replace(report, reason=in_file_reason(report.reason, self.missing, decided=decided))

    def step(self, step: SimStep) -> None:
        if not self.json:  # --json stays one object per (event, instance)
            self.timeline.step(step)

    def finish(self) -> int:
        for line in self.timeline.lines():
            self.out.write(printable(line) + "\n")
        self.out.flush()
        if self.failed:
            return EXIT_USAGE
        return EXIT_REJECTED if self.rejected else EXIT_OK


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """``lifeboat replay``."""
    # sys.stdout as it is when called (a default bound at import misses redirections).
    output = _Output(args, out or sys.stdout)
    said_before = warnings_said()
    files = [read_event_file(path) for path in args.events]
    start = args.at or datetime.now(UTC)
    timeline = schedule(files, start, same_instant=getattr(args, "same_instant", False))
    # Rows (and --json records) carry their instant when events are handled at several.
    spread = len({when for when, _ in timeline}) > 1
    output.timeline.timed |= spread
    clock = SimulatedClock(start)
    wakeups = MemoryWakeups()
    with replay_target(args) as (emulator, kube, directory, tool, missing):
        output.missing = missing
        tool.announce()
        output.dry_run = tool.settings.dry_run
        pipeline = local_pipeline(kube, directory, tool.one_cluster, clock, wakeups)
        # Saved DescribeInstanceStatus answers go through the Lambda's own sweep.
        saved = SavedStatuses()
        pipeline.statuses = saved
        pipeline.capacity_reservations = saved.reservations
        # No Karpenter to simulate on a live cluster (--kubeconfig): the real one runs there.
        # Built before the first event, so that it knows the pods Lifeboat may evict (the
        # workload controllers it plays recreate them).
        karpenter = KarpenterSimulation(emulator, clock.now) if emulator is not None else None
        if emulator is not None:
            emulator.clock.set(clock.now, frozen=True)  # pods terminate on replay time
        runner = _Runner(clock, wakeups, pipeline, karpenter, emulator, output)
        if progress.wanted(getattr(args, "progress", False), sys.stderr):
            runner.progress = progress.Progress(sys.stderr)
        for when, original in timeline:
            runner.run_until(when)  # the simulation runs between two events
            file, _ = arriving_at(when, original)  # its deadline kept from ``when``
            bodies = [saved.sweep_body(body) for body in file.bodies]
            for index, result in enumerate(pipeline.process(bodies)):
                origin = file.origin(index)
                if spread:
                    origin = {**origin, "at": format_instant(clock.now)}
                output.result(result, clock.now, origin, file.where(index))
        if args.follow:
            runner.run_until(None)
        if runner.progress is not None:
            runner.progress.report(clock.now, runner.steps, emulator, last=True)
            runner.progress.finish()
        status = output.finish()
        status = strict_status(args, status, said_before)
        if runner.limit_hit is not None:
            print(f"lifeboat: warning: {runner.limit_hit}", file=sys.stderr)
            status = EXIT_INCOMPLETE
        if args.state_out and emulator is not None:
            state = emulator.dump()
            write_output("--state-out", args.state_out, lambda path: dump_cluster_file(state, path))
        if args.serve and emulator is not None:
            emulator.clock.set(clock.now)  # time flows again for whoever inspects it
            serve(emulator, args.kubeconfig_out, "the replayed cluster", output.out)
    return status


class _Runner:
    """Moves the simulated clock through Lifeboat's wake-ups and the simulated Karpenter's
    work, up to an instant (the next event) or until nothing is pending (``--follow``),
    within ``MAX_FOLLOW_STEPS`` for the whole replay: never silently (``limit_hit``)."""

    def __init__(
        self,
        clock: SimulatedClock,
        wakeups: MemoryWakeups,
        pipeline: Pipeline,
        karpenter: KarpenterSimulation | None,
        emulator: Emulator | None,
        output: _Output,
    ) -> None:
        self.clock, self.wakeups, self.pipeline = clock, wakeups, pipeline
        self.karpenter, self.emulator, self.output = karpenter, emulator, output
        self.steps = 0
        self.last_activity = clock.now
        self.limit_hit: str | None = None
        # What was done, to name the loop when the limit is hit.
        self.done: Counter[str] = Counter()
        self.progress: progress.Progress | None = None  # --progress (or stderr a terminal)

    def run_until(self, until: datetime | None) -> None:
        """Everything due before ``until`` (None: until nothing is pending), then the
        clock at ``until``."""
        while self.limit_hit is None:
            due = self._next_due(until)
            if due is None or (until is not None and due > until):
                break
            if self.steps >= MAX_FOLLOW_STEPS:
                self.limit_hit = self._limit_text(due)
                break
            self.steps += 1
            self._step(due)
        if until is not None and until > self.clock.now:
            self._step(until)
        if until is None and self.limit_hit is None:
            self._say_unsettled()

    def _say_unsettled(self) -> None:
        """The simulation is left while it still polls (a pod a PDB or do-not-disrupt holds
        on a draining node waits forever, as on a live cluster): said, with the nodes."""
        if self.karpenter is None or self.karpenter.next_due() is None or self.emulator is None:
            return
        draining = sorted(
            str((claim.get("status") or {}).get("nodeName") or nodes.name_of(claim))
            for claim in self.emulator.view("NodeClaim")
            if nodes.is_deleting(claim)
        )
        where = f" (still draining: {', '.join(draining)})" if draining else ""
        note(
            f"--follow stopped at {format_instant(self.clock.now)}: the simulated Karpenter "
            f"made no progress for {format_go_duration(SIMULATION_QUIET)}{where}; what is "
            "left waits on something only time or an operator changes (a PDB, do-not-disrupt)"
        )

    def _next_due(self, until: datetime | None) -> datetime | None:
        due = self.wakeups.next_due()
        quiet = self.clock.now - self.last_activity >= SIMULATION_QUIET
        # Before an instant, moving the clock there plays the simulation's work up to it.
        if self.karpenter is not None and until is None and not quiet:
            # Follow the simulated cluster too, until it settles: the hand-over (drain,
            # pods moving, the old node removed) plays out after Lifeboat's last step.
            simulated = self.karpenter.next_due()
            due = min((d for d in (due, simulated) if d is not None), default=None)
        return due

    def _step(self, due: datetime) -> None:
        clock = self.clock
        clock.now = max(clock.now, due)
        if self.emulator is not None:
            self.emulator.clock.set(clock.now, frozen=True)
        for step in self.karpenter.advance(clock.now) if self.karpenter is not None else ():
            self.output.step(step)
            self.done[f"the simulated Karpenter's {step.action}"] += 1
            self.last_activity = clock.now
        if self.karpenter is not None and self.karpenter.limit_hit:
            self.limit_hit = (
                f"the simulated Karpenter made {self.karpenter.limit_hit} passes at "
                f"{format_instant(clock.now)} without settling; the replay stopped there"
            )
        batch = self.wakeups.pop_due(clock.now)
        if batch:
            self.last_activity = clock.now
        for wakeup in batch:
            self.done[f"Lifeboat's {wakeup.task} wake-up"] += 1
        for result in self.pipeline.process([encode(w) for w in batch]):
            self.output.result(result, clock.now, None)
        if self.progress is not None:
            self.progress.report(clock.now, self.steps, self.emulator)

    def _limit_text(self, due: datetime) -> str:
        loop = ", ".join(f"{what} {count} times" for what, count in self.done.most_common(3))
        return (
            f"replay stopped after {MAX_FOLLOW_STEPS} steps with work still due at "
            f"{format_instant(due)}: the output is incomplete; the loop: {loop or 'none'}"
        )


# ---------------------------------------------------------------------------------------------
# Where the replay runs (kept apart, so it merges easily with other work on replay)


@contextmanager
def replay_target(
    args: argparse.Namespace,
) -> Iterator[
    tuple[Emulator | None, KubeApi, InstanceDirectory, ToolSettings, tuple[MissingKind, ...]]
]:
    """(emulator, kube client, instance directory, settings, kinds the file lacks) for the
    replay.

    ``--cluster``: the cluster file on the emulator; instances from the file; acting for real
    on the emulated cluster (unless the settings say dry run). ``--kubeconfig``: a live
    cluster (emulator None); instances from one list of its Nodes and NodeClaims (no EC2
    access assumed); a dry run unless ``--apply``.
    """
    kubeconfig = getattr(args, "kubeconfig", None)
    live = kubeconfig is not None
    tool = tool_settings(args, dry_run=not getattr(args, "apply", False) if live else None)
    with open_cluster(args.cluster, kubeconfig, getattr(args, "context", None)) as source:
        if source.emulator is None:
            directory = live_directory(source.kube, tool.eks_cluster, tool.assumed_tags)
        else:
            objects = source.objects or ()
            directory = directory_from_objects(objects, tool.eks_cluster, tool.assumed_tags)
            # deploy/rbac.yaml creates the Leases' namespace in a real cluster.
            source.emulator.ensure_namespace(tool.settings.lease_namespace)
        yield source.emulator, source.kube, directory, tool, source.missing


# C0 and C1 control characters (ESC starts a terminal's escape sequences) and DEL.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` with every control character shown as ``\\xNN``: what a message or a
    cluster file says (an event's detail, a reason) reaches the terminal as text, never as
    an escape sequence."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m[0]):02x}", text)
