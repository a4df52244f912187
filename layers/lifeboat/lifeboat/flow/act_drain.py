"""Act's drain without Karpenter: the node's pods evicted, PodDisruptionBudget refusals
retried for a bounded patience, and a lifecycle hook's instance kept alive while its pods
are held back or still terminating."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime, timedelta

from lifeboat.errors import BrokenInvariant
from lifeboat.flow.act_result import ActResult, LifecycleActions
from lifeboat.karpenter import disruption_rules
from lifeboat.kube import nodes
from lifeboat.kube.client import Eviction, KubeApi
from lifeboat.marks import node_marks
from lifeboat.model.notice import Notice
from lifeboat.model.target import Target


class Drainer:
    def __init__(
        self,
        kube: KubeApi,
        lifecycle: LifecycleActions | None,
        clock: Callable[[], datetime],
        sleep: Callable[[float], None] = time.sleep,
        patience: float = 0.0,
    ) -> None:
        self._kube = kube
        self._lifecycle = lifecycle
        self._clock = clock
        self._sleep = sleep
        # How long one invocation keeps retrying PDB-blocked evictions before it hands the
        # rest of the drain to a later wake-up (never sleep out a deadline in a Lambda).
        self._drain_patience = patience

    def drain(self, notice: Notice, target: Target, outcome: ActResult, dry: bool) -> None:
        if target.node is None:
            raise BrokenInvariant("lifeboat.flow.act_drain.drain: target.node is None")
        node_name = nodes.name_of(target.node)
        outcome.pods_remaining = self._evict_pods(notice, node_name, outcome, dry)
        if notice.lifecycle is not None and not dry:
            # NTH issue #355: completing the action while the evicted pods still run their
            # preStop hooks and grace periods lets the instance go under them.
            terminating = disruption_rules.terminating_pods(self._kube.list_pods_on_node(node_name))
            if node_marks.unresponsive(target.node):
                # No kubelet will ever confirm them: a pod a minute past its deletionTimestamp
                # holds nothing up, as Karpenter's drain stops waiting (IsStuckTerminating).
                now = self._clock()
                stuck = [p for p in terminating if disruption_rules.stuck_terminating(p, now)]
                outcome.pods_stuck = len(stuck)
                terminating = [
                    p for p in terminating if not disruption_rules.stuck_terminating(p, now)
                ]
            outcome.pods_terminating = len(terminating)
        waiting = outcome.pods_remaining or outcome.pods_terminating
        if waiting and not dry and notice.lifecycle and self._lifecycle:
            # Keep the instance alive while PodDisruptionBudgets hold the drain back, or
            # while the evicted pods terminate.
            self._lifecycle.heartbeat(notice.lifecycle)

    def _evict_pods(self, notice: Notice, node_name: str, outcome: ActResult, dry: bool) -> int:
        """Evict the node's pods, retrying PDB refusals for ``drain_patience`` seconds (never
        past the notice's deadline); returns how many pods PDBs still hold.

        One clock, the injected one, says when to stop: patience and the deadline are both
        instants on it. The seconds slept (through the injected ``sleep``) bound the wait as
        well, so a clock that stands still (replay's ``--at``) cannot keep it going."""
        give_up = self._clock() + timedelta(seconds=self._drain_patience)
        if notice.deadline is not None:
            give_up = min(give_up, notice.deadline)
        slept = 0.0
        delay = 0.5
        while True:
            blocked = self._evict_round(node_name, outcome, dry)
            if blocked == 0 or dry:
                return blocked
            left = (give_up - self._clock()).total_seconds()
            if left <= 0 or slept >= self._drain_patience:
                return blocked
            pause = min(delay, left, self._drain_patience - slept)
            self._sleep(pause)
            slept += pause
            delay = min(delay * 2, 5.0)

    def _evict_round(self, node_name: str, outcome: ActResult, dry: bool) -> int:
        """One eviction request per pod on the node; how many a PDB refused (429)."""
        blocked = 0
        for pod in disruption_rules.evictable_pods(self._kube.list_pods_on_node(node_name)):
            meta = pod["metadata"]
            namespace, name = meta.get("namespace", "default"), meta["name"]
            result = Eviction.EVICTED if dry else self._kube.evict_pod(namespace, name)
            if result is Eviction.EVICTED:
                outcome.actions.append({"type": "evict", "pod": f"{namespace}/{name}"})
            elif result is Eviction.BLOCKED:
                blocked += 1
        return blocked
