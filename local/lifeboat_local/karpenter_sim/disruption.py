"""Karpenter's own voluntary disruption: drift and emptiness, inside the same budgets.

- Drift (``nodeclaim.disruption`` drift.go): a launched claim whose ``karpenter.sh/nodepool-hash``
  differs from its pool's (same hash version on both, ``areStaticFieldsDrifted``), or whose
  labels do not satisfy the pool's requirements (``areRequirementsDrifted``), is
  ``Drifted=True``.
- The disruption loop (``disruption.Controller``) runs every ``DISRUPTION_POLL`` while the
  cluster is synced, and starts at most one command per loop, emptiness first:
  - candidates (``NewCandidate``, ``ValidateNodeDisruptable``, ``ValidatePodsDisruptable``):
    launched, initialized, not deleting nor in a command, not nominated, no
    ``karpenter.sh/do-not-disrupt`` on the node or on an active pod, no PDB blocking an
    eviction;
  - budgets per pool and reason as ``BuildDisruptionBudgetMapping`` counts them
    (:mod:`lifeboat.karpenter.counting`, Karpenter's view, with its in-memory marks);
  - emptiness: ``consolidateAfter`` not ``Never`` (nor a static pool), ``Consolidatable``
    (``consolidateAfter`` elapsed since initialization or the last pod event), no
    reschedulable pod; the command waits ``VALIDATION_DELAY``, is validated again (budgets
    and candidates re-read), then tainted (``markDisrupted``) and its claims deleted;
  - drift: one drifted candidate, oldest first: tainted, a replacement claim created from
    the template, the candidate marked for deletion (in memory), and deleted once the
    replacement is initialized (``COMMAND_TIMEOUT``: abandoned, taint removed).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from lifeboat.karpenter import disruption_rules
from lifeboat.karpenter.budgets import allowed_disruptions, earliest_permitted, parse_go_duration
from lifeboat.karpenter.counting import View, count_pool
from lifeboat.karpenter.nodepool_hash import HASH_ANNOTATION, HASH_VERSION_ANNOTATION
from lifeboat.karpenter.pdbs import pdb_blocker
from lifeboat.karpenter.requirements import Requirement
from lifeboat.kube import nodes
from lifeboat.model.instants import parse_timestamp
from lifeboat.model.objects import MutableObj as Obj
from lifeboat.model.target import PoolCounts

from .scheduling import launch_for, synced
from .state import (
    COMMAND_TIMEOUT,
    DISRUPTION_POLL,
    VALIDATION_DELAY,
    Command,
    SimState,
    by_name,
    condition_time,
    editable,
    set_condition,
)

EMPTY = "Empty"
DRIFTED = "Drifted"


def reconcile(state: SimState) -> None:
    if not synced(state):
        return
    _detect_drift(state)
    _run_commands(state)
    last = state.last_disruption_loop
    if last is not None and state.now < last + DISRUPTION_POLL:
        return
    if any(c.validate_at is not None and not c.executing for c in state.commands):
        return  # the loop is busy validating (Validate is synchronous in Karpenter)
    state.last_disruption_loop = state.now
    view = _View(state)
    if not _emptiness(state, view):
        _drift(state, view)


def due(state: SimState) -> list[datetime]:
    """Validation ends, and when a blocked or not-yet-consolidatable candidate may go."""
    times: list[datetime | None] = [c.validate_at for c in state.commands if not c.executing]
    if not synced(state):
        return [t for t in times if t is not None]
    view = _View(state)
    for claim, node, pool in view.candidates():
        if _drifted(claim):
            times.append(_budget_opens(state, view, pool, DRIFTED))
        after = _consolidatable_at(claim, pool)
        if after is not None and view.empty(node):
            opens = _budget_opens(state, view, pool, EMPTY)
            times.append(None if opens is None else max(after, opens))
    poll = (state.last_disruption_loop or state.now) + DISRUPTION_POLL
    return [max(t, poll) for t in times if t is not None]


class _View:
    """One read of the cluster for a disruption decision."""

    def __init__(self, state: SimState) -> None:
        self.state = state
        # Copies of what a decision may change (taints, conditions); the rest is only read.
        self.claims = state.objects("NodeClaim")
        self.nodes = by_name(state.objects("Node"))
        self.pools = by_name(state.view("NodePool"))
        self.pdbs = state.view("PodDisruptionBudget")
        self._pods_by_node: dict[str, list[Obj]] = {}
        for pod in state.view("Pod"):
            node_name = pod.get("spec", {}).get("nodeName", "")
            self._pods_by_node.setdefault(node_name, []).append(pod)
        self.in_commands = {name for c in state.commands for name in c.candidates}
        self._blocked: dict[str, bool] = {}
        self._pdb_index: dict[tuple[str, str, str], list[Obj]] | None = None
        self._pdb_rest: list[Obj] = []

    def _pdb_blocks(self, node: str, pods: list[Obj]) -> bool:
        """Whether a PDB keeps the node's pods now (asked once per node per view: the
        controller asks it of every candidate several times a pass)."""
        if node not in self._blocked:
            relevant = self._pdbs_for(pods)
            self._blocked[node] = pdb_blocker(pods, relevant, self.state.now) is not None
        return self._blocked[node]

    def _pdbs_for(self, pods: list[Obj]) -> list[Obj]:
        """The PDBs that may select any of ``pods`` (by one of their matchLabels), and those
        without matchLabels; ``pdb_blocker`` still judges them all."""
        if self._pdb_index is None:
            self._pdb_index, self._pdb_rest = {}, []
            for pdb in self.pdbs:
                labels = ((pdb.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
                if not labels:
                    self._pdb_rest.append(pdb)
                    continue
                key, value = sorted(labels.items())[0]
                namespace = pdb["metadata"].get("namespace", "default")
                self._pdb_index.setdefault((namespace, key, str(value)), []).append(pdb)
        found = {id(p): p for p in self._pdb_rest}
        for pod in pods:
            namespace = pod["metadata"].get("namespace", "default")
            for label in nodes.labels_of(pod).items():
                for pdb in self._pdb_index.get((namespace, *label), ()):
                    found[id(pdb)] = pdb
        return list(found.values())

    def pods_on(self, node: Obj) -> list[Obj]:
        name = nodes.name_of(node)
        return list(self._pods_by_node.get(name, ()))

    def node_of(self, claim: Obj) -> Obj | None:
        return self.nodes.get((claim.get("status") or {}).get("nodeName", ""))

    def counts(self, pool: Obj) -> PoolCounts:
        """The pool as Karpenter's budget math sees it (with its in-memory marks)."""
        name = nodes.name_of(pool)
        members = [
            n for n in self.nodes.values() if nodes.labels_of(n).get(nodes.NODEPOOL_LABEL) == name
        ]
        claims = [c for c in self.claims if nodes.labels_of(c).get(nodes.NODEPOOL_LABEL) == name]
        return count_pool(members, claims, view=View.KARPENTER, marked=self.state.marked)

    def allowed(self, pool: Obj, reason: str) -> int:
        counts = self.counts(pool)
        allowance = allowed_disruptions(
            pool, counts.node_count, counts.disrupting, self.state.now, reason
        )
        return 10**9 if allowance.allowed is None else allowance.allowed

    def empty(self, node: Obj) -> bool:
        return not any(disruption_rules.is_reschedulable(p) for p in self.pods_on(node))

    def candidates(self) -> list[tuple[Obj, Obj, Obj]]:
        """(claim, node, pool) of every disruption candidate, oldest claim first."""
        found = []
        now = self.state.now
        for claim in sorted(
            self.claims,
            key=lambda c: (c["metadata"].get("creationTimestamp", ""), nodes.name_of(c)),
        ):
            name = nodes.name_of(claim)
            node = self.node_of(claim)
            pool = self.pools.get(nodes.labels_of(claim).get(nodes.NODEPOOL_LABEL, ""))
            if node is None or pool is None or nodes.is_deleting(claim) or nodes.is_deleting(node):
                continue
            if (
                not disruption_rules.is_initialized(node)
                or name in self.state.marked
                or name in self.in_commands
            ):
                continue
            if self.state.nominated.get(nodes.name_of(node), now) > now:
                continue
            if nodes.annotations_of(node).get(nodes.DO_NOT_DISRUPT) == "true":
                continue
            pods = self.pods_on(node)
            if any(disruption_rules.do_not_disrupt_until(p, now) is not None for p in pods):
                continue
            if self._pdb_blocks(nodes.name_of(node), pods):
                continue
            found.append((claim, node, pool))
        return found


def _consolidatable_at(claim: Obj, pool: Obj) -> datetime | None:
    """When ``Consolidatable`` turns True (None: never, consolidation disabled)."""
    disruption = pool.get("spec", {}).get("disruption") or {}
    after = str(disruption.get("consolidateAfter", "0s"))
    if after == "Never" or pool.get("spec", {}).get("replicas") is not None:
        return None
    since = (claim.get("status") or {}).get("lastPodEventTime") or condition_time(
        claim, "Initialized"
    )
    start = parse_timestamp(since)
    return None if start is None else start + parse_go_duration(after)


def _budget_opens(state: SimState, view: _View, pool: Obj, reason: str) -> datetime | None:
    """When the pool's budget for ``reason`` lets one more go (None: not within a day)."""
    if view.allowed(pool, reason) > 0:
        return state.now
    counts = view.counts(pool)
    horizon = state.now + timedelta(days=1)
    return earliest_permitted(
        pool, counts.node_count, counts.disrupting, state.now, horizon, reason
    ).at


class _Budgets:
    """``BuildDisruptionBudgetMapping`` once per pool, decremented per candidate taken (as
    ``ComputeCommands`` does with its map)."""

    def __init__(self, view: _View, reason: str) -> None:
        self._view, self._reason = view, reason
        self._left: dict[str, int] = {}

    def take(self, pool: Obj) -> bool:
        name = nodes.name_of(pool)
        left = self._left.setdefault(name, self._view.allowed(pool, self._reason))
        if left <= 0:
            return False
        self._left[name] = left - 1
        return True


def _emptiness(state: SimState, view: _View) -> bool:
    budgets = _Budgets(view, EMPTY)
    chosen: list[Obj] = []
    for claim, node, pool in view.candidates():
        after = _consolidatable_at(claim, pool)
        if after is None or state.now < after or not view.empty(node):
            continue
        if budgets.take(pool):
            chosen.append(claim)
    if not chosen:
        return False
    names = [nodes.name_of(c) for c in chosen]
    state.commands.append(
        Command(EMPTY, names, state.now, validate_at=state.now + VALIDATION_DELAY)
    )
    for claim in chosen:
        state.step("consolidation-candidate", claim, "empty: validating for 15s")
    return True


def _drift(state: SimState, view: _View) -> bool:
    for claim, _node, pool in view.candidates():
        if not _drifted(claim) or view.allowed(pool, DRIFTED) <= 0:
            continue
        command = Command(DRIFTED, [nodes.name_of(claim)], state.now)
        state.commands.append(command)
        _start(state, command, view)
        return True
    return False


def _run_commands(state: SimState) -> None:
    for command in list(state.commands):
        view = _View(state)
        if command.reason == EMPTY and not command.executing:
            if command.validate_at is not None and state.now >= command.validate_at:
                _validate_and_execute(state, command, view)
            continue
        if command.reason == DRIFTED:
            _finish_drift(state, command, view)


def _validate_and_execute(state: SimState, command: Command, view: _View) -> None:
    """Validation re-reads candidates and budgets: what was nominated, filled or used up
    meanwhile (Lifeboat's deletions included) is dropped."""
    budgets = _Budgets(view, EMPTY)
    keep = []
    view.in_commands -= set(command.candidates)
    still = {nodes.name_of(c): (c, n, p) for c, n, p in view.candidates()}
    for name in command.candidates:
        if name in still and view.empty(still[name][1]) and budgets.take(still[name][2]):
            keep.append(name)
    if not keep:
        state.commands.remove(command)
        state.step("consolidation-abandoned", detail=", ".join(command.candidates))
        return
    command.candidates = keep
    command.executing = True
    for name in keep:
        claim, node, _pool = still[name]
        _mark_disrupted(state, claim, node, EMPTY)
        state.marked.add(name)
        marked = state.get("NodeClaim", name)  # as _mark_disrupted left it
        assert marked is not None  # marked above: only Karpenter's own commands remove it
        _delete(state, marked, "consolidated: empty")
    state.commands.remove(command)


def _start(state: SimState, command: Command, view: _View) -> None:
    name = command.candidates[0]
    claim = next(c for c in view.claims if nodes.name_of(c) == name)
    node = view.node_of(claim)
    assert node is not None
    _mark_disrupted(state, claim, node, command.reason)
    pool = view.pools[nodes.labels_of(claim)[nodes.NODEPOOL_LABEL]]
    before = {nodes.name_of(c) for c in state.view("NodeClaim")}
    launch_for(state, pool, f"replacement for drifted {name}")
    command.replacements = sorted({nodes.name_of(c) for c in state.view("NodeClaim")} - before)
    state.marked.add(name)  # MarkForDeletion, after the replacement exists


def _finish_drift(state: SimState, command: Command, view: _View) -> None:
    claims = by_name(view.claims)
    name = command.candidates[0]
    ready = all(condition_time(claims.get(r, {}), "Initialized") for r in command.replacements)
    if ready and name in claims:
        _delete(state, claims[name], "drifted: replacement initialized")
        state.commands.remove(command)
    elif state.now >= command.started + COMMAND_TIMEOUT or name not in claims:
        state.commands.remove(command)
        state.marked.discard(name)
        if name in claims:
            _unmark_disrupted(state, claims[name], view.node_of(claims[name]))
        state.step("disruption-abandoned", claim=name, detail="replacement not initialized in time")


def _unmark_disrupted(state: SimState, claim: Obj, node: Obj | None) -> None:
    """A failed command (``CompleteCommand`` with an error): taint and condition go."""
    if node is not None:
        node["spec"]["taints"] = [
            t for t in nodes.taints(node) if t.get("key") != nodes.KARPENTER_DISRUPTED_TAINT
        ]
        state.put(node)
    conditions = (claim.get("status") or {}).get("conditions") or []
    claim["status"]["conditions"] = [c for c in conditions if c.get("type") != "DisruptionReason"]
    state.put(claim)


def _mark_disrupted(state: SimState, claim: Obj, node: Obj, reason: str) -> None:
    """``markDisrupted``: the taint, then the claim's ``DisruptionReason`` condition."""
    node.setdefault("spec", {})["taints"] = [
        *[t for t in nodes.taints(node) if t.get("key") != nodes.KARPENTER_DISRUPTED_TAINT],
        {"key": nodes.KARPENTER_DISRUPTED_TAINT, "effect": "NoSchedule"},
    ]
    state.put(node)
    set_condition(claim, "DisruptionReason", "True", reason, state.stamp())
    state.put(claim)
    state.step("disrupting", claim, f"{reason}: tainted karpenter.sh/disrupted")


def _delete(state: SimState, claim: Obj, why: str) -> None:
    claim["metadata"]["deletionTimestamp"] = state.stamp()
    state.put(claim)
    state.step("disruption-deleted", claim, why)


def _drifted(claim: Obj) -> bool:
    return any(
        c.get("type") == "Drifted" and c.get("status") == "True"
        for c in (claim.get("status") or {}).get("conditions") or []
    )


def _detect_drift(state: SimState) -> None:
    pools = by_name(state.view("NodePool"))
    for claim in state.view("NodeClaim"):
        pool = pools.get(nodes.labels_of(claim).get(nodes.NODEPOOL_LABEL, ""))
        launched = condition_time(claim, "Launched")
        if pool is None or nodes.is_deleting(claim) or not launched:
            continue
        why = drift_reason(pool, claim)
        if why is not None and not _drifted(claim):
            claim = editable(claim)
            set_condition(claim, "Drifted", "True", why, state.stamp())
            state.put(claim)
            state.step("drifted", claim, why)


def drift_reason(pool: Obj, claim: Obj) -> str | None:
    """``areStaticFieldsDrifted``, then ``areRequirementsDrifted`` (drift.go)."""
    pool_notes, claim_notes = nodes.annotations_of(pool), nodes.annotations_of(claim)
    keys = (HASH_ANNOTATION, HASH_VERSION_ANNOTATION)
    if all(k in pool_notes and k in claim_notes for k in keys):
        same_version = pool_notes[HASH_VERSION_ANNOTATION] == claim_notes[HASH_VERSION_ANNOTATION]
        if same_version and pool_notes[HASH_ANNOTATION] != claim_notes[HASH_ANNOTATION]:
            return "NodePoolDrifted"
    labels = nodes.labels_of(claim)
    for raw in (pool.get("spec", {}).get("template", {}).get("spec", {}).get("requirements")) or []:
        requirement = Requirement.parse(raw)
        value = labels.get(requirement.key)
        if value is None and raw.get("operator") not in ("NotIn", "DoesNotExist"):
            return "RequirementsDrifted"
        if value is not None and not requirement.allows(value):
            return "RequirementsDrifted"
    return None
