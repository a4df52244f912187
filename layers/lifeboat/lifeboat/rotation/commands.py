"""A rotation's commands (request, pause, resume, cancel, rollback), as an operator sends
them: the checks every message passes (origin, a cluster served), once per event (the
ledger), then carried out on the rotation's state (``lifeboat.rotation.store``), a request
or a resume followed by a look (``lifeboat.rotation.look``).
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
from lifeboat.model.notice import Notice
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
)
from lifeboat.rotation.model import NodePhase, Rotation, StateError
from lifeboat.rotation.request import RotationCommand, Verb
from lifeboat.wakeup.codec import Wakeup


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


class Commands:
    """Carries out one rotation command, with what the runner lends it."""

    def __init__(
        self,
        *,
        context: Callable[[str | None], Context],
        settings: Settings,
        clock: Callable[[], datetime],
        nodes: NodeHandling,
        describe: observe.Describe,
        ledger: Ledger | None,
        serves: Callable[[str | None], bool] | None,
    ) -> None:
        self._context = context
        self._settings = settings
        self._clock = clock
        self._nodes = nodes
        self._describe = describe
        self._ledger = ledger
        # Clusters served by their tag (lifeboat.aws.discovery); None: settings.clusters decide.
        self._serves = serves

    def handle(self, command: RotationCommand) -> list[Report]:
        """A command's reports: refused, done once (the ledger), or carried out."""
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


# Marks a command refused by ``plan.refusal`` (rejected), apart from one that changes nothing.
_REFUSED = "refused: "


def _report(command: RotationCommand, outcome: Outcome, reason: str) -> Report:
    return Report.for_notice(command.notice(), outcome, reason)
