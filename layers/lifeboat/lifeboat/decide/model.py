"""What a decision is, and the timings every decision shares."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from lifeboat.model.notice import Kind
from lifeboat.model.outcome import Outcome

# How long a deferral with no known end (waiting for capacity to free) sleeps between looks.
RECHECK_INTERVAL = timedelta(minutes=5)
# How often a pending replacement or a PDB-blocked drain is looked at again.
FOLLOW_UP_INTERVAL = timedelta(seconds=30)
# How long a notice without a deadline (a rebalance recommendation) may wait for its pool
# to allow it. The risk it warns of is near-term: a day later, a Spot interruption has
# either come (and was handled as one) or the capacity has recovered.
VOLUNTARY_PATIENCE = timedelta(hours=24)
# A rotation's node waits longer: a migration across days waits for the pool's window, and
# the longest a budget's schedule commonly repeats is a week (a weekly window, "@weekly"),
# so eight days always see the next one open. What no window ever allows is still let go.
ROTATION_PATIENCE = timedelta(days=8)


def patience(kind: Kind) -> timedelta:
    """How long a notice without a deadline may wait for its pool to allow it."""
    return ROTATION_PATIENCE if kind is Kind.ROTATION else VOLUNTARY_PATIENCE


class Step(StrEnum):
    """What ``act`` does, in this order."""

    TAINT_AND_CORDON = "taint-and-cordon"  # one patch: NoSchedule-ish taint + unschedulable
    MARK_PENDING = "mark-pending"  # PreferNoSchedule taint while a voluntary action waits
    CLEAR_PENDING = "clear-pending"  # that mark, removed when the notice is let go
    CREATE_REPLACEMENT = "create-nodeclaim"
    DELETE_NODECLAIM = "delete-nodeclaim"  # Karpenter drains (honouring PDBs) and terminates
    # The when-ready hand-over (lifeboat.marks.handover): the replacement's protection from
    # consolidation removed, and, when the replacement never initialized, the old node
    # put back in service (taint and cordon off; its claim is kept).
    RELEASE_REPLACEMENT = "release-replacement"
    GIVE_BACK = "give-back"
    EVICT = "evict"  # no Karpenter: Lifeboat drains the node through the Eviction API
    COMPLETE_LIFECYCLE = "complete-lifecycle-action"
    # The maintenance is over and the node kept: its taint off, uncordoned, back in load
    # balancers (what the Node Termination Handler does after a reboot).
    RESTORE = "restore"


@dataclass(frozen=True)
class Decision:
    """What ``decide`` concluded about one notice: its outcome, why, and the steps to take."""

    # acted, deferred or ignored; rejected only for a follow-up the cluster contradicts.
    outcome: Outcome
    reason: str
    steps: tuple[Step, ...] = ()
    # When a deferred notice should be decided again; None with DEFERRED: waits for capacity.
    deferred_until: datetime | None = None
    # When to look again if nothing else wakes the notice (deferrals waiting for capacity).
    recheck_at: datetime | None = None
    # True when an action goes ahead although budgets or do-not-disrupt said no.
    forced: bool = False
    # True when a voluntary notice is let go because its pool never allowed it in time.
    gave_up: bool = False
    # True while a when-ready hand-over waits for its replacement to be initialized: the
    # follow-up looks again (lifeboat.marks.handover).
    awaits_replacement: bool = False


def ignore(reason: str) -> Decision:
    return Decision(Outcome.IGNORED, reason)


def give_up(reason: str) -> Decision:
    return Decision(Outcome.IGNORED, reason, gave_up=True)
