"""The policy ``decide()``: hand-built notices and targets, the clock injected. No I/O."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from lifeboat.decide import FOLLOW_UP_INTERVAL, RECHECK_INTERVAL, Decision, Step, decide
from lifeboat.decide.notice import replacement_refused
from lifeboat.decide.staleness import Stale
from lifeboat.events.notice import Kind, Notice
from lifeboat.marks import node_marks
from lifeboat.model.report import Outcome
from lifeboat.model.settings import Settings
from lifeboat.model.target import ClaimRef, PoolCounts, Target
from tests.support import kube
from tests.support.events import notice

# 2026-12-01 is a Tuesday: 14:05 UTC is inside a Mon-Fri 09:00-17:00 freeze window.
TUESDAY_AFTERNOON = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)
# 2026-12-05 is a Saturday: no freeze.
SATURDAY = datetime(2026, 12, 5, 10, 0, tzinfo=UTC)
INSTANCE = "i-0a1b2c3d4e5f60001"
NODE = "ip-10-0-1-11.ec2.internal"
CLAIM = "general-7xkqz"

KARPENTER_STEPS = (Step.TAINT_AND_CORDON, Step.CREATE_REPLACEMENT, Step.DELETE_NODECLAIM)
# The hand-over: a voluntary replacement is created and the old claim deleted at once, as for
# an involuntary notice (only the budget decides when).
VOLUNTARY_KARPENTER_STEPS = KARPENTER_STEPS
INVOLUNTARY = (
    Kind.SPOT_INTERRUPTION,
    Kind.STATE_CHANGE,
    Kind.ASG_TERMINATION,
    Kind.CAPACITY_RESERVATION_INTERRUPTION,
)
FREEZE = {"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "8h"}


def weekend_rebalance() -> Notice:
    return notice(Kind.REBALANCE_RECOMMENDATION, at=SATURDAY - timedelta(minutes=2))


def node(
    *,
    claim: str | None = CLAIM,
    taints: Sequence[Mapping[str, Any]] = (),
    annotations: Mapping[str, str] | None = None,
    ready: bool = True,
) -> dict[str, Any]:
    return kube.node(
        name=NODE,
        instance_id=INSTANCE,
        nodepool="general" if claim else None,
        nodeclaim=claim,
        nodeclaim_uid="u1",
        taints=taints,
        annotations=annotations or {},
        ready=ready,
    )


def nodepool(
    budgets: Sequence[Mapping[str, Any]] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    return kube.nodepool(uid="pool-uid", budgets=budgets, annotations=annotations or {})


def pod(
    name: str = "web-1",
    *,
    annotations: Mapping[str, str] | None = None,
    phase: str = "Running",
    created: datetime | None = None,
    started: datetime | str | None = "created",
    deleting: bool = False,
    owner: str | None = None,
) -> dict[str, Any]:
    """A pod on NODE; ``started`` is its ``status.startTime`` (by default its creation; None:
    not started yet)."""
    created = created or datetime(2026, 11, 1, tzinfo=UTC)
    meta: dict[str, Any] = {
        "name": name,
        "namespace": "shop",
        "annotations": dict(annotations or {}),
        "creationTimestamp": created.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    if deleting:
        meta["deletionTimestamp"] = "2026-12-01T14:00:00Z"
    if owner is not None:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner, "name": "x"}]
    status: dict[str, Any] = {"phase": phase}
    start = created if started == "created" else started
    if isinstance(start, datetime):
        status["startTime"] = start.strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"metadata": meta, "spec": {"nodeName": NODE}, "status": status}


def target(
    the_node: Mapping[str, Any] | None = None,
    *,
    claim: str | None = CLAIM,
    pool: Mapping[str, Any] | None = None,
    node_count: int = 5,
    disrupting: int = 0,
    pods: Sequence[Mapping[str, Any]] = (),
    with_budget_state: bool = True,
) -> Target:
    """A Target as ``resolve`` builds it; budget state only when ``with_budget_state``."""
    if the_node is None:
        the_node = node(claim=claim)
    the_pool = pool if pool is not None else (nodepool([{"nodes": "20%"}]) if claim else None)
    return Target(
        INSTANCE,
        node=the_node,
        claim=ClaimRef(claim, "u1") if claim else None,
        nodepool_name="general" if claim else None,
        nodepool=the_pool,
        counts=PoolCounts(node_count, disrupting)
        if (the_pool is not None and with_budget_state)
        else None,
        pods=tuple(pods) if with_budget_state else None,
    )


# -- involuntary ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", [k for k in INVOLUNTARY if k is not Kind.ASG_TERMINATION], ids=str)
def test_involuntary_karpenter_node_replaces_and_deletes_claim_at_once(kind: Kind) -> None:
    decision = decide(notice(kind), target(with_budget_state=False), Settings(), TUESDAY_AFTERNOON)
    assert decision.outcome is Outcome.ACTED
    assert decision.steps == KARPENTER_STEPS
    assert decision.deferred_until is None
    assert CLAIM in decision.reason


def test_karpenter_already_disrupting_node_gets_no_second_replacement() -> None:
    tainted = node(taints=[{"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}])
    decision = decide(
        notice(Kind.SPOT_INTERRUPTION),
        target(tainted, with_budget_state=False),
        Settings(),
        TUESDAY_AFTERNOON,
    )
    assert decision.outcome is Outcome.ACTED
    assert decision.steps == (Step.TAINT_AND_CORDON, Step.DELETE_NODECLAIM)


@pytest.mark.parametrize("kind", [k for k in INVOLUNTARY if k is not Kind.ASG_TERMINATION], ids=str)
def test_involuntary_node_without_nodeclaim_is_drained(kind: Kind) -> None:
    decision = decide(
        notice(kind), target(claim=None, with_budget_state=False), Settings(), TUESDAY_AFTERNOON
    )
    assert decision.outcome is Outcome.ACTED
    assert decision.steps == (Step.TAINT_AND_CORDON, Step.EVICT)
    assert "Eviction API" in decision.reason


def test_asg_termination_drains_then_completes_the_lifecycle_action() -> None:
    decision = decide(
        notice(Kind.ASG_TERMINATION),
        target(claim=None, with_budget_state=False),
        Settings(),
        TUESDAY_AFTERNOON,
    )
    assert decision.outcome is Outcome.ACTED
    assert decision.steps == (Step.TAINT_AND_CORDON, Step.EVICT, Step.COMPLETE_LIFECYCLE)


def test_asg_termination_without_a_node_only_completes_the_lifecycle_action() -> None:
    decision = decide(notice(Kind.ASG_TERMINATION), Target(INSTANCE), Settings(), TUESDAY_AFTERNOON)
    assert decision.outcome is Outcome.ACTED
    assert decision.steps == (Step.COMPLETE_LIFECYCLE,)


@pytest.mark.parametrize("kind", [k for k in INVOLUNTARY if k is not Kind.ASG_TERMINATION])
def test_unknown_node_without_lifecycle_hook_is_ignored(kind: Kind) -> None:
    decision = decide(notice(kind), Target(INSTANCE), Settings(), TUESDAY_AFTERNOON)
    assert decision.outcome is Outcome.IGNORED
    assert decision.steps == ()
    assert INSTANCE in decision.reason


@pytest.mark.parametrize("kind", [k for k in INVOLUNTARY if k is not Kind.ASG_TERMINATION], ids=str)
def test_involuntary_is_never_blocked_by_do_not_disrupt_or_budgets(kind: Kind) -> None:
    blocked = target(
        node(annotations={"karpenter.sh/do-not-disrupt": "true"}),
        pool=nodepool([{"nodes": "0"}, FREEZE]),
        disrupting=4,
        pods=[pod(annotations={"karpenter.sh/do-not-disrupt": "true"})],
    )
    decision = decide(notice(kind), blocked, Settings(), TUESDAY_AFTERNOON)
    assert decision.outcome is Outcome.ACTED
    assert decision.steps == KARPENTER_STEPS


# -- voluntary: do-not-disrupt -------------------------------------------------------------


def test_do_not_disrupt_on_node_defers_a_rebalance_recommendation() -> None:
    blocked = target(node(annotations={"karpenter.sh/do-not-disrupt": "true"}))
    decision = decide(weekend_rebalance(), blocked, Settings(), SATURDAY)
    assert decision.outcome is Outcome.DEFERRED
    assert decision.steps == (Step.MARK_PENDING,)
    assert decision.deferred_until is None  # waits indefinitely, looks again regularly
    assert decision.recheck_at == SATURDAY + RECHECK_INTERVAL
    assert "do-not-disrupt" in decision.reason


def test_do_not_disrupt_on_an_active_pod_defers() -> None:
    blocked = target(pods=[pod("db-0", annotations={"karpenter.sh/do-not-disrupt": "true"})])
    decision = decide(weekend_rebalance(), blocked, Settings(), SATURDAY)
    assert decision.outcome is Outcome.DEFERRED
    assert "shop/db-0" in decision.reason


@pytest.mark.parametrize(
    "finished",
    [
        pod(annotations={"karpenter.sh/do-not-disrupt": "true"}, phase="Succeeded"),
        pod(annotations={"karpenter.sh/do-not-disrupt": "true"}, phase="Failed"),
        pod(annotations={"karpenter.sh/do-not-disrupt": "true"}, deleting=True),
    ],
    ids=["succeeded", "failed", "deleting"],
)
def test_finished_or_deleting_pods_do_not_block(finished: dict[str, Any]) -> None:
    decision = decide(weekend_rebalance(), target(pods=[finished]), Settings(), SATURDAY)
    assert decision.outcome is Outcome.ACTED
    assert decision.steps == VOLUNTARY_KARPENTER_STEPS


def test_do_not_disrupt_false_does_not_block() -> None:
    decision = decide(
        weekend_rebalance(),
        target(pods=[pod(annotations={"karpenter.sh/do-not-disrupt": "false"})]),
        Settings(),
        SATURDAY,
    )
    assert decision.outcome is Outcome.ACTED


def test_do_not_disrupt_duration_blocks_only_while_the_pod_is_younger() -> None:
    young = pod(
        annotations={"karpenter.sh/do-not-disrupt": "1h"},
        created=SATURDAY - timedelta(minutes=20),
    )
    at = SATURDAY
    rebalance = notice(Kind.REBALANCE_RECOMMENDATION, at=SATURDAY - timedelta(minutes=1))
    decision = decide(rebalance, target(pods=[young]), Settings(), at)
    assert decision.outcome is Outcome.DEFERRED
    assert decision.deferred_until == SATURDAY + timedelta(minutes=40)

    later = decide(rebalance, target(pods=[young]), Settings(), SATURDAY + timedelta(minutes=40))
    assert later.outcome is Outcome.ACTED

    old = pod(
        annotations={"karpenter.sh/do-not-disrupt": "1h"}, created=SATURDAY - timedelta(hours=2)
    )
    assert decide(rebalance, target(pods=[old]), Settings(), at).outcome is Outcome.ACTED


def test_do_not_disrupt_duration_counts_from_the_pods_start_time_not_its_creation() -> None:
    """``IsDoNotDisruptActive``: ``podAge := clk.Now().Sub(pod.Status.StartTime.Time)``. A pod
    created two hours ago that started (was scheduled) 20 minutes ago is still protected."""
    late_start = pod(
        annotations={"karpenter.sh/do-not-disrupt": "1h"},
        created=SATURDAY - timedelta(hours=2),
        started=SATURDAY - timedelta(minutes=20),
    )
    rebalance = notice(Kind.REBALANCE_RECOMMENDATION, at=SATURDAY - timedelta(minutes=1))
    decision = decide(rebalance, target(pods=[late_start]), Settings(), SATURDAY)
    assert decision.outcome is Outcome.DEFERRED
    assert decision.deferred_until == SATURDAY + timedelta(minutes=40)


def test_do_not_disrupt_duration_on_a_pod_without_start_time_stays_active() -> None:
    """``IsDoNotDisruptActive``: "If we can't determine start time, fail safe": active, with
    no known end, so the notice is looked at again rather than deferred to a time."""
    unstarted = pod(annotations={"karpenter.sh/do-not-disrupt": "5m"}, started=None)
    rebalance = notice(Kind.REBALANCE_RECOMMENDATION, at=SATURDAY - timedelta(minutes=1))
    decision = decide(rebalance, target(pods=[unstarted]), Settings(), SATURDAY)
    assert decision.outcome is Outcome.DEFERRED
    assert decision.deferred_until is None
    assert decision.recheck_at == SATURDAY + RECHECK_INTERVAL
    assert "no status.startTime yet" in decision.reason


@pytest.mark.parametrize("value", ["0s", "-5m", "false", "yes", "TRUE"])
def test_do_not_disrupt_values_karpenter_ignores_do_not_block(value: str) -> None:
    """``parseDoNotDisrupt``: anything but "true" must be a positive Go duration; otherwise
    Karpenter ignores the annotation (and emits InvalidDoNotDisruptAnnotation)."""
    marked = pod(annotations={"karpenter.sh/do-not-disrupt": value})
    rebalance = notice(Kind.REBALANCE_RECOMMENDATION, at=SATURDAY - timedelta(minutes=1))
    assert decide(rebalance, target(pods=[marked]), Settings(), SATURDAY).outcome is (Outcome.ACTED)


def test_do_not_disrupt_on_a_daemonset_pod_blocks_like_karpenter() -> None:
    """``ValidatePodsDisruptable`` looks at every pod bound to the node: "we will allow Mirror
    Pods and DaemonSets to block disruption using this annotation"."""
    daemon = pod(annotations={"karpenter.sh/do-not-disrupt": "true"}, owner="DaemonSet")
    rebalance = notice(Kind.REBALANCE_RECOMMENDATION, at=SATURDAY - timedelta(minutes=1))
    decision = decide(rebalance, target(pods=[daemon]), Settings(), SATURDAY)
    assert decision.outcome is Outcome.DEFERRED


# -- voluntary: budgets and windows --------------------------------------------------------


def test_budget_allows_a_voluntary_replacement() -> None:
    decision = decide(
        weekend_rebalance(),
        target(pool=nodepool([{"nodes": "20%"}]), node_count=5, disrupting=0),
        Settings(),
        SATURDAY,
    )
    assert decision.outcome is Outcome.ACTED
    assert decision.steps == VOLUNTARY_KARPENTER_STEPS
    assert "allows" in decision.reason


def test_percentage_budget_rounds_up() -> None:
    # 10 % of 3 nodes rounds up to 1: one disruption allowed.
    decision = decide(
        weekend_rebalance(),
        target(pool=nodepool([{"nodes": "10%"}]), node_count=3, disrupting=0),
        Settings(),
        SATURDAY,
    )
    assert decision.outcome is Outcome.ACTED


def test_budget_used_up_defers_with_a_recheck() -> None:
    decision = decide(
        weekend_rebalance(),
        target(pool=nodepool([{"nodes": "1"}]), node_count=5, disrupting=1),
        Settings(),
        SATURDAY,
    )
    assert decision.outcome is Outcome.DEFERRED
    assert decision.steps == (Step.MARK_PENDING,)
    assert decision.deferred_until is None
    assert decision.recheck_at == SATURDAY + RECHECK_INTERVAL


def test_budget_used_up_for_scheduled_change_rechecks_and_acts_at_the_lead() -> None:
    start = SATURDAY + timedelta(days=2)
    decision = decide(
        notice(Kind.SCHEDULED_CHANGE, at=SATURDAY, deadline=start),
        target(pool=nodepool([{"nodes": "1"}]), node_count=5, disrupting=1),
        Settings(),
        SATURDAY,
    )
    assert decision.outcome is Outcome.DEFERRED
    assert decision.deferred_until == start - Settings().scheduled_change_lead
    assert decision.recheck_at == SATURDAY + RECHECK_INTERVAL


def test_zero_budget_window_defers_to_the_window_end_exactly() -> None:
    decision = decide(
        notice(Kind.REBALANCE_RECOMMENDATION),
        target(pool=nodepool([{"nodes": "20%"}, FREEZE]), node_count=5),
        Settings(),
        TUESDAY_AFTERNOON,
    )
    assert decision.outcome is Outcome.DEFERRED
    assert decision.deferred_until == datetime(2026, 12, 1, 17, 0, tzinfo=UTC)
    assert decision.steps == (Step.MARK_PENDING,)


def test_budget_that_fails_to_parse_blocks_the_pool() -> None:
    decision = decide(
        weekend_rebalance(),
        target(pool=nodepool([{"nodes": "lots"}])),
        Settings(),
        SATURDAY,
    )
    assert decision.outcome is Outcome.DEFERRED
    assert "blocked" in decision.reason
    assert "lots" in decision.reason


def test_scheduled_change_with_no_window_before_the_lead_defers_to_start_minus_lead() -> None:
    # Maintenance at 16:00 Tuesday; the freeze lasts until 17:00: no window before 15:30.
    start = datetime(2026, 12, 1, 16, 0, tzinfo=UTC)
    decision = decide(
        notice(Kind.SCHEDULED_CHANGE, deadline=start),
        target(pool=nodepool([{"nodes": "20%"}, FREEZE])),
        Settings(),
        TUESDAY_AFTERNOON,
    )
    assert decision.outcome is Outcome.DEFERRED
    assert decision.deferred_until == start - timedelta(minutes=30)
    assert not decision.forced


def test_scheduled_change_with_a_window_before_the_lead_defers_to_the_window() -> None:
    start = datetime(2026, 12, 2, 8, 0, tzinfo=UTC)
    decision = decide(
        notice(Kind.SCHEDULED_CHANGE, deadline=start),
        target(pool=nodepool([{"nodes": "20%"}, FREEZE])),
        Settings(),
        TUESDAY_AFTERNOON,
    )
    assert decision.outcome is Outcome.DEFERRED
    assert decision.deferred_until == datetime(2026, 12, 1, 17, 0, tzinfo=UTC)


@pytest.mark.parametrize("past_latest", [timedelta(0), timedelta(minutes=10)])
def test_scheduled_change_at_or_after_start_minus_lead_is_forced(past_latest: timedelta) -> None:
    start = datetime(2026, 12, 1, 16, 0, tzinfo=UTC)
    lead = timedelta(minutes=45)
    blocked = target(
        node(annotations={"karpenter.sh/do-not-disrupt": "true"}),
        pool=nodepool([{"nodes": "0"}]),
        disrupting=3,
    )
    decision = decide(
        notice(Kind.SCHEDULED_CHANGE, deadline=start),
        blocked,
        Settings(scheduled_change_lead=lead),
        start - lead + past_latest,
    )
    assert decision.outcome is Outcome.ACTED
    assert decision.forced
    assert decision.steps == VOLUNTARY_KARPENTER_STEPS


def test_scheduled_change_just_before_the_lead_still_waits() -> None:
    start = datetime(2026, 12, 1, 16, 0, tzinfo=UTC)
    decision = decide(
        notice(Kind.SCHEDULED_CHANGE, deadline=start),
        target(pool=nodepool([{"nodes": "0"}])),
        Settings(),
        start - timedelta(minutes=30, seconds=1),
    )
    assert decision.outcome is Outcome.DEFERRED


def test_rebalance_recommendation_older_than_a_day_is_ignored() -> None:
    sent = TUESDAY_AFTERNOON - timedelta(hours=24)
    rebalance = notice(Kind.REBALANCE_RECOMMENDATION, at=sent)
    frozen = target(pool=nodepool([{"nodes": "20%"}, FREEZE]))
    assert decide(rebalance, frozen, Settings(), TUESDAY_AFTERNOON).outcome is Outcome.IGNORED
    recent = notice(Kind.REBALANCE_RECOMMENDATION, at=TUESDAY_AFTERNOON - timedelta(hours=1))
    younger = decide(recent, frozen, Settings(), TUESDAY_AFTERNOON)
    assert younger.outcome is Outcome.DEFERRED


def test_rebalance_gives_up_when_no_window_opens_within_its_patience() -> None:
    # Sent 23h59m ago: the freeze ends at 17:00, after the 24 h patience runs out at 14:06.
    sent = TUESDAY_AFTERNOON - timedelta(hours=23, minutes=59)
    rebalance = notice(Kind.REBALANCE_RECOMMENDATION, at=sent)
    frozen = target(pool=nodepool([{"nodes": "20%"}, FREEZE]))
    decision = decide(rebalance, frozen, Settings(), TUESDAY_AFTERNOON)
    assert decision.outcome is Outcome.IGNORED
    assert "giving up" in decision.reason


def test_voluntary_on_node_already_replaced_by_lifeboat_carries_on() -> None:
    tainted = node(
        taints=[{"key": "lifeboat.dev/rebalance-recommendation", "effect": "NoSchedule"}]
    )
    decision = decide(
        weekend_rebalance(),
        target(tainted, pool=nodepool([{"nodes": "0"}]), disrupting=1),
        Settings(),
        SATURDAY,
    )
    assert decision.outcome is Outcome.ACTED


def test_pending_taint_alone_does_not_bypass_the_budget() -> None:
    pending = node(
        taints=[{"key": "lifeboat.dev/rebalance-recommendation", "effect": "PreferNoSchedule"}]
    )
    decision = decide(
        weekend_rebalance(),
        target(pending, pool=nodepool([{"nodes": "1"}]), disrupting=1),
        Settings(),
        SATURDAY,
    )
    assert decision.outcome is Outcome.DEFERRED


@pytest.mark.parametrize(
    ("kind", "steps"),
    [
        (Kind.REBALANCE_RECOMMENDATION, (Step.TAINT_AND_CORDON,)),
        (Kind.SCHEDULED_CHANGE, (Step.TAINT_AND_CORDON, Step.EVICT)),
    ],
)
def test_voluntary_on_node_group_node_has_no_budget(kind: Kind, steps: tuple[Step, ...]) -> None:
    decision = decide(
        notice(
            kind,
            at=SATURDAY - timedelta(minutes=2),
            deadline=SATURDAY + timedelta(days=3) if kind is Kind.SCHEDULED_CHANGE else None,
        ),
        target(claim=None),
        Settings(),
        SATURDAY,
    )
    assert decision.outcome is Outcome.ACTED
    assert decision.steps == steps


# -- settings, ignore reasons, opt-out -----------------------------------------------------


def test_kind_action_ignore_is_honoured() -> None:
    settings = Settings(kind_actions={Kind.REBALANCE_RECOMMENDATION: "ignore"})
    decision = decide(weekend_rebalance(), target(), settings, SATURDAY)
    assert decision.outcome is Outcome.IGNORED
    assert decision.steps == ()
    # Other kinds keep the default.
    scheduled = notice(Kind.SCHEDULED_CHANGE, deadline=SATURDAY + timedelta(days=2))
    assert decide(scheduled, target(), settings, SATURDAY).outcome is Outcome.ACTED


def test_kind_action_cordon_only_cordons() -> None:
    settings = Settings(kind_actions={Kind.SCHEDULED_CHANGE: "cordon"})
    scheduled = notice(Kind.SCHEDULED_CHANGE, deadline=SATURDAY + timedelta(days=2))
    decision = decide(scheduled, target(), settings, SATURDAY)
    assert decision.outcome is Outcome.ACTED
    assert decision.steps == (Step.TAINT_AND_CORDON,)


@pytest.mark.parametrize("kind", [*INVOLUNTARY, Kind.REBALANCE_RECOMMENDATION, Kind.UNSUPPORTED])
def test_notice_with_ignore_reason_is_ignored(kind: Kind) -> None:
    decision = decide(
        notice(kind, ignore_reason="autoscaling:TEST_NOTIFICATION"),
        target(),
        Settings(),
        SATURDAY,
    )
    assert decision.outcome is Outcome.IGNORED
    assert decision.reason == "autoscaling:TEST_NOTIFICATION"
    assert decision.steps == ()


def test_opted_out_nodepool_is_left_alone_for_voluntary_notices() -> None:
    opted_out = nodepool([{"nodes": "100%"}], annotations={"lifeboat.dev/disabled": "true"})
    decision = decide(weekend_rebalance(), target(pool=opted_out), Settings(), SATURDAY)
    assert decision.outcome is Outcome.IGNORED
    assert "lifeboat.dev/disabled" in decision.reason


@pytest.mark.parametrize("kind", [k for k in INVOLUNTARY if k is not Kind.ASG_TERMINATION], ids=str)
def test_opted_out_nodepool_is_left_alone_for_involuntary_notices(kind: Kind) -> None:
    # Involuntary targets carry the NodePool but no budget state (resolve never lists).
    opted_out = nodepool(annotations={"lifeboat.dev/disabled": "true"})
    decision = decide(
        notice(kind), target(pool=opted_out, with_budget_state=False), Settings(), SATURDAY
    )
    assert decision.outcome is Outcome.IGNORED
    assert "general" in decision.reason


def test_opt_out_annotation_false_does_not_opt_out() -> None:
    pool = nodepool([{"nodes": "100%"}], annotations={"lifeboat.dev/disabled": "false"})
    decision = decide(weekend_rebalance(), target(pool=pool), Settings(), SATURDAY)
    assert decision.outcome is Outcome.ACTED


def test_lifecycle_hook_on_a_karpenter_node_drains_then_completes() -> None:
    # The Auto Scaling group waits for our answer: Lifeboat drains and then lets it go,
    # rather than leaving the hook to time out while Karpenter deletes the claim.
    decision = decide(notice(Kind.ASG_TERMINATION), target(), Settings(), TUESDAY_AFTERNOON)
    assert decision.outcome is Outcome.ACTED
    assert decision.steps == (Step.TAINT_AND_CORDON, Step.EVICT, Step.COMPLETE_LIFECYCLE)


def test_a_waiting_node_that_goes_not_ready_still_honours_the_budget() -> None:
    # NotReady makes it count as disrupting, but Lifeboat has not acted on it: the pending
    # mark must not pass for "already being replaced" and skip the budget.
    waiting = node(
        taints=[{"key": "lifeboat.dev/rebalance-recommendation", "effect": "PreferNoSchedule"}],
        ready=False,
    )
    decision = decide(
        weekend_rebalance(),
        target(waiting, pool=nodepool([{"nodes": "0"}]), disrupting=1),
        Settings(),
        SATURDAY,
    )
    assert decision.outcome is not Outcome.ACTED


def test_a_notice_let_go_takes_its_pending_mark_with_it() -> None:
    sent = TUESDAY_AFTERNOON - timedelta(hours=23, minutes=59)
    marked = node(
        taints=[{"key": "lifeboat.dev/rebalance-recommendation", "effect": "PreferNoSchedule"}]
    )
    frozen = target(marked, pool=nodepool([{"nodes": "20%"}, FREEZE]))
    decision = decide(
        notice(Kind.REBALANCE_RECOMMENDATION, at=sent), frozen, Settings(), TUESDAY_AFTERNOON
    )
    assert decision.outcome is Outcome.IGNORED
    assert decision.steps == (Step.CLEAR_PENDING,)
    # Another kind's mark is not this notice's to clear.
    other = node(taints=[{"key": "lifeboat.dev/scheduled-change", "effect": "PreferNoSchedule"}])
    decision = decide(
        notice(Kind.REBALANCE_RECOMMENDATION, at=sent),
        target(other, pool=nodepool([{"nodes": "20%"}, FREEZE])),
        Settings(),
        TUESDAY_AFTERNOON,
    )
    assert decision.steps == ()


# -- the window search is bounded (issue 10.9) and never wakes at once (issue 11.4) -----------


def _count_cron_lookups(monkeypatch: pytest.MonkeyPatch, limit: int) -> list[int]:
    """Fail a decision that looks up far more cron hits than a bounded search needs."""
    from lifeboat.karpenter import cron

    calls = [0]
    original = cron.CronCursor.next_after

    def counted(cursor: cron.CronCursor, moment: datetime) -> datetime | None:
        calls[0] += 1
        if calls[0] > limit:
            raise AssertionError(f"more than {limit} cron lookups for one decision")
        return original(cursor, moment)

    monkeypatch.setattr(cron.CronCursor, "next_after", counted)
    return calls


@pytest.mark.parametrize(
    ("budgets", "node_count", "disrupting", "deadline"),
    [
        # A freeze every other minute, capacity used up, maintenance 60 days away.
        (
            [{"nodes": "1"}, {"nodes": "0", "schedule": "*/2 * * * *", "duration": "1m"}],
            10,
            1,
            TUESDAY_AFTERNOON + timedelta(days=60),
        ),
        # The business-hours pool with its 20 % used up, and an AWS startTime in the year 2400.
        ([{"nodes": "20%"}, FREEZE], 6, 2, datetime(2400, 1, 1, 9, tzinfo=UTC)),
    ],
    ids=["freeze-every-other-minute-60d", "start-time-2400"],
)
def test_a_deferral_does_not_walk_every_window_up_to_its_deadline(
    monkeypatch: pytest.MonkeyPatch,
    budgets: list[dict[str, str]],
    node_count: int,
    disrupting: int,
    deadline: datetime,
) -> None:
    """Issue 10.9: these took 1-15 s of CPU per decision (every window up to the deadline
    visited). Waiting for capacity needs no window at all; the decision now looks up a
    handful of cron hits."""
    calls = _count_cron_lookups(monkeypatch, limit=100)
    change = notice(Kind.SCHEDULED_CHANGE, deadline=deadline)
    the_target = target(pool=nodepool(budgets), node_count=node_count, disrupting=disrupting)
    decision = decide(change, the_target, Settings(), TUESDAY_AFTERNOON)
    assert decision.outcome is Outcome.DEFERRED
    assert decision.deferred_until == deadline - Settings().scheduled_change_lead
    assert decision.recheck_at == TUESDAY_AFTERNOON + RECHECK_INTERVAL
    assert calls[0] <= 100


def test_endless_windows_defer_to_where_the_bounded_search_stopped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two freezes taking turns every minute never open: the search stops after a bounded
    number of hops and the notice is decided again there, not at its deadline in 2400."""
    _count_cron_lookups(monkeypatch, limit=20_000)
    alternating = nodepool(
        [
            {"nodes": "0", "schedule": "0-58/2 * * * *", "duration": "1m"},
            {"nodes": "0", "schedule": "1-59/2 * * * *", "duration": "1m"},
        ]
    )
    change = notice(Kind.SCHEDULED_CHANGE, deadline=datetime(2400, 1, 1, tzinfo=UTC))
    decision = decide(change, target(pool=alternating), Settings(), TUESDAY_AFTERNOON)
    assert decision.outcome is Outcome.DEFERRED
    assert decision.deferred_until is not None
    assert TUESDAY_AFTERNOON < decision.deferred_until <= TUESDAY_AFTERNOON + timedelta(days=1)
    assert "deciding again then" in decision.reason


LEAP_FREEZE = {"nodes": "0", "schedule": "0 0 29 2 *", "duration": "1h"}
IN_ROBFIGS_BLIND_SPOT = datetime(2097, 6, 1, 12, tzinfo=UTC)


def test_a_budget_active_through_robfigs_horizon_never_defers_to_now() -> None:
    """Issue 11.4: from March 2096 to the end of 2098 robfig's Next cannot see 2104-02-29 and
    returns the zero time, so Karpenter reads the freeze as active (``Budget.IsActive``). The
    deferral used to wake "at the window's end" = now, in a loop; it now waits until robfig
    can see the next hit (2099-01-01 00:59:59, after the 1h duration)."""
    pool = nodepool([{"nodes": "5"}, LEAP_FREEZE])
    change = notice(
        Kind.SCHEDULED_CHANGE,
        at=IN_ROBFIGS_BLIND_SPOT - timedelta(minutes=3),
        deadline=datetime(2100, 6, 1, tzinfo=UTC),
    )
    decision = decide(change, target(pool=pool), Settings(), IN_ROBFIGS_BLIND_SPOT)
    assert decision.outcome is Outcome.DEFERRED
    assert decision.deferred_until == datetime(2099, 1, 1, 0, 59, 59, tzinfo=UTC)
    rebalance = notice(
        Kind.REBALANCE_RECOMMENDATION, at=IN_ROBFIGS_BLIND_SPOT - timedelta(minutes=3)
    )
    decision = decide(rebalance, target(pool=pool), Settings(), IN_ROBFIGS_BLIND_SPOT)
    # Nothing opens within a rebalance recommendation's day of patience: it is let go.
    assert decision.outcome is Outcome.IGNORED
    assert "giving up" in decision.reason


# -- beside Karpenter (issue 11.7), PDBs (11.6), pools that want no replacement (11.2) -------


def test_a_claim_karpenter_is_deleting_gets_nothing_more_from_any_notice() -> None:
    """AWS interruption controller ``deleteNodeClaim``: a claim already being deleted is left
    alone. Lifeboat reports it, with no taint, no replacement and no second delete."""
    deleting = replace(target(), claim=ClaimRef(CLAIM, "u1", deleting=True))
    for kind in (Kind.SPOT_INTERRUPTION, Kind.REBALANCE_RECOMMENDATION):
        decision = decide(notice(kind), deleting, Settings(), SATURDAY)
        assert decision.outcome is Outcome.IGNORED
        assert decision.steps == ()
        assert f"NodeClaim {CLAIM} is already being deleted" in decision.reason


def test_a_node_being_deleted_says_karpenter_terminates_it_without_reading_the_claim() -> None:
    gone = node()
    gone["metadata"]["deletionTimestamp"] = "2026-12-01T14:00:00Z"
    decision = decide(
        notice(Kind.SPOT_INTERRUPTION), target(gone, with_budget_state=False), Settings(), SATURDAY
    )
    assert decision.outcome is Outcome.IGNORED
    assert "is already being deleted" in decision.reason


def test_an_auto_scaling_hook_still_gets_its_answer_when_karpenter_terminates_the_node() -> None:
    deleting = replace(target(), claim=ClaimRef(CLAIM, "u1", deleting=True))
    decision = decide(notice(Kind.ASG_TERMINATION), deleting, Settings(), SATURDAY)
    assert decision.outcome is Outcome.ACTED
    assert Step.COMPLETE_LIFECYCLE in decision.steps


def test_karpenters_command_in_flight_makes_a_voluntary_notice_wait_without_marks() -> None:
    tainted = node(taints=[{"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}])
    decision = decide(weekend_rebalance(), target(tainted), Settings(), SATURDAY)
    assert decision.outcome is Outcome.DEFERRED
    assert decision.steps == ()
    assert decision.recheck_at == SATURDAY + RECHECK_INTERVAL
    assert "Karpenter is already disrupting node" in decision.reason


def _pdb(allowed: int) -> dict[str, Any]:
    return {
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}},
        "status": {"disruptionsAllowed": allowed},
    }


def test_a_pdb_allowing_no_disruption_defers_the_voluntary_replacement() -> None:
    """``ValidatePodsDisruptable``: such a node is no candidate (``CanEvictPods`` fails)."""
    web = pod(owner="ReplicaSet")
    web["metadata"]["labels"] = {"app": "web"}
    held = replace(target(pods=[web]), pdbs=(_pdb(0),))
    decision = decide(weekend_rebalance(), held, Settings(), SATURDAY)
    assert decision.outcome is Outcome.DEFERRED
    assert "PDB shop/web allows no disruption now (pod shop/web-1)" in decision.reason
    # What it waits for is the PDB it names, not the pool's disrupting nodes.
    assert decision.reason.endswith("; waiting until the PDB allows an eviction")
    assert "disrupting nodes" not in decision.reason
    assert decision.steps == (Step.MARK_PENDING,)
    free = replace(target(pods=[web]), pdbs=(_pdb(1),))
    assert decide(weekend_rebalance(), free, Settings(), SATURDAY).outcome is Outcome.ACTED
    # Cordoning drains nothing: a PDB does not hold it back.
    cordon = Settings(kind_actions={Kind.REBALANCE_RECOMMENDATION: "cordon"})
    assert decide(weekend_rebalance(), held, cordon, SATURDAY).outcome is Outcome.ACTED


def test_a_static_pool_is_handed_over_without_a_replacement_only_when_involuntary() -> None:
    """A Spot interruption's instance goes anyway: the claim is deleted with no replacement.
    A rebalance would strand the pods (``Provisioner.NewScheduler`` leaves static pools out):
    it is let go and the claim kept."""
    static = nodepool([{"nodes": "20%"}])
    static["spec"]["replicas"] = 5
    spot = decide(
        notice(Kind.SPOT_INTERRUPTION, at=SATURDAY - timedelta(minutes=1)),
        target(pool=static),
        Settings(),
        SATURDAY,
    )
    assert spot.outcome is Outcome.ACTED
    assert spot.steps == (Step.TAINT_AND_CORDON, Step.DELETE_NODECLAIM)
    assert "no replacement: NodePool general is static (spec.replicas 5)" in spot.reason
    rebalance = decide(
        notice(Kind.REBALANCE_RECOMMENDATION, at=SATURDAY - timedelta(minutes=1)),
        target(pool=static),
        Settings(),
        SATURDAY,
    )
    assert rebalance.outcome is Outcome.IGNORED and rebalance.gave_up
    assert Step.DELETE_NODECLAIM not in rebalance.steps
    assert "no replacement can launch: NodePool general is static" in rebalance.reason
    assert f"NodeClaim {CLAIM} kept" in rebalance.reason


def test_a_rebalance_given_up_names_the_pod_that_held_it() -> None:
    """Issue 22: a node let go after its patience says what held it (here the pod with
    ``karpenter.sh/do-not-disrupt``), not only "not permitted within 1440m"."""
    held = target(pods=[pod("db-0", annotations={"karpenter.sh/do-not-disrupt": "true"})])
    late = notice(Kind.REBALANCE_RECOMMENDATION, at=SATURDAY - timedelta(hours=25))
    decision = decide(late, held, Settings(), SATURDAY)
    assert decision.gave_up
    assert "not permitted within 1440m of the notice (held by pod shop/db-0" in decision.reason


def test_a_scheduled_change_on_a_pool_not_ready_waits_then_acts_at_the_lead() -> None:
    """``Provisioner.NewScheduler`` leaves a NodePool not Ready out: no replacement could
    land the pods, so the claim is kept and the notice looked at again; within the lead of
    the maintenance (the instance goes then anyway) it acts as today."""
    pool = nodepool([{"nodes": "20%"}])
    pool["status"] = {"conditions": [{"type": "Ready", "status": "False", "reason": "X"}]}
    deadline = SATURDAY + timedelta(days=3)
    change = notice(Kind.SCHEDULED_CHANGE, at=SATURDAY - timedelta(minutes=1), deadline=deadline)
    waiting = decide(change, target(pool=pool), Settings(), SATURDAY)
    assert waiting.outcome is Outcome.DEFERRED
    assert waiting.steps == (Step.MARK_PENDING,)
    assert waiting.recheck_at == SATURDAY + RECHECK_INTERVAL
    assert "no replacement can launch: NodePool general is not Ready: False, X" in waiting.reason
    lead = deadline - Settings().scheduled_change_lead
    forced = decide(change, target(pool=pool), Settings(), lead)
    assert forced.outcome is Outcome.ACTED and forced.forced
    assert forced.steps == (Step.TAINT_AND_CORDON, Step.DELETE_NODECLAIM)


# -- a node no NodeClaim owns, in a NodePool's name ------------------------------------------


def _unclaimed_in_a_frozen_pool() -> Target:
    """A node no NodeClaim owns although a NodePool is named for it (its label, or EC2's
    tag) and that pool's budget is shut now: Karpenter does not own it, so its budget is
    not what holds the node (lifeboat.flow.resolve: the NodePool is read from the owning claim)."""
    return Target(
        INSTANCE,
        node=node(claim=None),
        claim=None,
        nodepool_name="general",
        nodepool=nodepool([FREEZE]),
        counts=PoolCounts(5, 0),
        pods=(),
    )


def test_a_node_without_a_claim_is_drained_as_a_node_groups_whatever_a_named_pool_allows() -> None:
    """_voluntary: no claim, no budget to honour (as the Node Termination Handler drains
    on scheduled maintenance), even when a NodePool is named and its window is shut."""
    maintenance = notice(
        Kind.SCHEDULED_CHANGE,
        at=TUESDAY_AFTERNOON - timedelta(minutes=5),
        deadline=TUESDAY_AFTERNOON + timedelta(days=3),
    )
    decision = decide(maintenance, _unclaimed_in_a_frozen_pool(), Settings(), TUESDAY_AFTERNOON)
    assert decision.outcome is Outcome.ACTED
    assert decision.steps == (Step.TAINT_AND_CORDON, Step.EVICT)
    assert "node has no NodePool budget to honour" in decision.reason


def test_a_stale_notice_for_a_node_without_a_claim_is_judged_without_a_pools_budget() -> None:
    """_stale: a maintenance past its start, on a node no claim owns: judged now as a node
    group's (no budget), not let go by the shut window of the NodePool it names."""
    maintenance = notice(
        Kind.SCHEDULED_CHANGE,
        at=TUESDAY_AFTERNOON - timedelta(hours=2),
        deadline=TUESDAY_AFTERNOON - timedelta(hours=1),
    )
    stale = Stale("the maintenance's start was 1h ago")
    decision = decide(
        maintenance, _unclaimed_in_a_frozen_pool(), Settings(), TUESDAY_AFTERNOON, stale=stale
    )
    assert decision.outcome is Outcome.ACTED
    assert decision.steps == (Step.TAINT_AND_CORDON, Step.EVICT)
    assert "no NodePool budget to honour; judged now" in decision.reason


# -- when a deferred notice is looked at again ------------------------------------------------


def _pool_not_ready() -> dict[str, Any]:
    """Karpenter's readiness controller: the node class is not Ready, so the pool is not."""
    pool = nodepool([{"nodes": "20%"}])
    pool["status"] = {
        "conditions": [
            {"type": "Ready", "status": "False", "reason": "NodeClassNotReady"},
            {"type": "NodeClassReady", "status": "False", "reason": "NotFound"},
        ]
    }
    return pool


def test_a_claim_kept_for_want_of_a_replacement_is_looked_at_again_in_five_minutes() -> None:
    """_keep_claim: a pool not Ready may recover, so the notice is decided again
    ``RECHECK_INTERVAL`` from now (never in the past); a scheduled change no later than its
    latest start."""
    rebalance = weekend_rebalance()
    decision = decide(rebalance, target(pool=_pool_not_ready()), Settings(), SATURDAY)
    assert decision.outcome is Outcome.DEFERRED
    assert "no replacement can launch" in decision.reason
    assert decision.recheck_at == SATURDAY + RECHECK_INTERVAL
    maintenance = notice(
        Kind.SCHEDULED_CHANGE,
        at=SATURDAY - timedelta(minutes=1),
        deadline=SATURDAY + Settings().scheduled_change_lead + timedelta(minutes=2),
    )
    soon = decide(maintenance, target(pool=_pool_not_ready()), Settings(), SATURDAY)
    assert soon.outcome is Outcome.DEFERRED
    assert soon.recheck_at == SATURDAY + timedelta(minutes=2)
    assert soon.deferred_until == SATURDAY + timedelta(minutes=2)


def test_a_launch_hook_waits_for_its_node_and_looks_again_in_30_seconds() -> None:
    """_launch: not Ready yet, so CONTINUE waits; looked at again ``FOLLOW_UP_INTERVAL``
    later, or at the hook's timeout if that comes first."""
    launch = notice(Kind.ASG_LAUNCH, at=SATURDAY, deadline=SATURDAY + timedelta(hours=1))
    settings = Settings(complete_launch_hooks=True)
    decision = decide(launch, target(node(ready=False)), settings, SATURDAY)
    assert decision.outcome is Outcome.DEFERRED
    assert decision.recheck_at == SATURDAY + FOLLOW_UP_INTERVAL
    closing = SATURDAY + timedelta(hours=1) - timedelta(seconds=10)
    last = decide(launch, target(node(ready=False)), settings, closing)
    assert last.recheck_at == SATURDAY + timedelta(hours=1)


def test_an_impaired_instance_is_described_by_how_long_it_has_been_so() -> None:
    """_describe: an impaired instance's reason says since when (its deadline is only when
    EC2 reported it); an involuntary notice with a real deadline says when the instance
    goes, and nothing about impairment."""
    since = SATURDAY - timedelta(minutes=3)
    impaired = notice(Kind.INSTANCE_IMPAIRED, at=since, deadline=since)
    reason = decide(impaired, target(), Settings(), SATURDAY).reason
    assert "impaired since 2026-12-05T09:57:00Z" in reason
    spot = notice(Kind.SPOT_INTERRUPTION, at=since, deadline=SATURDAY + timedelta(minutes=2))
    spot_reason = decide(spot, target(with_budget_state=False), Settings(), SATURDAY).reason
    assert "instance goes at 2026-12-05T10:02:00Z" in spot_reason
    assert "impaired" not in spot_reason


def test_a_refused_replacement_keeps_the_claim_and_tries_again_in_five_minutes() -> None:
    """replacement_refused: the API server refused the claim (act kept the old one), so a
    voluntary decision waits and is decided again ``RECHECK_INTERVAL`` from now; an
    involuntary or forced one is unchanged (the instance goes anyway)."""
    acted = Decision(Outcome.ACTED, "allowed", VOLUNTARY_KARPENTER_STEPS)
    waiting = replacement_refused(weekend_rebalance(), acted, "403: forbidden", SATURDAY)
    assert waiting.outcome is Outcome.DEFERRED
    assert waiting.recheck_at == SATURDAY + RECHECK_INTERVAL
    assert "replacement not created (403: forbidden)" in waiting.reason
    spot = notice(Kind.SPOT_INTERRUPTION, at=SATURDAY)
    assert replacement_refused(spot, acted, "403", SATURDAY) is acted
    forced = replace(acted, forced=True)
    assert replacement_refused(weekend_rebalance(), forced, "403", SATURDAY) is forced


def test_a_maintenance_that_ended_while_its_notice_waited_is_let_go() -> None:
    """_voluntary: the maintenance was completed or cancelled (``lifeboat.dev/maintenance-
    ended`` names its start) before the deferred notice came due: nothing to do. Another
    maintenance's end on the same node does not count."""
    start = SATURDAY + timedelta(days=2)
    maintenance = notice(Kind.SCHEDULED_CHANGE, at=SATURDAY - timedelta(hours=1), deadline=start)
    ended = {node_marks.MAINTENANCE_ENDED_ANNOTATION: node_marks.maintenance_stamp(start)}
    decision = decide(maintenance, target(node(annotations=ended)), Settings(), SATURDAY)
    assert decision.outcome is Outcome.IGNORED
    assert "the maintenance ended" in decision.reason
    other = {
        node_marks.MAINTENANCE_ENDED_ANNOTATION: node_marks.maintenance_stamp(
            start - timedelta(days=9)
        )
    }
    still = decide(maintenance, target(node(annotations=other)), Settings(), SATURDAY)
    assert still.outcome is Outcome.ACTED


# A pool frozen from Sunday 06:00 for 164 h: it allows one node only on Sundays 02:00-06:00.
SUNDAY_ONLY = [{"nodes": "1"}, {"nodes": "0", "schedule": "0 6 * * sun", "duration": "164h"}]


def test_a_rotation_waits_days_for_a_weekly_window_where_a_rebalance_gives_up() -> None:
    """Issue 35: a rotation across days waits for its pool's window. Tuesday 14:05 to the
    next Sunday 02:00 is past a rebalance's 24 h patience; a rotation's node is deferred to
    the window's opening (``deferred_until``: a known end, so the rotation waits, it does
    not fail), and a rebalance sent at the same moment is let go a day later."""
    weekly = target(pool=nodepool(SUNDAY_ONLY))
    sent = TUESDAY_AFTERNOON - timedelta(hours=30)
    rotation = notice(Kind.ROTATION, at=sent)
    decision = decide(rotation, weekly, Settings(), TUESDAY_AFTERNOON)
    assert decision.outcome is Outcome.DEFERRED
    assert decision.deferred_until == datetime(2026, 12, 6, 2, 0, tzinfo=UTC)
    rebalance = notice(Kind.REBALANCE_RECOMMENDATION, at=TUESDAY_AFTERNOON - timedelta(hours=23))
    given_up = decide(rebalance, weekly, Settings(), TUESDAY_AFTERNOON + timedelta(hours=2))
    assert given_up.outcome is Outcome.IGNORED
    assert "giving up" in given_up.reason


def test_a_rotation_no_window_ever_allows_is_let_go_after_eight_days() -> None:
    frozen = target(pool=nodepool([{"nodes": "0"}]))
    sent = TUESDAY_AFTERNOON - timedelta(days=8)
    decision = decide(notice(Kind.ROTATION, at=sent), frozen, Settings(), TUESDAY_AFTERNOON)
    assert decision.outcome is Outcome.IGNORED
    assert "giving up" in decision.reason
