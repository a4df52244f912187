"""Decisions about Lifeboat's own follow-up work, and which follow-ups a decision calls for.
Pure functions: hand-built wake-ups and targets, the clock injected."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from lifeboat.aws.scheduler import schedule_name
from lifeboat.decide import FOLLOW_UP_INTERVAL, Decision, Step, follow_ups
from lifeboat.decide.wakeups import check_old_claim, continue_drain, finish_replacement
from lifeboat.events.notice import Kind, Notice
from lifeboat.model.instances import InstanceInfo
from lifeboat.model.report import Outcome
from lifeboat.model.target import ClaimRef, Target
from lifeboat.wakeup.codec import Task, Wakeup

NOW = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)
INSTANCE = "i-0a1b2c3d4e5f60002"
NOTICE = Notice(Kind.REBALANCE_RECOMMENDATION, "ev-1", NOW - timedelta(minutes=1), INSTANCE)


def finishing(started: datetime) -> Wakeup:
    return Wakeup(
        Task.FINISH_REPLACEMENT,
        NOTICE,
        started + FOLLOW_UP_INTERVAL,
        replacement="general-new",
        old_nodeclaim="general-old",
        old_nodeclaim_uid="uid-old",
        started=started,
        cluster="prod",
    )


def claim(
    *, ready: bool = False, launched: bool = False, deleting: bool = False
) -> dict[str, object]:
    status: dict[str, object] = {
        "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]
    }
    if launched or ready:
        status["providerID"] = "aws:///us-east-1a/i-0123456789abcdef0"
    meta: dict[str, object] = {"name": "general-new"}
    if deleting:
        meta["deletionTimestamp"] = "2026-12-01T14:04:00Z"
    return {"metadata": meta, "status": status}


def test_a_follow_up_from_an_earlier_version_deletes_the_old_claim_at_once() -> None:
    """Issue 11.3: waiting for Ready (and looking only every 30 s) left the replacement
    empty and Ready, an emptiness candidate, while the old node's pods had not moved."""
    for replacement, state in (
        (claim(ready=True), "is Ready"),
        (claim(launched=True), "is launched"),
        (claim(), "is not launched yet"),
        (None, "is gone"),
    ):
        decision = finish_replacement(finishing(NOW), replacement)
        assert decision.outcome is Outcome.ACTED
        assert decision.steps == (Step.DELETE_NODECLAIM,)
        assert decision.reason == (
            f"replacement general-new {state}: deleting NodeClaim general-old now "
            "(hand-over to Karpenter)"
        )


def test_a_replacement_being_deleted_is_not_taken_for_a_ready_one() -> None:
    """Issue 11.3: a Ready replacement Karpenter is consolidating was accepted as done."""
    decision = finish_replacement(finishing(NOW), claim(ready=True, deleting=True))
    assert decision.reason.startswith("replacement general-new is itself being deleted")
    assert decision.steps == (Step.DELETE_NODECLAIM,)


def test_a_drain_continues_unless_the_node_is_gone() -> None:
    taint = {"key": "lifeboat.dev/asg-termination", "effect": "NoSchedule"}
    node = {"metadata": {"name": "ip-10-0-1-12"}, "spec": {"taints": [taint]}}
    assert continue_drain(Target(INSTANCE, node=node)).steps == (
        Step.EVICT,
        Step.COMPLETE_LIFECYCLE,
    )
    assert continue_drain(Target(INSTANCE)).steps == (Step.COMPLETE_LIFECYCLE,)


@pytest.mark.parametrize(
    "taints",
    [
        [],
        [{"key": "lifeboat.dev/rebalance-recommendation", "effect": "PreferNoSchedule"}],
        [{"key": "example.com/other", "effect": "NoSchedule"}],
    ],
    ids=["no-taint", "only-a-waiting-mark", "someone-elses-taint"],
)
def test_a_drain_continues_only_on_a_node_lifeboat_took_out_of_service(
    taints: list[dict[str, str]],
) -> None:
    """Regression (issue 23.5): a forged continue-drain wake-up evicted the pods of a healthy
    node never cordoned. Only a node carrying Lifeboat's NoSchedule taint is drained on."""
    node = {"metadata": {"name": "ip-10-0-1-12"}, "spec": {"taints": taints}}
    decision = continue_drain(Target(INSTANCE, node=node))
    assert decision.outcome is Outcome.IGNORED
    assert decision.steps == ()
    assert "carries no Lifeboat taint" in decision.reason


def test_a_deferral_is_decided_again_at_its_earliest_time() -> None:
    later = NOW + timedelta(hours=3)
    decision = Decision(
        Outcome.DEFERRED, "window", deferred_until=later, recheck_at=NOW + timedelta(minutes=5)
    )
    [wakeup] = follow_ups(NOTICE, Target(INSTANCE), decision, pods_remaining=0, now=NOW)
    assert (wakeup.task, wakeup.due) == (Task.DECIDE, NOW + timedelta(minutes=5))


def test_a_replacement_hands_over_at_once_and_schedules_no_follow_up() -> None:
    """Issue 11.3/17: the old claim is deleted in the same step as the replacement is made
    (Karpenter then counts the node as disrupting); nothing is left to finish later."""
    target = Target(
        INSTANCE,
        info=InstanceInfo(INSTANCE, cluster="prod"),
        claim=ClaimRef("general-old", "uid-old"),
    )
    decision = Decision(
        Outcome.ACTED,
        "replace",
        (Step.TAINT_AND_CORDON, Step.CREATE_REPLACEMENT, Step.DELETE_NODECLAIM),
    )
    assert follow_ups(NOTICE, target, decision, pods_remaining=0, now=NOW) == []


def test_pods_held_by_pdbs_are_tried_again() -> None:
    decision = Decision(Outcome.ACTED, "drain", (Step.TAINT_AND_CORDON, Step.EVICT))
    [wakeup] = follow_ups(NOTICE, Target(INSTANCE), decision, pods_remaining=2, now=NOW)
    assert (wakeup.task, wakeup.due) == (Task.CONTINUE_DRAIN, NOW + FOLLOW_UP_INTERVAL)


def test_an_action_done_in_full_needs_no_follow_up() -> None:
    decision = Decision(Outcome.ACTED, "spot", (Step.TAINT_AND_CORDON, Step.DELETE_NODECLAIM))
    assert follow_ups(NOTICE, Target(INSTANCE), decision, pods_remaining=0, now=NOW) == []


@pytest.mark.parametrize("task", [Task.DECIDE, Task.CONTINUE_DRAIN])
def test_a_follow_up_delivered_twice_schedules_the_same_next_one(task: Task) -> None:
    """Issue 10.6: two deliveries of one wake-up a second apart (SQS is at least once) once
    scheduled two follow-ups under two schedule names; the chain forked."""
    wakeup = Wakeup(
        task,
        NOTICE,
        NOW - timedelta(seconds=5),
        replacement="general-new",
        old_nodeclaim="general-old",
        old_nodeclaim_uid="uid-old",
        started=NOW - timedelta(minutes=2),
    )
    plans = []
    for delivered in (NOW, NOW + timedelta(seconds=1)):
        if task is Task.DECIDE:  # deferred again, waiting for capacity
            decision = Decision(
                Outcome.DEFERRED, "capacity", recheck_at=delivered + timedelta(minutes=5)
            )
            pods = 0
        else:  # PDBs still hold pods back
            decision = Decision(Outcome.ACTED, "drain", (Step.EVICT,))
            pods = 1
        plans.append(
            follow_ups(
                NOTICE,
                Target(INSTANCE),
                decision,
                pods_remaining=pods,
                now=delivered,
                wakeup=wakeup,
            )
        )
    first, second = plans
    assert [w.key for w in first] == [w.key for w in second] and len(first) == 1
    assert schedule_name(first[0]) == schedule_name(second[0])


# -- a rebalance's cordon released later (decide.followups._only_cordoned) ---------------------

RELEASE_AFTER = timedelta(hours=6)
CORDONED = Decision(Outcome.ACTED, "cordon", (Step.TAINT_AND_CORDON,))


def _released(notice: Notice, decision: Decision, wakeup: Wakeup | None = None) -> list[Wakeup]:
    planned = follow_ups(
        notice,
        Target(INSTANCE),
        decision,
        pods_remaining=0,
        now=NOW,
        wakeup=wakeup,
        release_cordon_after=RELEASE_AFTER,
    )
    return [w for w in planned if w.task is Task.RELEASE_CORDON]


def test_a_rebalance_only_cordoned_is_looked_at_again_to_release_the_cordon() -> None:
    """A cordon-only rebalance (the Node Termination Handler's cordon) is not left out of
    scheduling for ever: a release is scheduled ``LIFEBOAT_REBALANCE_CORDON_RELEASE_SECONDS``
    later; none when the setting is off."""
    [release] = _released(NOTICE, CORDONED)
    assert release.due == NOW + RELEASE_AFTER
    off = follow_ups(NOTICE, Target(INSTANCE), CORDONED, pods_remaining=0, now=NOW)
    assert off == []


def test_only_a_cordon_only_rebalance_is_released() -> None:
    """No release for another kind cordoned, a rebalance whose node is replaced or drained,
    or one that was not acted on."""
    spot = Notice(Kind.SPOT_INTERRUPTION, "ev-2", NOW, INSTANCE)
    assert _released(spot, CORDONED) == []
    replaced = Decision(
        Outcome.ACTED,
        "replace",
        (Step.TAINT_AND_CORDON, Step.CREATE_REPLACEMENT, Step.DELETE_NODECLAIM),
    )
    assert _released(NOTICE, replaced) == []
    drained = Decision(Outcome.ACTED, "drain", (Step.TAINT_AND_CORDON, Step.EVICT))
    assert _released(NOTICE, drained) == []
    not_acted = Decision(Outcome.IGNORED, "let go", (Step.TAINT_AND_CORDON,))
    assert _released(NOTICE, not_acted) == []


@pytest.mark.parametrize("task", [Task.RELEASE_CORDON, Task.CONTINUE_DRAIN])
def test_a_release_is_scheduled_by_the_notice_or_its_decision_not_by_other_follow_ups(
    task: Task,
) -> None:
    """A decision looked at again (``Task.DECIDE``) that cordons schedules the release; the
    release itself, or a drain's continuation, does not schedule another."""
    decide_again = Wakeup(Task.DECIDE, NOTICE, NOW)
    assert len(_released(NOTICE, CORDONED, decide_again)) == 1
    assert _released(NOTICE, CORDONED, Wakeup(task, NOTICE, NOW)) == []


# -- the claim a hand-over would delete (decide.wakeups.check_old_claim) ----------------------


def _old_claim(provider: str | None) -> dict[str, object]:
    status: dict[str, object] = {"providerID": provider} if provider else {}
    return {"metadata": {"name": "general-old", "uid": "uid-old"}, "status": status}


def test_the_old_claim_on_the_wake_ups_instance_is_the_one_to_delete() -> None:
    assert check_old_claim(finishing(NOW), _old_claim(f"aws:///us-east-1a/{INSTANCE}")) is None


@pytest.mark.parametrize(
    "other", ["i-0000000000000000a", "i-ffffffffffffffff0"], ids=["sorts-before", "sorts-after"]
)
def test_an_old_claim_on_another_instance_is_rejected_whichever_way_its_id_sorts(
    other: str,
) -> None:
    """The claim of that name and uid runs elsewhere: the follow-up does not match the
    cluster and deletes nothing (an instance id compared for equality, not order)."""
    decision = check_old_claim(finishing(NOW), _old_claim(f"aws:///us-east-1a/{other}"))
    assert decision is not None and decision.outcome is Outcome.REJECTED
    assert f"runs on aws:///us-east-1a/{other}, not on instance {INSTANCE}" in decision.reason


def test_an_old_claim_not_launched_is_said_to_run_on_no_instance() -> None:
    decision = check_old_claim(finishing(NOW), _old_claim(None))
    assert decision is not None and decision.outcome is Outcome.REJECTED
    assert f"runs on no instance, not on instance {INSTANCE}" in decision.reason


def test_a_deferral_with_no_time_of_its_own_is_decided_again_in_30_seconds() -> None:
    """decide_again_at: neither a deferral's end nor a look-again time given (nothing to
    wait for in particular): decided again ``FOLLOW_UP_INTERVAL`` later, never earlier."""
    decision = Decision(Outcome.DEFERRED, "waiting")
    [wakeup] = follow_ups(NOTICE, Target(INSTANCE), decision, pods_remaining=0, now=NOW)
    assert (wakeup.task, wakeup.due) == (Task.DECIDE, NOW + FOLLOW_UP_INTERVAL)
