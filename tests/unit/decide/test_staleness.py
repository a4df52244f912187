"""How old a notice may be before it is no longer obeyed as sent (``decide.staleness``): per
kind, the instant its age is counted from, the limit's boundary (exactly at the limit is still
fresh), and what the reason tells an operator. Pure: the clock is an argument."""

from __future__ import annotations

from dataclasses import FrozenInstanceError
from datetime import UTC, datetime, timedelta

import pytest

from lifeboat.decide.staleness import Stale, staleness
from lifeboat.model.instances import InstanceInfo
from lifeboat.model.notice import Kind, LifecycleHook, Notice
from lifeboat.model.settings import Settings

WARNED_AT = datetime(2026, 12, 1, 14, 2, tzinfo=UTC)
DEADLINE = WARNED_AT + timedelta(minutes=2)  # a Spot warning's instance-action time
LIMIT = timedelta(minutes=10)  # Settings().stale_notice_after
INSTANCE = "i-0123456789abcdef0"


def _notice(
    kind: Kind, deadline: datetime | None = DEADLINE, lifecycle: LifecycleHook | None = None
) -> Notice:
    return Notice(
        kind, "event-1", WARNED_AT, instance_id=INSTANCE, deadline=deadline, lifecycle=lifecycle
    )


def _info(state: str | None) -> InstanceInfo:
    return InstanceInfo(INSTANCE, node_name="ip-10-0-1-11.ec2.internal", state=state)


def test_the_default_limit_is_ten_minutes() -> None:
    assert Settings().stale_notice_after == LIMIT


@pytest.mark.parametrize(
    "kind",
    [Kind.SPOT_INTERRUPTION, Kind.CAPACITY_RESERVATION_INTERRUPTION, Kind.CAPACITY_BLOCK_EXPIRY],
)
def test_a_warning_is_stale_only_past_its_deadline_plus_the_limit(kind: Kind) -> None:
    """Counted from the deadline (when the instance goes), not from when the warning was sent:
    at deadline + limit it is still obeyed, a second later it is not."""
    notice = _notice(kind)
    assert staleness(notice, _info("running"), Settings(), DEADLINE + LIMIT) is None
    stale = staleness(notice, _info("running"), Settings(), DEADLINE + LIMIT + timedelta(seconds=1))
    assert stale == Stale("601s past its deadline (2026-12-01T14:04:00Z), more than 600s")
    assert not stale.nothing_going  # re-judged from the present state, not ignored


def test_a_warning_without_a_deadline_is_aged_from_when_it_was_sent() -> None:
    notice = _notice(Kind.SPOT_INTERRUPTION, deadline=None)
    assert staleness(notice, None, Settings(), WARNED_AT + LIMIT) is None
    stale = staleness(notice, None, Settings(), WARNED_AT + LIMIT + timedelta(seconds=30))
    assert stale == Stale("630s past its deadline (2026-12-01T14:02:00Z), more than 600s")


def test_the_limit_is_the_operators_setting() -> None:
    notice = _notice(Kind.SPOT_INTERRUPTION)
    settings = Settings(stale_notice_after=timedelta(hours=1))
    assert staleness(notice, None, settings, DEADLINE + timedelta(minutes=59)) is None
    stale = staleness(notice, None, settings, DEADLINE + timedelta(hours=2))
    assert stale is not None
    assert stale.reason == "7200s past its deadline (2026-12-01T14:04:00Z), more than 3600s"


def test_a_maintenance_is_stale_past_its_start_plus_the_limit() -> None:
    start = datetime(2026, 12, 8, 9, 0, tzinfo=UTC)
    notice = _notice(Kind.SCHEDULED_CHANGE, deadline=start)
    assert staleness(notice, _info("running"), Settings(), start + LIMIT) is None
    stale = staleness(notice, _info("running"), Settings(), start + timedelta(days=3))
    assert stale == Stale(
        "259200s past the maintenance's start (2026-12-08T09:00:00Z), more than 600s"
    )


def test_a_maintenance_without_a_start_is_never_stale() -> None:
    """A Health event that names no start time: nothing to count from (it is obeyed as a
    voluntary notice anyway)."""
    notice = _notice(Kind.SCHEDULED_CHANGE, deadline=None)
    assert staleness(notice, None, Settings(), WARNED_AT + timedelta(days=30)) is None


@pytest.mark.parametrize("state", ["pending", "running"])
def test_a_state_change_whose_instance_runs_again_is_stale_at_any_age(state: str) -> None:
    """Nothing is going: ignored, even seconds after the stop warning."""
    notice = _notice(Kind.STATE_CHANGE, deadline=None)
    stale = staleness(notice, _info(state), Settings(), WARNED_AT)
    assert stale == Stale(f"instance {INSTANCE} is {state} again", nothing_going=True)


@pytest.mark.parametrize("state", ["stopping", "shutting-down", "stopped", None])
def test_a_state_change_still_going_is_aged_from_its_event(state: str | None) -> None:
    notice = _notice(Kind.STATE_CHANGE, deadline=None)
    assert staleness(notice, _info(state), Settings(), WARNED_AT + LIMIT) is None
    stale = staleness(notice, _info(state), Settings(), WARNED_AT + LIMIT + timedelta(minutes=1))
    assert stale == Stale("660s past the state change (2026-12-01T14:02:00Z), more than 600s")


def test_a_state_change_for_an_instance_ec2_no_longer_knows_is_aged() -> None:
    notice = _notice(Kind.STATE_CHANGE, deadline=None)
    assert staleness(notice, None, Settings(), WARNED_AT) is None
    assert staleness(notice, None, Settings(), WARNED_AT + timedelta(hours=1)) is not None


def test_a_state_change_ages_from_its_event_time_not_its_deadline() -> None:
    """A state change's age is its event's: a deadline on it (none is parsed today) does
    not postpone it."""
    notice = _notice(Kind.STATE_CHANGE, deadline=WARNED_AT + timedelta(hours=5))
    stale = staleness(notice, _info("stopping"), Settings(), WARNED_AT + timedelta(hours=1))
    assert stale is not None and "2026-12-01T14:02:00Z" in stale.reason


def test_a_lifecycle_hook_always_gets_its_answer() -> None:
    """The group waits for the completion: an Auto Scaling hook is never stale, however old."""
    hook = LifecycleHook("group", "hook", "token", INSTANCE)
    for kind in (Kind.ASG_TERMINATION, Kind.SPOT_INTERRUPTION, Kind.STATE_CHANGE):
        notice = _notice(kind, lifecycle=hook)
        assert staleness(notice, _info("running"), Settings(), DEADLINE + timedelta(days=2)) is None


@pytest.mark.parametrize(
    "kind", [Kind.REBALANCE_RECOMMENDATION, Kind.ROTATION, Kind.INSTANCE_IMPAIRED]
)
def test_kinds_never_forced_or_always_current_are_never_stale(kind: Kind) -> None:
    """Rebalance recommendations and rotations are never forced anyway; an impaired status is
    read by the sweep from the present state."""
    notice = _notice(kind)
    assert staleness(notice, _info("running"), Settings(), DEADLINE + timedelta(days=2)) is None


def test_a_late_seconds_count_is_whole_seconds() -> None:
    """The reason says whole seconds (an operator reads it), not a float."""
    notice = _notice(Kind.SPOT_INTERRUPTION)
    now = DEADLINE + LIMIT + timedelta(seconds=1, microseconds=900_000)
    stale = staleness(notice, None, Settings(), now)
    assert stale is not None and stale.reason.startswith("601s past")


def test_a_verdict_cannot_be_changed_once_given() -> None:
    """The pipeline hands the same verdict to ``decide`` and to the report: frozen, so
    neither can alter what the other reads (and it can key a set or a dict)."""
    stale = staleness(_notice(Kind.SPOT_INTERRUPTION), None, Settings(), DEADLINE + 2 * LIMIT)
    assert stale is not None
    with pytest.raises(FrozenInstanceError):
        stale.nothing_going = True  # type: ignore[misc]
    assert {stale} == {Stale(stale.reason)}
