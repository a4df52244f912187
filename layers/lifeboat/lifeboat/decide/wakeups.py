"""What to do when Lifeboat's own follow-up work comes due. Pure: the caller reads the
cluster, this judges it.

A deferred notice (``Task.DECIDE``) is simply decided again by :func:`decide`; the two other
tasks carry out what an earlier decision started: finishing a replacement (delete the old
NodeClaim once its replacement is Ready) and continuing a drain that PodDisruptionBudgets
held back.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from lifeboat import nodes
from lifeboat.decide.model import FOLLOW_UP_INTERVAL, Decision, Step
from lifeboat.instances import instance_id_from_provider_id
from lifeboat.report import Outcome
from lifeboat.settings import Settings
from lifeboat.target import Target
from lifeboat.wakeup import Wakeup


def finish_replacement(
    wakeup: Wakeup, replacement: Mapping[str, Any] | None, settings: Settings, now: datetime
) -> Decision:
    """Delete the old NodeClaim once its ``replacement`` (as read now; None: gone) is Ready,
    or when waiting longer would only risk the deadline (``replacement_timeout``)."""
    started = wakeup.started or now
    ready = replacement is not None and nodes.is_ready(replacement)
    give_up = started + settings.replacement_timeout
    if replacement is not None and not ready and now < give_up:
        return Decision(
            Outcome.DEFERRED,
            f"waiting for replacement {wakeup.replacement} to become Ready",
            deferred_until=min(now + FOLLOW_UP_INTERVAL, give_up),
        )
    if ready:
        why = f"replacement {wakeup.replacement} is Ready"
    elif replacement is None:
        why = f"replacement {wakeup.replacement or '(none)'} is gone"
    else:
        why = f"replacement {wakeup.replacement} not Ready after the timeout"
    return Decision(
        Outcome.ACTED,
        f"{why}: deleting NodeClaim {wakeup.old_nodeclaim}",
        (Step.DELETE_NODECLAIM,),
    )


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
    return Decision(Outcome.ACTED, "continuing the drain", (Step.EVICT, Step.COMPLETE_LIFECYCLE))
