"""What to do when Lifeboat's own follow-up work comes due. Pure: the caller reads the
cluster, this judges it.

A deferred notice (``Task.DECIDE``) is simply decided again by :func:`decide`; the two other
tasks carry out what an earlier decision started: finishing a replacement and continuing a
drain that PodDisruptionBudgets held back.

With ``hand_over`` at-once (the default) finishing a replacement is no longer scheduled: a
voluntary replacement hands the old node to Karpenter at once (docs/concepts/hand-over.md);
with when-ready, :func:`hand_over_when_ready` judges each look. A follow-up scheduled by an
earlier version,
which waited for the replacement to be Ready, is still honoured when it comes due: the old
claim is deleted now. Waiting longer is what left an empty replacement to Karpenter's
emptiness consolidation, and a replacement being deleted is no replacement at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from lifeboat.decide.model import Decision, Step
from lifeboat.kube import nodes
from lifeboat.marks import handover, node_marks
from lifeboat.model.instances import instance_id_from_provider_id
from lifeboat.model.notice import Kind
from lifeboat.model.outcome import Outcome
from lifeboat.model.target import Target
from lifeboat.wakeup.codec import Wakeup


def finish_replacement(wakeup: Wakeup, replacement: Mapping[str, Any] | None) -> Decision:
    """Delete the old NodeClaim now, whatever state its ``replacement`` (as read now; None:
    gone) is in; the reason says which. Karpenter's provisioner nominates the replacement for
    the old node's pods while they move, which keeps it from being consolidated."""
    name = wakeup.replacement or "(none)"
    if replacement is None:
        state = f"replacement {name} is gone"
    elif nodes.is_deleting(replacement):
        state = f"replacement {name} is itself being deleted"
    elif nodes.is_ready(replacement):
        state = f"replacement {name} is Ready"
    elif (replacement.get("status") or {}).get("providerID"):
        state = f"replacement {name} is launched"
    else:
        state = f"replacement {name} is not launched yet"
    return Decision(
        Outcome.ACTED,
        f"{state}: deleting NodeClaim {wakeup.old_nodeclaim} now (hand-over to Karpenter)",
        (Step.DELETE_NODECLAIM,),
    )


def hand_over_when_ready(
    wakeup: Wakeup, replacement: Mapping[str, Any] | None, now: datetime
) -> Decision:
    """The when-ready hand-over (``Task.HAND_OVER``, lifeboat.marks.handover), as Karpenter's
    disruption queue finishes a drift command (``Queue.waitOrTerminate``): the old claim is
    deleted once every replacement has the ``Initialized`` condition; until then it waits
    (looked at again every ``FOLLOW_UP_INTERVAL``); a replacement that is gone or being
    deleted, or not initialized within ``handover.PATIENCE`` of its creation, is given up
    on (Karpenter rolls the command back: ``CompleteCommand`` unmarks the candidates): the
    old claim is kept and its node put back in service, the replacement loses its
    protection. ``replacement`` as read now (None: gone)."""
    name = wakeup.replacement or "(none)"
    old = wakeup.old_nodeclaim
    if replacement is not None and not nodes.is_deleting(replacement):
        if handover.initialized(replacement):
            return Decision(
                Outcome.ACTED,
                f"replacement {name} is initialized: deleting NodeClaim {old} (hand-over "
                "when ready)",
                (Step.RELEASE_REPLACEMENT, Step.DELETE_NODECLAIM),
            )
        started = wakeup.started or wakeup.due
        if now < started + handover.PATIENCE:
            return Decision(
                Outcome.DEFERRED,
                f"replacement {name} is not initialized yet: NodeClaim {old} kept until it is",
                awaits_replacement=True,
            )
        state = f"replacement {name} not initialized within {_minutes(handover.PATIENCE)}"
    elif replacement is None:
        state = f"replacement {name} is gone"
    else:
        state = f"replacement {name} is being deleted"
    return Decision(
        Outcome.IGNORED,
        f"{state}: hand-over given up, NodeClaim {old} kept and its node back in service",
        (Step.RELEASE_REPLACEMENT, Step.GIVE_BACK),
        gave_up=True,
    )


def _minutes(delta: Any) -> str:
    return f"{int(delta.total_seconds() // 60)}m"


def check_old_claim(wakeup: Wakeup, old: Mapping[str, Any] | None) -> Decision | None:
    """Whether the NodeClaim a hand-over would delete (``old``, as read now; None: gone) is
    still the one the wake-up was scheduled for: same uid, running on the wake-up's
    instance. None when it is; otherwise the decision to leave it alone."""
    name = wakeup.old_nodeclaim
    if old is None:
        return Decision(Outcome.IGNORED, f"NodeClaim {name} is already gone")
    uid = old.get("metadata", {}).get("uid")
    if uid != wakeup.old_nodeclaim_uid:
        return Decision(
            Outcome.IGNORED, f"NodeClaim {name} is now another claim (uid {uid}): left alone"
        )
    provider = (old.get("status") or {}).get("providerID")
    if instance_id_from_provider_id(provider) != wakeup.notice.instance_id:
        return Decision(
            Outcome.REJECTED,
            f"NodeClaim {name} runs on {provider or 'no instance'}, not on instance "
            f"{wakeup.notice.instance_id}: the follow-up does not match the cluster",
        )
    return None


def continue_drain(target: Target) -> Decision:
    """Evict what PodDisruptionBudgets held back, then let the Auto Scaling group go on.
    A node already gone has nothing left to drain: only the lifecycle action remains."""
    if target.node is None:
        return Decision(Outcome.ACTED, "continuing the drain", (Step.COMPLETE_LIFECYCLE,))
    if not node_marks.acted_on(target.node):
        # A drain Lifeboat started left its NoSchedule (or NoExecute) taint on the node; a
        # wake-up for a node without it (forged, or the taint removed by an operator) would
        # evict pods from a node nobody took out of service.
        return Decision(
            Outcome.IGNORED,
            f"continuing the drain: node {target.node_name} carries no Lifeboat taint (it was "
            "never taken out of service, or was put back): nothing is evicted",
        )
    return Decision(Outcome.ACTED, "continuing the drain", (Step.EVICT, Step.COMPLETE_LIFECYCLE))


def release_cordon(target: Target) -> Decision:
    """A node cordoned for a rebalance recommendation (only cordoned: the ``cordon`` action,
    or a node group's node) is still here when ``rebalance_cordon_release`` has passed: no
    interruption followed, so Lifeboat's taint and cordon come off (Ready nodes only), with
    an Event on the node and a report, instead of leaving it out of scheduling for ever."""
    node = target.node
    if node is None:
        return Decision(Outcome.IGNORED, f"no node for instance {target.instance_id} any more")
    name = target.node_name
    if nodes.is_deleting(node) or (target.claim is not None and target.claim.deleting):
        return Decision(Outcome.IGNORED, f"node {name} is being deleted; nothing to release")
    key = node_marks.taint_key(Kind.REBALANCE_RECOMMENDATION)
    if not any(t.get("key") == key for t in nodes.taints(node)):
        return Decision(Outcome.IGNORED, f"node {name} no longer carries {key}; nothing to release")
    if not nodes.is_ready(node):
        return Decision(Outcome.IGNORED, f"node {name} is not Ready; left cordoned")
    return Decision(
        Outcome.ACTED,
        f"rebalance recommendation: node {name} was only cordoned and still runs; "
        f"uncordoning it and removing {key}",
        (Step.RESTORE,),
    )
