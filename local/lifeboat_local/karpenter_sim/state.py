"""What the simulated controllers share: the emulator, the clock, Karpenter's in-memory state
(marks, nominations, commands) and the steps taken, for the replay to show."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cache
from typing import Any

from kubemu import Emulator
from lifeboat.karpenter.quantities import parse_quantity
from lifeboat.kube import nodes
from lifeboat.model.instants import format_instant
from lifeboat.model.objects import MutableObj as Obj

# Karpenter's timings (and the kubelet's), as far as the replay needs them.
LAUNCH_TIME = timedelta(seconds=5)  # CreateFleet answers: the claim gets its providerID
INITIALIZE_TIME = timedelta(seconds=60)  # from creation to a Ready, initialized Node
TERMINATE_TIME = timedelta(seconds=90)  # from the claim's deletion to the instance gone, at least
DISRUPTION_POLL = timedelta(seconds=10)  # the disruption controller's loop
VALIDATION_DELAY = timedelta(seconds=15)  # emptiness re-validates its command after this
NOMINATION = timedelta(seconds=20)  # max(2 * BATCH_MAX_DURATION, 10 s)
PROVISIONING_POLL = timedelta(seconds=10)  # a pass while pods wait (pending, or on a tainted node)
COMMAND_TIMEOUT = timedelta(minutes=10)  # a command whose replacement never initializes
SETTLE = timedelta(seconds=5)  # look again this soon after anything changed


@dataclass(frozen=True)
class SimStep:
    """One thing the simulated Karpenter (or Auto Scaling, or the kube-scheduler) did."""

    at: datetime
    action: str  # e.g. "launched", "node-ready", "evicted", "node-removed", "consolidating"
    nodepool: str | None = None
    claim: str | None = None
    node: str | None = None
    detail: str = ""


@dataclass
class Command:
    """A disruption command of Karpenter's (``orchestration.Command``)."""

    reason: str  # "Empty" or "Drifted"
    candidates: list[str]  # claim names
    started: datetime
    validate_at: datetime | None = None  # emptiness: re-validated, then executed
    replacements: list[str] = field(default_factory=list)
    executing: bool = False


@dataclass
class SimState:
    emulator: Emulator
    now: datetime
    steps: list[SimStep] = field(default_factory=list)
    # When a change was first seen (claim created, launched, deleted...), by "what/name".
    seen: dict[str, datetime] = field(default_factory=dict)
    # Karpenter's in-memory Cluster.MarkForDeletion (claim names) and nominations (node names).
    marked: set[str] = field(default_factory=set)
    nominated: dict[str, datetime] = field(default_factory=dict)
    commands: list[Command] = field(default_factory=list)
    last_disruption_loop: datetime | None = None
    # Pods with a controller, as last seen: the workload controllers recreate those that go.
    known_pods: dict[str, Obj] = field(default_factory=dict)
    # The pool of the node a waiting pod came from (Karpenter provisions for it there), and
    # the pool of every node ever seen.
    origin: dict[str, str] = field(default_factory=dict)
    pool_of_node: dict[str, str] = field(default_factory=dict)
    changed: bool = False
    serial: int = 0
    bind_delay: timedelta = timedelta(0)

    def first_seen(self, what: str) -> datetime:
        return self.seen.setdefault(what, self.now)

    def step(self, action: str, obj: Obj | None = None, detail: str = "", **names: Any) -> None:
        claim = names.get("claim")
        node = names.get("node")
        pool = names.get("nodepool")
        if obj is not None:
            labels = nodes.labels_of(obj)
            pool = pool or labels.get(nodes.NODEPOOL_LABEL)
            if obj.get("kind") == "NodeClaim":
                claim = claim or nodes.name_of(obj)
                node = node or (obj.get("status") or {}).get("nodeName")
            elif obj.get("kind") == "Node":
                node = node or nodes.name_of(obj)
                owner = nodes.nodeclaim_owner(obj)
                claim = claim or (owner[0] if owner else None)
        self.steps.append(SimStep(self.now, action, pool, claim, node, detail))
        self.changed = True

    def put(self, obj: Obj) -> None:
        self.emulator.put_object(obj)
        self.changed = True

    def delete(self, obj: Obj) -> None:
        namespace = obj["metadata"].get("namespace")
        self.emulator.delete_object(obj["kind"], nodes.name_of(obj), namespace)
        self.changed = True

    def objects(self, kind: str) -> list[Obj]:
        """Copies of the objects of ``kind``, for a controller that changes what it reads."""
        return self.emulator.objects(kind)

    def view(self, kind: str) -> list[Obj]:
        """The stored objects of ``kind`` themselves, not to be changed: a controller that
        only reads (or changes one of them through ``editable``) does not copy a
        15,000-pod cluster on every pass."""
        return self.emulator.view(kind)

    def get(self, kind: str, name: str) -> Obj | None:
        """A copy of the cluster-scoped object ``name`` of ``kind``, as stored now."""
        return self.emulator.get_object(kind, name)

    def stamp(self) -> str:
        return format_instant(self.now)

    def next_name(self, prefix: str, kind: str, namespace: str | None = None) -> str:
        """A name suffix as the API server's generateName gives (5 characters), repeatable,
        and never the name of an object of ``kind`` already there: a replay continued from
        another's ``--state-out`` starts counting again, and must not overwrite what the first
        one created (generateName retries on a conflict the same way)."""
        while True:
            self.serial += 1
            alphabet = "bcdfghjklmnpqrstvwxz2456789"
            number, suffix = self.serial * 7919, ""
            for _ in range(5):
                number, digit = divmod(number, len(alphabet))
                suffix += alphabet[digit]
            name = f"{prefix}-{suffix}"
            if self.emulator.get_object(kind, name, namespace) is None:
                return name


def editable(obj: Obj) -> Obj:
    """A copy of ``obj`` (read through ``SimState.view``) to change and put back."""
    return copy.deepcopy(obj)


def set_condition(obj: Obj, kind: str, status: str, reason: str, at: str) -> None:
    """Set a status condition the way operatorpkg does (one entry per type)."""
    conditions = [
        c for c in (obj.setdefault("status", {}).get("conditions") or []) if c.get("type") != kind
    ]
    conditions.append(
        {
            "type": kind,
            "status": status,
            "reason": reason,
            "message": "",
            "lastTransitionTime": at,
            "observedGeneration": 1,
        }
    )
    obj["status"]["conditions"] = conditions


def condition_time(obj: Obj, kind: str) -> str | None:
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") == kind and condition.get("status") == "True":
            return str(condition.get("lastTransitionTime"))
    return None


def pod_key(pod: Obj) -> str:
    return f"{pod['metadata'].get('namespace', 'default')}/{nodes.name_of(pod)}"


@cache
def _quantity(text: str) -> float:
    """A quantity as a float, parsed once per spelling: the controllers weigh every pod's
    requests on every pass, and a fleet spells them a handful of ways."""
    return float(parse_quantity(text))


def requests_of(pod: Obj) -> tuple[float, float]:
    """(cpu cores, memory bytes) a pod requests (its containers' requests summed)."""
    cpu = memory = 0.0
    for container in pod.get("spec", {}).get("containers") or []:
        requests = (container.get("resources") or {}).get("requests") or {}
        cpu += _quantity(str(requests.get("cpu", 0)))
        memory += _quantity(str(requests.get("memory", 0)))
    return cpu, memory


def allocatable_of(obj: Obj) -> tuple[float, float]:
    allocatable = (obj.get("status") or {}).get("allocatable") or {}
    return _quantity(str(allocatable.get("cpu", 0))), _quantity(str(allocatable.get("memory", 0)))


def by_name(objects: Iterable[Obj]) -> dict[str, Obj]:
    return {nodes.name_of(o): o for o in objects}
