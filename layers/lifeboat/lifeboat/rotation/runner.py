"""The rotation's share of the pipeline: its looks, and its nodes' wake-ups; its commands
through ``lifeboat.rotation.commands``.

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

from lifeboat.errors import BrokenInvariant
from lifeboat.kube.client import KubeApi
from lifeboat.model.ledger import Ledger
from lifeboat.model.notice import Kind
from lifeboat.model.report import Outcome, Report
from lifeboat.model.settings import Settings
from lifeboat.rotation import observe, plan, store
from lifeboat.rotation.commands import Commands, NodeHandling
from lifeboat.rotation.look import (
    Context,
    look,
    record_changes,
    release,
    schedule_look,
)
from lifeboat.rotation.model import NodePhase, Phase, Rotation, StateError
from lifeboat.rotation.request import RotationCommand
from lifeboat.wakeup.codec import Task, Wakeup, WakeupSink


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
            return Commands(
                context=self._context,
                settings=self._settings,
                clock=self._clock,
                nodes=self._nodes,
                describe=self._describe,
                ledger=self._ledger,
                serves=self._serves,
            ).handle(item)
        reports = self._look(item) if item.task is Task.ROTATE else [self._node_wakeup(item)]
        return [replace(report, wakeup=str(item.task)) for report in reports]

    def _look(self, wakeup: Wakeup) -> list[Report]:
        name, request_id = wakeup.notice.detail, wakeup.notice.event_id
        try:
            return look(self._context(wakeup.cluster), name, request_id)
        except StateError as error:
            why = f"rotation {name}: state unreadable: {error}; fix or delete its ConfigMap"
            return [Report(request_id, str(Kind.ROTATION), Outcome.IGNORED, why)]

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
