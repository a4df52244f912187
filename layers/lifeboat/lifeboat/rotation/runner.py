"""The rotation's share of the pipeline: its commands, its looks, and its nodes' wake-ups.

The pipeline hands over what concerns rotations (``lifeboat.flow.classify.for_rotation``)
and lends its own triage, resolve, decide and act for the nodes (``NodeHandling``): a
rotated node is decided and acted on exactly as an AWS warning about it would be.

Which wake-ups of a node's notice pass through here, and why:

- a deferred decision (``decide``): only a ``running`` rotation lets it act; a paused one
  holds it (decided again every five minutes until resumed); a cancelled, failed or
  replaced one lets the node go (its waiting mark cleared);
- a drain PodDisruptionBudgets held back (``continue-drain``): it goes on while the
  rotation is active (a node out of service finishes), and stops once it was cancelled or
  failed (the node stays cordoned, reported), rather than retrying evictions for ever;
- a when-ready hand-over (``hand-over``) goes on unless the rotation was rolled back: the
  rollback cancelled it, and the old claim is kept;
- finishing a replacement is not held: deleting the old claim once its replacement is Ready
  is how a node already out of service finishes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import Protocol

from lifeboat.decide import Decision
from lifeboat.decide.origin import foreign_origin
from lifeboat.errors import BrokenInvariant
from lifeboat.kube.client import KubeApi
from lifeboat.model.ledger import Ledger
from lifeboat.model.notice import Kind, Notice
from lifeboat.model.report import Outcome, Report
from lifeboat.model.settings import Settings
from lifeboat.model.target import Target
from lifeboat.rotation import observe, plan, rollback, store
from lifeboat.rotation.look import (
    Context,
    change_report,
    look,
    node_notice,
    record_changes,
    release,
    schedule_look,
)
from lifeboat.rotation.model import NodePhase, Phase, Rotation, StateError
from lifeboat.rotation.request import RotationCommand, Verb
from lifeboat.wakeup.codec import Task, Wakeup, WakeupSink


class NodeHandling(Protocol):
    """What the pipeline lends a rotation for its nodes."""

    def decide(self, notices: list[Notice]) -> list[Report]:
        """New notices: triage, resolve, decide and act, as for an AWS event's notices."""
        ...

    def wake(self, wakeup: Wakeup) -> Report:
        """A node's wake-up (a deferred decision, a held-back drain), as any wake-up."""
        ...

    def let_go(
        self, kube: KubeApi, notice: Notice, target: Target, decision: Decision, now: datetime
    ) -> None:
        """Carry out ``decision`` (a node let go: its waiting mark cleared) at ``now``."""
        ...


class RotationRunner:
    def __init__(
        self,
        *,
        kube_for: Callable[[str | None], KubeApi],
        settings: Settings,
        clock: Callable[[], datetime],
        nodes: NodeHandling,
        describe: observe.Describe,
        wakeups: WakeupSink | None = None,
        ledger: Ledger | None = None,
        serves: Callable[[str | None], bool] | None = None,
    ) -> None:
        self._kube_for = kube_for
        # Clusters served by their tag (lifeboat.aws.discovery); None: settings.clusters decide.
        self._serves = serves
        self._settings = settings
        self._clock = clock
        self._nodes = nodes
        self._describe = describe
        self._wakeups = wakeups
        self._ledger = ledger

    def handle(self, item: RotationCommand | Wakeup) -> list[Report]:
        if isinstance(item, RotationCommand):
            return self._command(item)
        reports = self._look(item) if item.task is Task.ROTATE else [self._node_wakeup(item)]
        return [replace(report, wakeup=str(item.task)) for report in reports]

    def _look(self, wakeup: Wakeup) -> list[Report]:
        name, request_id = wakeup.notice.detail, wakeup.notice.event_id
        try:
            return look(self._context(wakeup.cluster), name, request_id)
        except StateError as error:
            why = f"rotation {name}: state unreadable: {error}; fix or delete its ConfigMap"
            return [Report(request_id, str(Kind.ROTATION), Outcome.IGNORED, why)]

    # -- commands ------------------------------------------------------------------------------

    def _command(self, command: RotationCommand) -> list[Report]:
        problem = self._refusal(command)
        if problem is not None:
            return [problem]
        if self._ledger is None:
            return self._carry_out(command)
        extra: list[Report] = []

        def once() -> Report:
            reports = self._carry_out(command)
            extra.extend(reports[1:])
            return reports[0]

        first = self._ledger.once(command.dedup_key, once)
        if first is None:
            return [_report(command, Outcome.IGNORED, "duplicate delivery: already handled")]
        return [first, *extra]

    def _refusal(self, command: RotationCommand) -> Report | None:
        """The checks every message passes: origin, and a cluster this stack manages."""
        foreign = foreign_origin(command.notice(), self._settings)
        if foreign is not None:
            return _report(command, Outcome.REJECTED, foreign)
        if self._serves is not None:
            if command.cluster is None:
                why = "detail.cluster: required, this stack serves the clusters tagged for it"
                return _report(command, Outcome.REJECTED, why)
            if not self._serves(command.cluster):
                why = f"rotation for cluster {command.cluster}, not managed here"
                return replace(_report(command, Outcome.IGNORED, why), unmanaged=True)
            return None
        clusters = self._settings.clusters
        if command.cluster is None and len(clusters) > 1:
            why = f"detail.cluster: required, this stack manages {len(clusters)} clusters"
            return _report(command, Outcome.REJECTED, why)
        if command.cluster is not None and clusters and command.cluster not in clusters:
            why = f"rotation for cluster {command.cluster}, not managed here"
            return replace(_report(command, Outcome.IGNORED, why), unmanaged=True)
        return None

    def _carry_out(self, command: RotationCommand) -> list[Report]:
        ctx = self._context(command.cluster)
        try:
            if command.verb is Verb.REQUEST:
                return self._request(ctx, command)
            return self._control(ctx, command)
        except StateError as error:
            return [_report(command, Outcome.IGNORED, f"rotation state unreadable: {error}")]

    def _request(self, ctx: Context, command: RotationCommand) -> list[Report]:
        spec = command.spec
        if spec is None:
            raise BrokenInvariant("lifeboat.rotation.runner._request: spec is None")
        existing = store.load(ctx.kube, ctx.namespace, spec.name)
        if existing is not None:
            old = existing.rotation
            if old.request_id == command.event_id:
                # With a ledger that did not find the command done, an earlier receipt
                # created the rotation and then failed (issue 33.4): this one continues, it
                # is no duplicate of a command that completed.
                why = "duplicate delivery: already handled"
                if self._ledger is not None:
                    why = (
                        f"continuing: rotation {spec.name} was already created by an earlier "
                        "receipt of this request"
                    )
                return [_report(command, Outcome.IGNORED, why)]
            if old.phase.active:
                why = (
                    f"rotation {spec.name} exists and is {old.phase} (requested by event "
                    f"{old.request_id}): pause or cancel it first, or choose another name"
                )
                return [_report(command, Outcome.IGNORED, why)]
        selected = observe.select(ctx.kube, spec, self._describe)
        if not selected:
            why = f"rotation {spec.name}: no node matches {spec.describe_selector()}: nothing to do"
            return [_report(command, Outcome.IGNORED, why)]
        rotation = Rotation(spec, command.event_id, command.event_time, tuple(selected))
        what = (
            f"rotation {spec.name} requested: {len(selected)} node(s) selected by "
            f"{spec.describe_selector()}; at most {spec.max_in_flight} in flight, health gate "
            f"{int(spec.health_timeout.total_seconds())}s"
        )
        if self._settings.dry_run:
            return self._dry_run(rotation, what, command)
        stamped = store.stamped(rotation, ctx.now)
        stored = (
            store.save(ctx.kube, ctx.namespace, existing, stamped)
            if existing is not None
            else store.create(ctx.kube, ctx.namespace, stamped)
        )
        if stored is None:  # another delivery created it between our read and write
            return [_report(command, Outcome.IGNORED, "being requested by another delivery")]
        requested = plan.Change("RotationRequested", what.removeprefix(f"rotation {spec.name} "))
        record_changes(ctx, rotation, [requested])
        return [_report(command, Outcome.ACTED, what), *look(ctx, spec.name, command.event_id)]

    def _dry_run(self, rotation: Rotation, what: str, command: RotationCommand) -> list[Report]:
        """What the first look would hand over, decided without changing anything."""
        now = self._clock()
        first = rotation.nodes[: rotation.spec.max_in_flight]
        order = ", ".join(node.name for node in rotation.nodes)
        report = _report(command, Outcome.ACTED, f"dry run, nothing changed: {what} ({order})")
        return [report, *self._nodes.decide([node_notice(rotation, n, now) for n in first])]

    def _control(self, ctx: Context, command: RotationCommand) -> list[Report]:
        name = command.name
        if store.load(ctx.kube, ctx.namespace, name) is None:
            return [_report(command, Outcome.IGNORED, f"no rotation {name} in this cluster")]
        if self._settings.dry_run:
            return [_report(command, Outcome.IGNORED, f"dry run: rotation {name} not changed")]

        before: list[Rotation] = []  # the state the command applied to

        def apply(current: store.Stored) -> tuple[Rotation | None, plan.Advance | str]:
            before[:] = [current.rotation]
            refused = plan.refusal(current.rotation, command.verb, command.uid, command.event_time)
            if refused is not None:
                return None, _REFUSED + refused
            if command.verb is Verb.ROLLBACK:
                result = plan.rollback(current.rotation, ctx.now)
            else:
                result = plan.command(current.rotation, command.verb, ctx.now)
            if isinstance(result, str):
                return None, result
            applied = replace(result.rotation, commanded_at=command.event_time)
            return store.stamped(applied, ctx.now), replace(result, rotation=applied)

        stored, result = store.update(ctx.kube, ctx.namespace, name, apply)
        if isinstance(result, str) and result.startswith(_REFUSED):
            why = f"rotation {name}: {command.verb} rejected: {result.removeprefix(_REFUSED)}"
            return [_report(command, Outcome.REJECTED, why)]
        if isinstance(result, str):
            why = f"rotation {name}: {command.verb} changes nothing: {result}"
            return [_report(command, Outcome.IGNORED, why)]
        rotation = stored.rotation
        release(ctx, rotation, result.release, why=f"rotation {name} {rotation.phase}")
        restored = self._restore(ctx, rotation, result.restore)
        if any(not change.ok for change in restored):
            rotation = self._note_not_restored(ctx, name, before[0], restored)
        changes = list(result.changes) + restored
        record_changes(ctx, rotation, changes)
        reports = [change_report(rotation, change) for change in changes]
        reports = [replace(r, event_id=command.event_id) for r in reports]
        if command.verb is Verb.RESUME:
            reports += look(ctx, name, rotation.request_id)
        return reports

    def _restore(
        self, ctx: Context, rotation: Rotation, names: tuple[str, ...]
    ) -> list[plan.Change]:
        """A rollback's nodes returned to service; a warning for each it could not undo."""
        changes = []
        for result in rollback.restore(ctx.kube, rotation, names):
            node = rotation.node(result.name)
            if result.undone:
                changes.append(
                    plan.Change(plan.NODE_RESTORED, f"{result.name} {result.note}", node)
                )
            else:
                changes.append(
                    plan.Change(
                        plan.NODE_NOT_RESTORED,
                        f"{result.name} {result.note}",
                        node,
                        warning=True,
                        ok=False,
                    )
                )
        return changes

    def _note_not_restored(
        self, ctx: Context, name: str, earlier: Rotation, restored: list[plan.Change]
    ) -> Rotation:
        """The state says which nodes a rollback could not return (not ``restored``: the
        phase they had, and why), so ``lifeboat status`` does not claim more than was done."""
        notes = {c.node.name: c.message for c in restored if not c.ok and c.node is not None}

        def mark(current: store.Stored) -> tuple[Rotation | None, None]:
            rotation = current.rotation
            kept = [
                replace(earlier.node(node), note=notes[node].removeprefix(f"{node} "))
                for node in notes
                if rotation.node(node).phase is NodePhase.RESTORED
            ]
            return store.stamped(rotation.with_nodes(kept), ctx.now), None

        stored, _ = store.update(ctx.kube, ctx.namespace, name, mark)
        return stored.rotation

    # -- a node's wake-ups ---------------------------------------------------------------------

    def _node_wakeup(self, wakeup: Wakeup) -> Report:
        notice = wakeup.notice
        ctx = self._context(wakeup.cluster)
        try:
            stored = store.load(ctx.kube, ctx.namespace, notice.detail)
        except StateError as error:
            stored, unreadable = None, f"; its state is unreadable ({error})"
        else:
            unreadable = ""
        rotation = stored.rotation if stored else None
        if rotation is not None and rotation.request_id != notice.event_id:
            rotation = None  # a newer request of the same name: this node is not its own
        phase = rotation.phase if rotation else None
        if wakeup.task is Task.HAND_OVER:
            if phase is not Phase.ROLLED_BACK:
                return self._nodes.wake(wakeup)  # a node out of service finishes
            why = (
                f"rotation {notice.detail} was rolled back: its hand-over was cancelled; the "
                "old NodeClaim is kept"
            )
            return Report.for_notice(notice, Outcome.IGNORED, why)
        if wakeup.task is Task.CONTINUE_DRAIN:
            if phase is not None and phase.active:
                return self._nodes.wake(wakeup)
            why = (
                f"rotation {notice.detail} is {phase or 'gone'}{unreadable}: its drain stops "
                "here; the node stays cordoned"
            )
            return Report.for_notice(notice, Outcome.IGNORED, why)
        if phase is Phase.RUNNING:
            if rotation is None:
                raise BrokenInvariant("lifeboat.rotation.runner._node_wakeup: rotation is None")
            return self._decide_node(ctx, rotation, wakeup)
        if phase is Phase.PAUSED:
            # From the wake-up's own due time, not the clock: a second delivery of it (or
            # one handled a second later) schedules the same wake-up, not a second chain.
            due = plan.next_after(wakeup.due, ctx.now, plan.WAITING_INTERVAL)
            if ctx.wakeups is not None:
                ctx.wakeups.schedule(wakeup.again(due))
            why = f"rotation {notice.detail} is paused: the node waits for it to resume"
            return Report.for_notice(notice, Outcome.DEFERRED, why, deferred_until=due)
        why = f"rotation {notice.detail} is {phase or 'gone'}{unreadable}: node let go"
        if rotation is not None:
            node = next((n for n in rotation.nodes if n.instance_id == notice.instance_id), None)
            if node is not None:
                release(ctx, rotation, [node.name], why=why)
        return Report.for_notice(notice, Outcome.IGNORED, why)

    def _decide_node(self, ctx: Context, rotation: Rotation, wakeup: Wakeup) -> Report:
        """A waiting node's deferred decision, taken again; the rotation hears the outcome:
        acted on (a look at once), let go (the node is skipped) or deferred again (why)."""
        notice = wakeup.notice
        node = next((n for n in rotation.nodes if n.instance_id == notice.instance_id), None)
        if node is None or node.phase is not NodePhase.WAITING:
            # Moved on (acted on already, skipped, let go): nothing is left to decide.
            where = f"is {node.phase}" if node else "is not"
            why = f"rotation {notice.detail}: the node {where} in it: nothing to decide"
            return Report.for_notice(notice, Outcome.IGNORED, why)
        report = self._nodes.wake(wakeup)
        if self._settings.dry_run:
            return report

        def note(current: store.Stored) -> tuple[Rotation | None, plan.Advance]:
            step = plan.decided(
                current.rotation,
                node.name,
                report.outcome,
                report.reason,
                ctx.now,
                report.deferred_until,
            )
            return store.stamped(step.rotation, ctx.now), step

        try:
            stored, step = store.update(ctx.kube, ctx.namespace, rotation.spec.name, note)
        except store.Gone:
            return report  # deleted meanwhile: nothing left to tell
        record_changes(ctx, stored.rotation, step.changes)
        if report.outcome is not Outcome.DEFERRED:
            schedule_look(ctx, stored.rotation, ctx.now)  # the node moved: look now
        return report

    # -- shared --------------------------------------------------------------------------------

    def _context(self, cluster: str | None) -> Context:
        return Context(
            kube=self._kube_for(cluster),
            namespace=self._settings.lease_namespace,
            settings=self._settings,
            now=self._clock(),
            handle=self._nodes.decide,
            let_go=self._nodes.let_go,
            wakeups=None if self._settings.dry_run else self._wakeups,
            cluster=cluster,
            describe=self._describe,
        )


# Marks a command refused by ``plan.refusal`` (rejected), apart from one that changes nothing.
_REFUSED = "refused: "


def _report(command: RotationCommand, outcome: Outcome, reason: str) -> Report:
    return Report.for_notice(command.notice(), outcome, reason)
