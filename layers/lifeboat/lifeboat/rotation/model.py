"""What a rotation remembers between two looks at it: plain, immutable data, and its JSON.

The state lives in the cluster (``lifeboat.rotation.store``); this module only says what it
holds. A node goes ``pending`` -> ``waiting`` (its notice waits for a budget, a window or
do-not-disrupt) -> ``replacing`` (a Karpenter node out of service while its replacement
launches) -> ``draining`` (its pods are being evicted) -> ``rescheduling`` (drained; its pods
must run Ready elsewhere) -> ``done``; or ends ``failed`` (its health gate timed out),
``skipped`` (gone, already going, or its notice was let go) or ``released`` (the rotation
stopped before the node was touched). A node held back by a blocker with a known end (a
budget window that opens at a known time, a do-not-disrupt that expires) waits for it, for
days if need be (``waits_until``): waiting is not failing. A node held back by a blocker
with no known end (a PDB that allows nothing, do-not-disrupt without expiry) for longer than
the health gate's timeout ends ``failed``, naming what held it: the gate's clock starts when
such a blocker first holds it. A rollback ends the nodes it took out of service ``restored``
(returned to service) and the rotation ``rolled-back``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum

from pydantic import TypeAdapter, ValidationError

from lifeboat.errors import InvalidInput
from lifeboat.rotation.request import RotationSpec


class Phase(StrEnum):
    RUNNING = "running"
    PAUSED = "paused"  # no node is started; nodes already out of service finish
    CANCELLED = "cancelled"
    FAILED = "failed"  # a health gate failed: stopped, touching no further node until resumed
    COMPLETED = "completed"  # every node done: the group may be scaled down
    # Nothing left to do, but not every node was rotated (let go, gone, taken back): the
    # nodes not done still run their pods, so the group must not be scaled down blindly.
    COMPLETED_WITH_SKIPS = "completed-with-skips"
    ROLLED_BACK = "rolled-back"  # cancelled, and its nodes out of service returned to service

    @property
    def active(self) -> bool:
        return self in (Phase.RUNNING, Phase.PAUSED)


class NodePhase(StrEnum):
    PENDING = "pending"
    WAITING = "waiting"
    REPLACING = "replacing"
    DRAINING = "draining"
    RESCHEDULING = "rescheduling"
    DONE = "done"
    FAILED = "failed"
    SKIPPED = "skipped"
    RELEASED = "released"
    RESTORED = "restored"  # taken out of service, then returned to service by a rollback

    @property
    def in_flight(self) -> bool:
        """Started and not finished: counts against ``maxInFlight``."""
        return self in _IN_FLIGHT

    @property
    def out_of_service(self) -> bool:
        """Cordoned by the rotation: its health gate is watched."""
        return self in _OUT_OF_SERVICE

    @property
    def finished(self) -> bool:
        return self not in _IN_FLIGHT and self is not NodePhase.PENDING


_OUT_OF_SERVICE = frozenset({NodePhase.REPLACING, NodePhase.DRAINING, NodePhase.RESCHEDULING})
_IN_FLIGHT = _OUT_OF_SERVICE | {NodePhase.WAITING}


@dataclass(frozen=True)
class Workload:
    """A controller whose pods ran on a rotated node, and how many of its pods were Ready
    before: the health gate waits until as many run Ready elsewhere."""

    kind: str
    namespace: str
    name: str
    uid: str
    # Labels its pods share (what a list by label selector finds them with; the uid decides).
    labels: dict[str, str]
    ready_before: int  # its pods Ready anywhere when the node was started
    on_node: int = 0  # of its pods, those on the node (the drain evicts them)

    def describe(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


@dataclass(frozen=True)
class RotationNode:
    name: str
    instance_id: str
    nodeclaim: str | None = None  # a Karpenter node's claim; None for a node group's node
    phase: NodePhase = NodePhase.PENDING
    since: datetime | None = None  # when it entered its phase
    # The health gate's clock: when a blocker with no known end first held the node back,
    # or when its drain started.
    gate_started: datetime | None = None
    # Held back by a blocker with a known end: until when (the window opens, the
    # do-not-disrupt expires). No health gate runs while it waits for it.
    waits_until: datetime | None = None
    workloads: tuple[Workload, ...] = ()
    unmanaged: tuple[str, ...] = ()  # its pods no controller recreates ("namespace/name")
    note: str = ""  # the latest word about it: a decision's reason, the health gate's verdict


@dataclass(frozen=True)
class Rotation:
    spec: RotationSpec
    request_id: str  # the EventBridge id of the request: one rotation per request
    requested_at: datetime
    nodes: tuple[RotationNode, ...] = ()
    phase: Phase = Phase.RUNNING
    reason: str = ""  # why it is in its phase (a failure: which gate, what was missing)
    # When the next look is scheduled (ticks converge on one chain, see plan.next_look).
    next_tick: datetime | None = None
    updated: datetime | None = None
    wave: int = 0  # the wave now allowed to start nodes (spec.waves; 0: the first)
    # The time of the last command applied (pause, resume, ...): an older one is refused.
    commanded_at: datetime | None = None

    @property
    def uid(self) -> str:
        """What commands name the rotation by: the request's uid, or its event's id."""
        return self.spec.uid or self.request_id

    def node(self, name: str) -> RotationNode:
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(name)

    def with_nodes(self, updated: Iterable[RotationNode]) -> Rotation:
        by_name = {node.name: node for node in updated}
        return replace(self, nodes=tuple(by_name.pop(n.name, n) for n in self.nodes))

    def in_phase(self, *phases: NodePhase) -> list[RotationNode]:
        return [node for node in self.nodes if node.phase in phases]

    @property
    def in_flight(self) -> list[RotationNode]:
        return [node for node in self.nodes if node.phase.in_flight]

    def summary(self) -> str:
        """``running: 1 of 3 node(s) done, 1 in flight (ip-a: rescheduling), 1 pending``."""
        counts = {phase: len(self.in_phase(phase)) for phase in NodePhase}
        parts = [f"{counts[NodePhase.DONE]} of {len(self.nodes)} node(s) done"]
        flying = self.in_flight
        if flying:
            which = ", ".join(f"{node.name}: {node.phase}" for node in flying)
            parts.append(f"{len(flying)} in flight ({which})")
        for phase in (
            NodePhase.PENDING,
            NodePhase.SKIPPED,
            NodePhase.RELEASED,
            NodePhase.FAILED,
            NodePhase.RESTORED,
        ):
            if counts[phase]:
                parts.append(f"{counts[phase]} {phase}")
        return f"{self.phase}: " + ", ".join(parts)


class StateError(InvalidInput):
    """A rotation's stored state cannot be read (edited by hand, or corrupted)."""


_ADAPTER: TypeAdapter[Rotation] = TypeAdapter(Rotation)


# The most of a finished node's note kept in the stored state: the whole note was reported
# (and logged) when the node finished.
FINISHED_NOTE_MAX = 160


def compact(rotation: Rotation) -> Rotation:
    """The rotation as stored: a node done or skipped keeps no workloads and no unmanaged
    pods (nothing waits for them any more) and a short note, so 2,000 finished nodes take a
    few hundred bytes each. A failed or released node keeps everything: resuming takes it
    up again with the workloads its health gate waited for."""
    return rotation.with_nodes(
        replace(node, workloads=(), unmanaged=(), note=_shortened(node.note))
        for node in rotation.nodes
        if node.phase in (NodePhase.DONE, NodePhase.SKIPPED)
        and (node.workloads or node.unmanaged or len(node.note) > FINISHED_NOTE_MAX)
    )


def _shortened(note: str) -> str:
    return note if len(note) <= FINISHED_NOTE_MAX else note[: FINISHED_NOTE_MAX - 1] + "…"


def to_json(rotation: Rotation, *, stored: bool = False) -> str:
    """Every field (``lifeboat status --json``); ``stored``: fields at their defaults left
    out (a pending node is its name, instance and claim), :func:`from_json` fills them in."""
    return _ADAPTER.dump_json(rotation, exclude_defaults=stored).decode()


def from_json(text: str) -> Rotation:
    try:
        return _ADAPTER.validate_json(text)
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"]) or "state"
        raise StateError(f"{where}: {first['msg']}") from None
