"""The when-ready hand-over's decisions and follow-ups (lifeboat.decide.wakeups,
lifeboat.decide.followups, lifeboat.marks.handover). Pure: hand-built wake-ups and claims, the
clock injected. Each follows Karpenter's disruption queue (``Queue.waitOrTerminate``: the
candidate goes once every replacement has the ``Initialized`` condition; after
``minRetryDuration`` the command is rolled back by ``CompleteCommand``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from lifeboat.decide import FOLLOW_UP_INTERVAL, Decision, Step, follow_ups
from lifeboat.decide.wakeups import hand_over_when_ready
from lifeboat.events.notice import Kind, Notice
from lifeboat.kube import nodes
from lifeboat.marks import handover
from lifeboat.model.report import Outcome
from lifeboat.model.target import ClaimRef, Target
from lifeboat.wakeup.codec import Task, Wakeup

STARTED = datetime(2026, 12, 1, 18, 0, tzinfo=UTC)
INSTANCE = "i-0a1b2c3d4e5f60002"
NOTICE = Notice(Kind.REBALANCE_RECOMMENDATION, "ev-1", STARTED, INSTANCE)


def waiting(due: datetime) -> Wakeup:
    return Wakeup(
        Task.HAND_OVER,
        NOTICE,
        due,
        replacement="general-new",
        old_nodeclaim="general-old",
        old_nodeclaim_uid="uid-old",
        started=STARTED,
    )


def claim(*, initialized: bool = False, deleting: bool = False) -> dict[str, Any]:
    conditions = [{"type": "Initialized", "status": "True" if initialized else "Unknown"}]
    metadata: dict[str, Any] = {"name": "general-new", "uid": "uid-new"}
    if deleting:
        metadata["deletionTimestamp"] = "2026-12-01T18:00:20Z"
    return {"metadata": metadata, "status": {"conditions": conditions}}


def test_an_initialized_replacement_is_released_and_the_old_claim_deleted() -> None:
    """waitOrTerminate: Initialized True on every replacement, then the candidate goes."""
    decision = hand_over_when_ready(waiting(STARTED), claim(initialized=True), STARTED)
    assert decision.outcome is Outcome.ACTED
    assert decision.steps == (Step.RELEASE_REPLACEMENT, Step.DELETE_NODECLAIM)


def test_a_replacement_not_initialized_is_waited_for_up_to_ten_minutes() -> None:
    """minRetryDuration is 10 minutes: waiting just before, given up at it."""
    before = STARTED + handover.PATIENCE - timedelta(seconds=1)
    decision = hand_over_when_ready(waiting(before), claim(), before)
    assert decision.outcome is Outcome.DEFERRED and decision.awaits_replacement
    assert decision.steps == ()
    at = STARTED + handover.PATIENCE
    given_up = hand_over_when_ready(waiting(at), claim(), at)
    assert given_up.outcome is Outcome.IGNORED and given_up.gave_up
    assert given_up.steps == (Step.RELEASE_REPLACEMENT, Step.GIVE_BACK)
    assert "not initialized within 10m" in given_up.reason


def test_a_replacement_gone_or_being_deleted_is_given_up_on_at_once() -> None:
    """A command whose replacement is deleted fails (CompleteCommand unmarks the candidate):
    the old claim is never deleted without a replacement on its way."""
    for replacement, said in ((None, "is gone"), (claim(deleting=True), "being deleted")):
        decision = hand_over_when_ready(waiting(STARTED), replacement, STARTED)
        assert decision.gave_up and said in decision.reason
        assert Step.DELETE_NODECLAIM not in decision.steps


def test_waiting_schedules_the_next_look_from_the_wake_ups_due_time() -> None:
    """Timed from the wake-up's own due time (a redelivery schedules the same next look)."""
    wakeup = waiting(STARTED + timedelta(minutes=1))
    target = Target(INSTANCE, claim=ClaimRef("general-old", "uid-old"))
    decision = Decision(Outcome.DEFERRED, "waiting", awaits_replacement=True)
    late = STARTED + timedelta(minutes=3)
    (next_look,) = follow_ups(NOTICE, target, decision, pods_remaining=0, now=late, wakeup=wakeup)
    assert next_look.task is Task.HAND_OVER
    assert next_look.due == wakeup.due + FOLLOW_UP_INTERVAL
    assert next_look.started == STARTED and next_look.attempt == 1


def test_a_hand_over_that_waits_schedules_its_first_look() -> None:
    target = Target(INSTANCE, claim=ClaimRef("general-old", "uid-old"))
    decision = Decision(Outcome.ACTED, "acted", (Step.CREATE_REPLACEMENT, Step.DELETE_NODECLAIM))
    (first,) = follow_ups(
        NOTICE, target, decision, pods_remaining=0, now=STARTED, awaiting="general-new"
    )
    assert (first.task, first.due, first.started) == (
        Task.HAND_OVER,
        STARTED + FOLLOW_UP_INTERVAL,
        STARTED,
    )
    assert (first.old_nodeclaim, first.old_nodeclaim_uid, first.replacement) == (
        "general-old",
        "uid-old",
        "general-new",
    )


def test_the_hold_adds_and_the_release_removes_only_lifeboats_annotation() -> None:
    node: dict[str, Any] = {"metadata": {"name": "n", "annotations": {"a": "b"}}}
    operations = handover.hold_operations(node)
    assert [op["path"] for op in operations] == [
        "/metadata/annotations/karpenter.sh~1do-not-disrupt",
        "/metadata/annotations/lifeboat.dev~1protected-until-hand-over",
    ]
    held = {"metadata": {"annotations": {"a": "b", **dict.fromkeys(_keys(), "true")}}}
    removal = handover.unprotect_operations(held)
    assert {op["op"] for op in removal} == {"test", "remove"}
    # The operator's own do-not-disrupt (no marker) is neither added to nor removed.
    theirs = {"metadata": {"annotations": {nodes.DO_NOT_DISRUPT: "true"}}}
    assert handover.hold_operations(theirs) == []
    assert handover.unprotect_operations(theirs) == []


def _keys() -> tuple[str, str]:
    return nodes.DO_NOT_DISRUPT, handover.PROTECTED_ANNOTATION
