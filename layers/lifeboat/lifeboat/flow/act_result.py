"""What act's steps share: the contract's action, the outcome they gather into, and the
seam over a lifecycle hook's Auto Scaling calls (:mod:`lifeboat.flow.act` and its steps)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from lifeboat.kube import nodes
from lifeboat.model.notice import LifecycleHook

Action = dict[str, Any]
# What a node about to go gets besides the taint and cordon (``exclude_from_load_balancers``).
EXCLUSION_ACTION: Action = {
    "type": "label",
    "key": nodes.EXCLUDE_FROM_LOAD_BALANCERS_LABEL,
    "value": "true",
}

# A JSON patch whose ``test`` fails is answered 422 by the API server; a stale
# resourceVersion 409. Both mean "re-read the node and try again".
PATCH_ATTEMPTS = 3


class LifecycleActions(Protocol):
    """The Auto Scaling calls of a lifecycle hook (a seam: moto does not implement them)."""

    def complete(self, hook: LifecycleHook, result: str = "CONTINUE") -> None: ...

    def heartbeat(self, hook: LifecycleHook) -> None: ...


@dataclass
class ActResult:
    """What act did: the contract's ``actions`` list, plus what is left for later."""

    actions: list[Action] = field(default_factory=list)
    replacement: str | None = None
    pods_remaining: int = 0
    # The replacement already existed: an earlier notice or delivery acted on this claim.
    replaced_before: bool = False
    # Why the replacement was not created (refused by the API server, or no valid claim):
    # a voluntary notice then keeps the old claim (see ``Actor.carry_out``).
    replacement_refused: str | None = None
    # Evicted pods still terminating (within their grace period) on a node whose lifecycle
    # action waits for them: CONTINUE only once they are gone.
    pods_terminating: int = 0
    # Evicted pods stuck terminating on a node no kubelet answers for (NotReady, impaired):
    # not waited for (Karpenter's IsStuckTerminating).
    pods_stuck: int = 0
    # The node was deleted between its read and the patch (404): nothing to drain.
    node_gone: bool = False
    # The replacement a when-ready hand-over waits for before the old claim is deleted.
    awaiting: str | None = None
