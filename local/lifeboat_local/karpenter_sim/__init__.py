"""A stand-in for Karpenter (and the kube-scheduler, the workload controllers and Auto Scaling)
while ``lifeboat replay --follow`` moves time.

Without it, deferred work could never play out locally: nothing would launch the claims
Lifeboat creates, drain and remove the nodes whose claims it deletes, or move their pods, so
a pool's disrupting count would never fall. It does what the real controllers visibly do,
on the simulated clock, and reports each thing done as a :class:`SimStep`:

- :mod:`.lifecycle`: claims get Karpenter's finalizer, launch, register and initialize;
- :mod:`.termination`: a deleted claim's node is tainted, drained (PDBs and do-not-disrupt
  honoured) and removed; a drained node-group node goes too;
- :mod:`.scheduling`: evicted pods come back Pending and are bound where they fit; Karpenter
  nominates the nodes they will go to, and (:mod:`.provisioner`) launches claims from the
  cluster's NodePools for pods that fit nowhere, or says why none takes them;
- :mod:`.disruption`: Karpenter's own drift and emptiness consolidation, inside the same
  budgets, counted as Karpenter counts (``disruption=False`` turns it off).

The simulation only looks at the cluster when the replay moves the clock (``advance``), and
Lifeboat only writes while the clock stands still between two moves. So a change first seen
at ``advance(now)`` was made at the previous clock position, and its timers start there. In
between, the controllers run at every instant one of them has something due (a launch, a
node joining, a validation ending, a window opening...), and again shortly after anything
changed, until nothing is left to do before ``now``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from kubemu import Emulator
from lifeboat.kube import nodes

from . import disruption, lifecycle, provisioner, scheduling, termination
from .state import (
    DISRUPTION_POLL,
    INITIALIZE_TIME,
    LAUNCH_TIME,
    SETTLE,
    TERMINATE_TIME,
    VALIDATION_DELAY,
    SimState,
    SimStep,
)

__all__ = [
    "DISRUPTION_POLL",
    "INITIALIZE_TIME",
    "LAUNCH_TIME",
    "TERMINATE_TIME",
    "VALIDATION_DELAY",
    "KarpenterSimulation",
    "SimStep",
]

# Controller passes per advance at most: a loop in the simulation must not hang the replay.
MAX_TICKS = 5_000


class KarpenterSimulation:
    def __init__(
        self,
        emulator: Emulator,
        start: datetime | None = None,
        *,
        # Karpenter's own drift and consolidation (off: only what Lifeboat sets in motion).
        disruption: bool = True,
        # How long the kube-scheduler takes to use a node once it is Ready (tests make the
        # window in which a new node is empty, and a consolidation candidate, longer).
        bind_delay: timedelta = timedelta(0),
        observe: Callable[[datetime], None] | None = None,
    ) -> None:
        self._state = SimState(emulator, start or datetime.min, bind_delay=bind_delay)
        # The pods as they are before anything moves: the workload controllers recreate
        # those that go from now on (evicted by Lifeboat, or drained here).
        scheduling.recreate_evicted(self._state)
        # The clock position of the previous look (or the replay's start): what is new at a
        # look was written while the clock stood there.
        self._last = start
        self._disruption = disruption
        # Called after every pass of the controllers (tests sample the cluster there).
        self._observe = observe
        # MAX_TICKS when an advance made that many passes without settling (then it stopped
        # short of its instant: the caller must say so); None otherwise.
        self.limit_hit: int | None = None

    @property
    def marked(self) -> frozenset[str]:
        """Claims Karpenter's own commands hold for deletion, in memory (not in the API)."""
        return frozenset(self._state.marked)

    def advance(self, now: datetime) -> list[SimStep]:
        """Play the controllers forward to ``now``; what they did, in time order."""
        state = self._state
        state.steps = []
        moment = self._last if self._last is not None and self._last <= now else now
        for _ in range(MAX_TICKS):
            self._tick(moment)
            following = self._next(moment)
            if following is None or following > now:
                break
            moment = following
        else:
            self.limit_hit = MAX_TICKS
        if moment < now:
            self._tick(now)
        self._last = now
        return sorted(state.steps, key=lambda step: step.at)

    def next_due(self) -> datetime | None:
        """When the simulated controllers next have something to do (None: settled)."""
        if self._last is None:
            return None
        return self._next(self._last, settle=False)

    def _tick(self, moment: datetime) -> None:
        state = self._state
        state.now = moment
        if self._last is not None:
            # The API server's clock reads the controllers' instant: a pod evicted at 14:06:00
            # with 30 s of grace is still Terminating at a pass at 14:06:00, however far the
            # replay has already moved the clock for the next batch.
            state.emulator.clock.set(moment, frozen=True)
        state.changed = False
        for node in state.view("Node"):
            pool = nodes.labels_of(node).get(nodes.NODEPOOL_LABEL)
            if pool:
                state.pool_of_node[nodes.name_of(node)] = pool
        lifecycle.reconcile(state)
        termination.reconcile(state)
        scheduling.recreate_evicted(state)
        scheduling.bind_pending(state)
        provisioner.pool_status(state)
        scheduling.provision(state)
        if self._disruption:
            disruption.reconcile(state)
        if self._observe is not None:
            self._observe(moment)

    def _next(self, moment: datetime, settle: bool = True) -> datetime | None:
        state = self._state
        state.now = moment
        times = lifecycle.due(state) + termination.due(state) + scheduling.due(state)
        if self._disruption:
            times += disruption.due(state)
        if settle and state.changed:
            times.append(moment + SETTLE)
        future = [t for t in times if t is not None and t > moment]
        return min(future, default=None)
