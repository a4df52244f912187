"""Karpenter NodePool disruption budgets: cases mirror Karpenter's documented behaviour.

Cron hits are also checked against a brute-force reference of robfig/cron's matching rules, to
show that croniter (which does the iteration) agrees with robfig on the schedules we accept.
"""

from __future__ import annotations

import itertools
import math
import threading
from collections.abc import Mapping
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lifeboat.karpenter.budget_windows import MAX_EDGES, BudgetActivity
from lifeboat.karpenter.budgets import (
    Budget,
    BudgetError,
    Segment,
    allowed_disruptions,
    applies_to,
    budget_limit,
    earliest_permitted,
    format_go_duration,
    is_active,
    next_allowed_at,
    parse_budgets,
    parse_go_duration,
    window_timeline,
)
from lifeboat.karpenter.cron import CronError, CronSchedule, parse_cron, robfig_horizon_opens
from tests.support import kube

# 2024-01-07 is a Sunday; 2024-01-08 a Monday.
SUNDAY = datetime(2024, 1, 7, tzinfo=UTC)
MONDAY = datetime(2024, 1, 8, tzinfo=UTC)
FREEZE = {"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "8h"}


def pool(*budgets: Mapping[str, Any]) -> dict[str, Any]:
    """A karpenter.sh/v1 NodePool dict with the given budgets."""
    return kube.nodepool(name="default", budgets=list(budgets))


def one(**fields: Any) -> Budget:
    """Parse a single budget dict."""
    return parse_budgets(pool(fields))[0]


def at(day: datetime, hour: int = 0, minute: int = 0, second: int = 0) -> datetime:
    return day.replace(hour=hour, minute=minute, second=second)


# --------------------------------------------------------------------------------------------
# nodes: integers and percentages (rounded up)


@pytest.mark.parametrize(
    ("nodes", "node_count", "expected"),
    [
        ("30%", 10, 3),
        ("5%", 10, 1),
        ("20%", 19, 4),
        ("0", 10, 0),
        ("0%", 10, 0),
        ("3", 10, 3),
        ("15", 10, 15),
        ("100%", 7, 7),
        ("10%", 0, 0),
        ("1%", 1, 1),
    ],
)
def test_budget_limit_rounds_percentages_up(nodes: str, node_count: int, expected: int) -> None:
    assert budget_limit(one(nodes=nodes), node_count) == expected


@given(percent=st.integers(0, 100), node_count=st.integers(0, 5000))
def test_percentage_is_ceil_of_share(percent: int, node_count: int) -> None:
    # intstr.GetScaledValueFromIntOrPercent(roundUp=true) computes math.Ceil in float64.
    limit = budget_limit(one(nodes=f"{percent}%"), node_count)
    assert limit == math.ceil(percent * node_count / 100)


@pytest.mark.parametrize("nodes", ["101%", "-1", "1.5", "ten", "10 %", "", "%", "+3"])
def test_invalid_nodes_fail_closed(nodes: str) -> None:
    allowance = allowed_disruptions(pool({"nodes": nodes}), 10, 0, MONDAY)
    assert allowance.allowed == 0
    assert allowance.blocked_by_error
    assert "budget[0]" in allowance.reason


def test_nodes_must_be_a_string() -> None:
    with pytest.raises(BudgetError, match=r"budget\[0\]: nodes 3"):
        parse_budgets(pool({"nodes": 3}))


# --------------------------------------------------------------------------------------------
# Defaults


@pytest.mark.parametrize(
    "nodepool",
    [
        {"spec": {"disruption": {"consolidateAfter": "0s"}}},
        {"spec": {"disruption": {"budgets": None}}},
        {"spec": {"template": {}}},
        {},
    ],
)
def test_default_budget_is_ten_percent(nodepool: dict[str, Any]) -> None:
    budgets = parse_budgets(nodepool)
    assert [(b.nodes, b.schedule, b.reasons) for b in budgets] == [("10%", None, None)]
    allowance = allowed_disruptions(nodepool, 25, 0, MONDAY)
    assert (allowance.allowed, allowance.limit) == (3, 3)


def test_budget_without_nodes_defaults_to_ten_percent() -> None:
    assert one(reasons=["Drifted"]).nodes == "10%"


def test_explicit_empty_budget_list_means_no_limit() -> None:
    allowance = allowed_disruptions(pool(), 10, 4, MONDAY)
    assert allowance.allowed is None
    assert allowance.limit is None


# --------------------------------------------------------------------------------------------
# Schedules and windows


def test_yearly_one_hour_window_is_inactive_in_june() -> None:
    budget = one(nodes="0", schedule="@yearly", duration="1h")
    june = datetime(2024, 6, 15, 12, tzinfo=UTC)
    assert not is_active(budget, june)
    assert (
        allowed_disruptions(
            pool({"nodes": "0", "schedule": "@yearly", "duration": "1h"}), 10, 0, june
        ).allowed
        is None
    )
    assert is_active(budget, datetime(2024, 1, 1, 0, 59, 59, tzinfo=UTC))
    assert not is_active(budget, datetime(2024, 1, 1, 1, tzinfo=UTC))


def test_daily_48h_window_is_active_at_midnight() -> None:
    assert is_active(one(nodes="0", schedule="@daily", duration="48h"), SUNDAY)


def test_sunday_morning_window_inactive_at_sunday_midnight() -> None:
    budget = one(nodes="0", schedule="30 6 * * SUN", duration="6h")
    assert not is_active(budget, SUNDAY)
    assert is_active(budget, at(SUNDAY, 6, 30))
    assert is_active(budget, at(SUNDAY, 12, 29, 59))
    assert not is_active(budget, at(SUNDAY, 12, 30))


def test_business_hours_window_edges() -> None:
    budget = one(**FREEZE)
    assert not is_active(budget, at(MONDAY, 8, 59, 59))
    assert is_active(budget, at(MONDAY, 9))
    assert is_active(budget, at(MONDAY, 16, 59, 59))
    assert is_active(budget, at(MONDAY, 16, 59, 59) + timedelta(microseconds=999_999))
    assert not is_active(budget, at(MONDAY, 17))
    assert not is_active(budget, at(SUNDAY, 10))


def test_freeze_blocks_only_inside_window() -> None:
    nodepool = pool({"nodes": "10%"}, FREEZE)
    inside = allowed_disruptions(nodepool, 10, 0, at(MONDAY, 16, 59, 59))
    assert (inside.allowed, inside.limit, inside.binding_budget) == (0, 0, 1)
    assert 'budget[1] "0" (window "0 9 * * mon-fri" for 8h0m0s)' in inside.reason
    outside = allowed_disruptions(nodepool, 10, 0, at(MONDAY, 17))
    assert (outside.allowed, outside.binding_budget) == (1, 0)
    assert outside.reason == 'budget[0] "10%" of 10 nodes = 1, 0 disrupting'


def test_minimum_over_active_budgets() -> None:
    nodepool = pool({"nodes": "5"}, {"nodes": "20%"}, {"nodes": "3"}, {"nodes": "0", **_closed()})
    allowance = allowed_disruptions(nodepool, 10, 0, MONDAY)
    assert (allowance.allowed, allowance.limit, allowance.binding_budget) == (2, 2, 1)
    assert allowance.reason == 'budget[1] "20%" of 10 nodes = 2, 0 disrupting'


def _closed() -> dict[str, str]:
    """A window that is never open on MONDAY (1 Jan only)."""
    return {"schedule": "0 0 1 1 *", "duration": "1h"}


@pytest.mark.parametrize(("disrupting", "allowed"), [(0, 2), (1, 1), (2, 0), (5, 0)])
def test_disrupting_nodes_are_subtracted_and_floored(disrupting: int, allowed: int) -> None:
    allowance = allowed_disruptions(pool({"nodes": "20%"}), 10, disrupting, MONDAY)
    assert allowance.allowed == allowed
    assert allowance.limit == 2
    assert allowance.disrupting == disrupting
    assert allowance.reason == f'budget[0] "20%" of 10 nodes = 2, {disrupting} disrupting'


def test_no_active_budget_means_no_limit() -> None:
    allowance = allowed_disruptions(pool({"nodes": "0", **_closed()}), 10, 3, MONDAY)
    assert allowance.allowed is None
    assert allowance.limit is None
    assert allowance.permits_one
    assert not allowance.blocked_by_error
    assert "no limit" in allowance.reason


def test_never_firing_schedule_is_always_active_like_karpenter() -> None:
    # robfig returns the zero time for 30 February; Karpenter reads !zero.After(now) as active.
    budget = one(nodes="0", schedule="0 0 30 2 *", duration="1h")
    assert budget.cron is not None
    assert budget.cron.never_fires
    assert is_active(budget, MONDAY)
    nodepool = pool({"nodes": "0", "schedule": "0 0 30 2 *", "duration": "1h"})
    assert allowed_disruptions(nodepool, 10, 0, MONDAY).allowed == 0
    assert next_allowed_at(nodepool, 10, 0, MONDAY, MONDAY + timedelta(days=30)) is None


def test_leap_day_schedule_fires_in_leap_years() -> None:
    budget = one(nodes="0", schedule="0 0 29 2 *", duration="24h")
    assert is_active(budget, datetime(2028, 2, 29, 12, tzinfo=UTC))
    assert not is_active(budget, datetime(2027, 3, 1, tzinfo=UTC))


# --------------------------------------------------------------------------------------------
# Invalid budgets fail closed


def test_unknown_descriptor_blocks_the_pool() -> None:
    nodepool = pool({"nodes": "10%"}, {"nodes": "1", "schedule": "@wrongly", "duration": "1h"})
    with pytest.raises(BudgetError, match="unrecognized descriptor: @wrongly"):
        parse_budgets(nodepool)
    allowance = allowed_disruptions(nodepool, 10, 0, MONDAY)
    assert allowance.allowed == 0
    assert allowance.limit == 0
    assert allowance.blocked_by_error
    assert allowance.reason == (
        'pool blocked: budget[1]: schedule "@wrongly": unrecognized descriptor: @wrongly'
    )


def test_backwards_range_blocks_the_pool() -> None:
    nodepool = pool(
        {"nodes": "10%"}, {"nodes": "0", "schedule": "0 0 * * tue-mon", "duration": "1h"}
    )
    allowance = allowed_disruptions(nodepool, 10, 0, MONDAY)
    assert allowance.allowed == 0
    assert allowance.blocked_by_error
    assert allowance.reason == (
        'pool blocked: budget[1]: schedule "0 0 * * tue-mon": '
        "beginning of range (2) beyond end of range (1): tue-mon"
    )


def test_every_invalid_budget_is_named() -> None:
    nodepool = pool({"nodes": "x"}, {"nodes": "1"}, {"nodes": "1", "schedule": "@daily"})
    with pytest.raises(BudgetError) as raised:
        parse_budgets(nodepool)
    assert "budget[0]: nodes" in str(raised.value)
    assert "budget[2]: 'schedule' must be set with 'duration'" in str(raised.value)
    assert "budget[1]" not in str(raised.value)


@pytest.mark.parametrize(
    "fields",
    [
        {"schedule": "@daily"},
        {"duration": "1h"},
    ],
)
def test_schedule_and_duration_come_together(fields: dict[str, str]) -> None:
    allowance = allowed_disruptions(pool({"nodes": "5", **fields}), 10, 0, MONDAY)
    assert allowance.allowed == 0
    assert "'schedule' must be set with 'duration'" in allowance.reason


@pytest.mark.parametrize("duration", ["45s", "1h30", "1d", "-1h", "", "1.5h", "0s"])
def test_duration_must_match_karpenter_pattern(duration: str) -> None:
    # The CRD only admits hours and minutes: ^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$
    with pytest.raises(BudgetError, match=r"budget\[0\]: duration"):
        one(nodes="1", schedule="@daily", duration=duration)


@pytest.mark.parametrize("duration", ["8h", "30m", "1h30m", "48h", "1h0m0s", "90m0s", "0h"])
def test_duration_accepted_forms(duration: str) -> None:
    assert one(nodes="1", schedule="@daily", duration=duration).duration == parse_go_duration(
        duration
    )


def test_unknown_reason_is_invalid() -> None:
    with pytest.raises(BudgetError, match="reasons"):
        one(nodes="1", reasons=["Expired"])


# --------------------------------------------------------------------------------------------
# Reasons


def test_budget_listing_other_reasons_does_not_apply_to_drifted() -> None:
    nodepool = pool({"nodes": "0", "reasons": ["Underutilized"]}, {"nodes": "50%"})
    drifted = allowed_disruptions(nodepool, 10, 0, MONDAY)
    assert (drifted.allowed, drifted.binding_budget) == (5, 1)
    underutilized = allowed_disruptions(nodepool, 10, 0, MONDAY, reason="Underutilized")
    assert (underutilized.allowed, underutilized.binding_budget) == (0, 0)


def test_budget_listing_drifted_applies() -> None:
    nodepool = pool({"nodes": "1", "reasons": ["Empty", "Drifted"]}, {"nodes": "50%"})
    assert allowed_disruptions(nodepool, 10, 0, MONDAY).allowed == 1


def test_reason_none_selects_only_reasonless_budgets() -> None:
    nodepool = pool({"nodes": "0", "reasons": ["Drifted"]}, {"nodes": "2"})
    assert allowed_disruptions(nodepool, 10, 0, MONDAY, reason=None).allowed == 2
    assert allowed_disruptions(nodepool, 10, 0, MONDAY).allowed == 0


def test_explicit_empty_reasons_apply_to_no_reason() -> None:
    # Karpenter tests `budget.Reasons == nil`; a decoded `reasons: []` is non-nil and empty.
    budget = one(nodes="0", reasons=[])
    assert not applies_to(budget, "Drifted")
    assert not applies_to(budget, None)
    assert applies_to(one(nodes="0"), None)


def test_invalid_reason_argument() -> None:
    with pytest.raises(ValueError, match="reason"):
        allowed_disruptions(pool(), 10, 0, MONDAY, reason="Expired")


def test_naive_datetime_rejected() -> None:
    with pytest.raises(ValueError, match="naive"):
        allowed_disruptions(pool(), 10, 0, datetime(2024, 1, 8))


# --------------------------------------------------------------------------------------------
# Cron parsing: exactly robfig's ParseStandard behind Karpenter's CRD pattern


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("0 0 0 * * *", "expected exactly 5 fields, found 6"),
        ("0 0 0 * * * 2024", "expected exactly 5 fields, found 7"),
        ("0 0 * *", "expected exactly 5 fields, found 4"),
        ("CRON_TZ=Europe/Paris 0 9 * * *", "expected exactly 5 fields, found 6"),
        ("@wrongly", "unrecognized descriptor: @wrongly"),
        ("@DAILY", "unrecognized descriptor: @DAILY"),
        ("@every 1h", "unrecognized descriptor: @every 1h"),
        ("@daily 0 0 * *", "unrecognized descriptor"),
        (" @daily", "CRD schedule pattern"),
        ("", "expected exactly 5 fields, found 0"),
        ("0 0 * * tue-mon", r"beginning of range \(2\) beyond end of range \(1\): tue-mon"),
        ("0 0 * dec-jan *", r"beginning of range \(12\) beyond end of range \(1\)"),
        ("0 0 * * 7", r"end of range \(7\) above maximum \(6\): 7"),
        ("60 * * * *", r"end of range \(60\) above maximum \(59\)"),
        ("0 24 * * *", r"end of range \(24\) above maximum \(23\)"),
        ("0 0 0 * *", r"beginning of range \(0\) below minimum \(1\)"),
        ("0 0 32 * *", r"end of range \(32\) above maximum \(31\)"),
        ("0 0 * 13 *", r"end of range \(13\) above maximum \(12\)"),
        ("0 0 * 0 *", r"beginning of range \(0\) below minimum \(1\)"),
        ("*/0 * * * *", "step of range should be a positive number"),
        # Atoi's range is int64: one past its maximum does not parse (the maximum does).
        ("*/9223372036854775808 * * * *", "value out of range"),
        # mustParseInt: Atoi accepts the sign, then a negative number is refused.
        ("*/-1 * * * *", r"negative number \(-1\) not allowed: -1"),
        # int64's minimum is still in Atoi's range: refused as negative, not out of range.
        (
            "*/-9223372036854775808 * * * *",
            r"negative number \(-9223372036854775808\) not allowed",
        ),
        ("1-2-3 * * * *", "too many hyphens"),
        ("*/2/3 * * * *", "too many slashes"),
        ("-5 * * * *", "failed to parse int from"),
        ("0 0 * * sunday", "failed to parse int from sunday"),
        ("0 0 * * L", "failed to parse int from L"),
        ("0 0 1W * *", "failed to parse int from 1W"),
        ("0 0 * * 1#2", "failed to parse int from 1#2"),
        ("H * * * *", "failed to parse int from H"),
    ],
)
def test_cron_rejections(spec: str, message: str) -> None:
    with pytest.raises(CronError, match=message):
        parse_cron(spec)


@pytest.mark.parametrize(
    "spec",
    [
        "@yearly",
        "@annually",
        "@monthly",
        "@weekly",
        "@daily",
        "@midnight",
        "@hourly",
        "@daily ",  # robfig trims after Karpenter's "TZ=UTC " prefix
        "0 9 * * mon-fri",
        "0 9 * * MON-FRI",
        "0 0 ? * Sun",
        "0 0 1 JAN-mar ?",
        "*/15 */2 1,15 * *",
        "5/15 * * * *",  # robfig: N/step is N-max/step
        "1,,2 * * * *",  # robfig drops empty list parts
        "0  0\t* * *",
        "0 0 * * 0-6",
        "0 0 * * +1",  # strconv.Atoi accepts a plus sign
    ],
)
def test_cron_acceptances(spec: str) -> None:
    parse_cron(spec)


def test_descriptors_expand_like_robfig() -> None:
    start = datetime(2024, 3, 15, 10, 30, tzinfo=UTC)
    expected = {
        "@yearly": datetime(2025, 1, 1, tzinfo=UTC),
        "@annually": datetime(2025, 1, 1, tzinfo=UTC),
        "@monthly": datetime(2024, 4, 1, tzinfo=UTC),
        "@weekly": datetime(2024, 3, 17, tzinfo=UTC),  # a Sunday
        "@daily": datetime(2024, 3, 16, tzinfo=UTC),
        "@midnight": datetime(2024, 3, 16, tzinfo=UTC),
        "@hourly": datetime(2024, 3, 15, 11, tzinfo=UTC),
    }
    assert {spec: parse_cron(spec).next_after(start) for spec in expected} == expected


def test_step_and_names_values() -> None:
    schedule = parse_cron("5/15 0 * jan,Mar-apr sun")
    assert schedule.minute.values == {5, 20, 35, 50}
    assert schedule.month.values == {1, 3, 4}
    assert schedule.dow.values == {0}
    assert parse_cron("*-5 * * * *").minute.star  # robfig ignores what follows "*-"


@pytest.mark.parametrize(
    ("spec", "days"),
    [
        # Both day fields restricted: a day matching either one matches (like Vixie cron).
        ("0 0 13 * fri", [date(2024, 9, 6), date(2024, 9, 13), date(2024, 9, 20)]),
        # One field is "*": only the other one applies.
        ("0 0 * * fri", [date(2024, 9, 6), date(2024, 9, 13)]),
        ("0 0 13 * *", [date(2024, 9, 13)]),
        ("0 0 13 * ?", [date(2024, 9, 13)]),
        # A step above 1 clears robfig's star bit: back to "either".
        (
            "0 0 */10 * fri",
            [date(2024, 9, 1), date(2024, 9, 6), date(2024, 9, 11), date(2024, 9, 13)],
        ),
        # "*/1" keeps the star bit.
        ("0 0 */1 * fri", [date(2024, 9, 6), date(2024, 9, 13)]),
        # A full explicit range is not a star: every day matches.
        ("0 0 1-31 * fri", [date(2024, 9, d) for d in range(1, 15)]),
        ("0 0 13 * 0-6", [date(2024, 9, d) for d in range(1, 15)]),
    ],
)
def test_day_of_month_and_week_semantics(spec: str, days: list[date]) -> None:
    schedule = parse_cron(spec)
    hits: list[date] = []
    moment = datetime(2024, 8, 31, 12, tzinfo=UTC)
    while True:
        hit = schedule.next_after(moment)
        assert hit is not None
        if hit.date() > date(2024, 9, 14):
            break
        hits.append(hit.date())
        moment = hit
    assert hits == [d for d in days if d <= date(2024, 9, 14)]


# --------------------------------------------------------------------------------------------
# Go durations


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1h30m", timedelta(hours=1, minutes=30)),
        ("8h", timedelta(hours=8)),
        ("45s", timedelta(seconds=45)),
        ("1h0m0s", timedelta(hours=1)),
        ("1.5h", timedelta(hours=1, minutes=30)),
        ("300ms", timedelta(milliseconds=300)),
        ("2us", timedelta(microseconds=2)),
        ("2µs", timedelta(microseconds=2)),
        ("1500ns", timedelta(microseconds=1)),
        ("-2m", timedelta(minutes=-2)),
        ("+5m", timedelta(minutes=5)),
        ("0", timedelta(0)),
        (".5s", timedelta(milliseconds=500)),
        ("1.s", timedelta(seconds=1)),
    ],
)
def test_parse_go_duration(text: str, expected: timedelta) -> None:
    assert parse_go_duration(text) == expected


@pytest.mark.parametrize("text", ["", "h", "1", "1d", "1h 30m", ".h", "1.5.5h", "-", "3000000h"])
def test_parse_go_duration_errors(text: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_go_duration(text)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (timedelta(hours=8), "8h0m0s"),
        (timedelta(hours=1, minutes=30), "1h30m0s"),
        (timedelta(minutes=30), "30m0s"),
        (timedelta(seconds=45), "45s"),
        (timedelta(seconds=1, milliseconds=500), "1.5s"),
        (timedelta(milliseconds=300), "300ms"),
        (timedelta(0), "0s"),
        (timedelta(hours=48), "48h0m0s"),
    ],
)
def test_format_go_duration(value: timedelta, text: str) -> None:
    assert format_go_duration(value) == text
    assert parse_go_duration(text) == value


# --------------------------------------------------------------------------------------------
# next_allowed_at


def test_next_allowed_is_end_of_zero_window() -> None:
    nodepool = pool({"nodes": "10%"}, FREEZE)
    now = at(MONDAY, 10, 17, 23)
    assert next_allowed_at(nodepool, 10, 0, now, now + timedelta(days=7)) == at(MONDAY, 17)


def test_next_allowed_is_now_when_allowed() -> None:
    nodepool = pool({"nodes": "10%"}, FREEZE)
    now = at(MONDAY, 7, 5)
    assert next_allowed_at(nodepool, 10, 0, now, now + timedelta(days=7)) == now


def test_next_allowed_none_when_capacity_used_up() -> None:
    nodepool = pool({"nodes": "2"}, FREEZE)
    now = at(MONDAY, 7)
    assert next_allowed_at(nodepool, 10, 2, now, now + timedelta(days=7)) is None
    assert next_allowed_at(nodepool, 10, 1, now, now + timedelta(days=7)) == now


def test_next_allowed_respects_until() -> None:
    nodepool = pool({"nodes": "10%"}, FREEZE)
    now = at(MONDAY, 10)
    assert next_allowed_at(nodepool, 10, 0, now, at(MONDAY, 17)) is None
    assert next_allowed_at(nodepool, 10, 0, now, at(MONDAY, 17, 0, 1)) == at(MONDAY, 17)
    assert next_allowed_at(nodepool, 10, 0, now, now) is None


def test_next_allowed_skips_overlapping_windows() -> None:
    # Daily 48h freezes overlap: a freeze never ends.
    nodepool = pool({"nodes": "1"}, {"nodes": "0", "schedule": "@daily", "duration": "48h"})
    assert next_allowed_at(nodepool, 10, 0, MONDAY, MONDAY + timedelta(days=14)) is None
    # Weekend freeze Fri 18:00 for 63h ends Monday 09:00.
    weekend = pool({"nodes": "0", "schedule": "0 18 * * fri", "duration": "63h"})
    now = datetime(2024, 1, 6, 12, tzinfo=UTC)  # Saturday
    assert next_allowed_at(weekend, 10, 0, now, now + timedelta(days=7)) == at(MONDAY, 9)


def test_window_with_a_larger_limit_cannot_lift_a_zero_budget() -> None:
    # Budgets combine by minimum: a nightly window granting 1 never beats an always-active 0.
    closed = pool({"nodes": "0"}, {"nodes": "1", "schedule": "0 2 * * *", "duration": "2h"})
    assert next_allowed_at(closed, 10, 0, MONDAY, MONDAY + timedelta(days=2)) is None


def test_next_allowed_none_for_invalid_pool() -> None:
    nodepool = pool({"nodes": "0", "schedule": "0 0 * * tue-mon", "duration": "1h"})
    assert next_allowed_at(nodepool, 10, 0, MONDAY, MONDAY + timedelta(days=7)) is None


def test_next_allowed_hourly_over_a_week_is_cheap() -> None:
    nodepool = pool({"nodes": "0", "schedule": "@hourly", "duration": "30m"})
    now = at(MONDAY, 10, 5)
    assert next_allowed_at(nodepool, 10, 0, now, now + timedelta(days=7)) == at(MONDAY, 10, 30)
    timeline = window_timeline(nodepool, 10, now, now + timedelta(days=7))
    assert len(timeline) == 2 * 7 * 24 + 1


# --------------------------------------------------------------------------------------------
# window_timeline


def test_timeline_weekday_business_hours_freeze() -> None:
    nodepool = pool({"nodes": "10%"}, FREEZE)
    friday = datetime(2024, 1, 5, tzinfo=UTC)
    timeline = window_timeline(nodepool, 20, friday, friday + timedelta(days=4))
    assert timeline == [
        Segment(friday, at(friday, 9), 2, (0,)),
        Segment(at(friday, 9), at(friday, 17), 0, (0, 1)),
        Segment(at(friday, 17), at(MONDAY, 9), 2, (0,)),
        Segment(at(MONDAY, 9), at(MONDAY, 17), 0, (0, 1)),
        Segment(at(MONDAY, 17), friday + timedelta(days=4), 2, (0,)),
    ]


def test_timeline_starting_inside_a_window_and_unlimited_gaps() -> None:
    nodepool = pool(FREEZE)
    start = at(MONDAY, 12)
    timeline = window_timeline(nodepool, 10, start, at(MONDAY, 20))
    assert timeline == [
        Segment(start, at(MONDAY, 17), 0, (0,)),
        Segment(at(MONDAY, 17), at(MONDAY, 20), None, ()),
    ]


def test_timeline_ignores_budgets_for_other_reasons() -> None:
    nodepool = pool({"nodes": "0", "reasons": ["Empty"], **_closed()}, {"nodes": "3"})
    assert window_timeline(nodepool, 10, MONDAY, MONDAY + timedelta(days=1)) == [
        Segment(MONDAY, MONDAY + timedelta(days=1), 3, (1,))
    ]


def test_timeline_of_invalid_pool_raises() -> None:
    with pytest.raises(BudgetError):
        window_timeline(pool({"nodes": "nope"}), 10, MONDAY, MONDAY + timedelta(days=1))


def test_timeline_empty_range() -> None:
    assert window_timeline(pool(FREEZE), 10, MONDAY, MONDAY) == []


# --------------------------------------------------------------------------------------------
# Properties: croniter agrees with robfig's rules; timeline agrees with allowed_disruptions


def _reference_next(schedule: CronSchedule, moment: datetime) -> datetime | None:
    """robfig's SpecSchedule.Next by brute force over days (first hit strictly after)."""
    day = moment.date()
    while day.year <= moment.year + 5:
        if day.month in schedule.month.values and schedule.day_matches(day):
            for hour in sorted(schedule.hour.values):
                for minute in sorted(schedule.minute.values):
                    hit = datetime(day.year, day.month, day.day, hour, minute, tzinfo=UTC)
                    if hit > moment:
                        return hit
        day += timedelta(days=1)
    return None


def _reference_prev(schedule: CronSchedule, moment: datetime) -> datetime | None:
    """The last hit at or before ``moment`` by brute force (searching back 6 years)."""
    day = moment.date()
    while day.year >= moment.year - 6:
        if day.month in schedule.month.values and schedule.day_matches(day):
            for hour in sorted(schedule.hour.values, reverse=True):
                for minute in sorted(schedule.minute.values, reverse=True):
                    hit = datetime(day.year, day.month, day.day, hour, minute, tzinfo=UTC)
                    if hit <= moment:
                        return hit
        day -= timedelta(days=1)
    return None


def _cron_part(low: int, high: int, names: tuple[str, ...] | None) -> st.SearchStrategy[str]:
    def value(number: int, use_name: bool) -> str:
        if names is not None and use_name:
            return names[number - low]
        return str(number)

    single = st.builds(value, st.integers(low, high), st.booleans())
    span = st.tuples(st.integers(low, high), st.integers(low, high), st.booleans()).map(
        lambda t: f"{value(min(t[0], t[1]), t[2])}-{value(max(t[0], t[1]), t[2])}"
    )
    step = st.integers(1, 12).map(str)
    return st.one_of(
        st.just("*"),
        st.just("?"),
        single,
        span,
        st.builds(lambda base, s: f"{base}/{s}", st.one_of(st.just("*"), single, span), step),
    )


def _cron_field(
    low: int, high: int, names: tuple[str, ...] | None = None
) -> st.SearchStrategy[str]:
    return st.lists(_cron_part(low, high, names), min_size=1, max_size=3).map(",".join)


_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAYS = ("SUN", "Mon", "tue", "WED", "thu", "Fri", "sat")

cron_specs = st.tuples(
    st.sampled_from(["0", "30", "*/20", "5,55"]),
    st.sampled_from(["0", "9", "*/6", "22-23"]),
    _cron_field(1, 31),
    _cron_field(1, 12, _MONTHS),
    _cron_field(0, 6, _DAYS),
).map(" ".join)

moments = st.datetimes(
    min_value=datetime(2023, 1, 1), max_value=datetime(2030, 12, 31), timezones=st.just(UTC)
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=cron_specs, moment=moments)
def test_croniter_agrees_with_robfig_rules(spec: str, moment: datetime) -> None:
    schedule = parse_cron(spec)
    assert schedule.next_after(moment) == _reference_next(schedule, moment)
    assert schedule.last_at_or_before(moment) == _reference_prev(schedule, moment)


scheduled_budgets = st.fixed_dictionaries(
    {
        "nodes": st.sampled_from(["0", "1", "2", "50%"]),
        "schedule": st.sampled_from(
            ["0 9 * * mon-fri", "@hourly", "@daily", "30 6 * * SUN", "*/20 * * * *", "0 0 1,15 * *"]
        ),
        "duration": st.sampled_from(["10m", "30m", "1h", "8h", "1h30m", "48h"]),
    }
)
pools = st.lists(
    st.one_of(
        scheduled_budgets, st.fixed_dictionaries({"nodes": st.sampled_from(["1", "3", "20%"])})
    ),
    min_size=1,
    max_size=3,
).map(lambda budgets: pool(*budgets))
whole_seconds = moments.map(lambda m: m.replace(microsecond=0))


@settings(max_examples=100, deadline=None)
@given(
    nodepool=pools,
    now=whole_seconds,
    disrupting=st.integers(0, 3),
    probe=st.floats(0, 1, exclude_max=True),
)
def test_next_allowed_at_is_the_first_allowed_instant(
    nodepool: dict[str, Any], now: datetime, disrupting: int, probe: float
) -> None:
    until = now + timedelta(days=3)
    found = next_allowed_at(nodepool, 10, disrupting, now, until)
    if found is None:
        assert not allowed_disruptions(nodepool, 10, disrupting, now).permits_one
        sample = now + (until - now) * probe
        assert not allowed_disruptions(nodepool, 10, disrupting, sample).permits_one
        return
    assert now <= found < until
    assert allowed_disruptions(nodepool, 10, disrupting, found).permits_one
    if found > now:
        before = found - timedelta(seconds=1)
        assert not allowed_disruptions(nodepool, 10, disrupting, before).permits_one
        # Whole seconds before ``found``: timedelta arithmetic rounds to the microsecond, so a
        # probe just under 1 could otherwise land exactly on ``found``.
        sample = now + timedelta(seconds=int((found - now).total_seconds() * probe))
        assert not allowed_disruptions(nodepool, 10, disrupting, sample).permits_one


@settings(max_examples=100, deadline=None)
@given(
    nodepool=pools, start=whole_seconds, probes=st.lists(st.floats(0, 1), min_size=1, max_size=5)
)
def test_timeline_matches_allowed_disruptions(
    nodepool: dict[str, Any], start: datetime, probes: list[float]
) -> None:
    end = start + timedelta(days=2)
    timeline = window_timeline(nodepool, 10, start, end)
    assert timeline[0].start == start
    assert timeline[-1].end == end
    for left, right in itertools.pairwise(timeline):
        assert left.end == right.start
        assert (left.limit, left.active_budget_indexes) != (
            right.limit,
            right.active_budget_indexes,
        )
    for fraction in probes:
        moment = start + (end - start) * fraction
        if moment >= end:
            continue
        segment = next(s for s in timeline if s.start <= moment < s.end)
        allowance = allowed_disruptions(nodepool, 10, 0, moment)
        assert segment.limit == allowance.limit
        # Segment edges are where limits change: check the state just inside each edge too.
        assert allowed_disruptions(nodepool, 10, 0, segment.start).limit == segment.limit


# --------------------------------------------------------------------------------------------
# Karpenter's arithmetic at the edges (issue 11.4): intstr's int32, robfig's overflow and its
# five-year horizon


@pytest.mark.parametrize(
    ("nodes", "expected"),
    [
        ("4294967296", 0),  # 2**32: the low 32 bits are 0
        ("4294967297", 1),
        ("2147483647", 2147483647),
        ("2147483648", -2147483648),  # 2**31 wraps to the most negative int32
        ("4294967295", -1),
        ("9223372036854775807", -1),  # Atoi's int64 maximum parses; its low 32 bits are -1
        ("000007", 7),
    ],
)
def test_nodes_integer_keeps_its_low_32_bits_like_intstr_fromint(nodes: str, expected: int) -> None:
    """``Budget.GetAllowedDisruptions``: ``GetIntStrFromValue`` uses ``strconv.Atoi`` and
    ``intstr.FromInt``, which truncates to int32 (apimachinery ``intstr.FromInt``)."""
    assert budget_limit(one(nodes=nodes), 10) == expected


@pytest.mark.parametrize("nodes", ["4294967296", "2147483648", "4294967295"])
def test_truncated_nodes_allow_nothing_without_blocking_the_pool(nodes: str) -> None:
    """A zero or negative limit allows nothing: ``max(allowed - disrupting, 0)`` in
    ``BuildDisruptionBudgetMapping``; it is not an error."""
    allowance = allowed_disruptions(pool({"nodes": nodes}), 10, 0, MONDAY)
    assert allowance.allowed == 0
    assert not allowance.blocked_by_error


def test_nodes_beyond_64_bits_block_the_pool_while_active() -> None:
    """Atoi fails beyond int64, so the value is taken as a string, which is not a percentage:
    ``GetScaledValueFromIntOrPercent`` errors, and ``MustGetAllowedDisruptions`` returns 0 for
    every reason, even for a budget listing other reasons (the error is collected before the
    reasons are looked at in ``GetAllowedDisruptionsByReason``)."""
    huge = "99999999999999999999"
    with pytest.raises(BudgetError, match="not a percentage"):
        budget_limit(one(nodes=huge), 10)
    other_reason = pool({"nodes": "5"}, {"nodes": huge, "reasons": ["Underutilized"]})
    allowance = allowed_disruptions(other_reason, 10, 0, MONDAY)
    # MustGetAllowedDisruptions: 0 for every reason, the limit `lifeboat windows` shows too.
    assert (allowance.allowed, allowance.limit, allowance.blocked_by_error) == (0, 0, True)
    assert "budget[1]" in allowance.reason
    # Outside its window the budget is not evaluated (IsActive comes first): no error.
    windowed = pool({"nodes": "5"}, {"nodes": huge, "schedule": "0 9 * * *", "duration": "1h"})
    assert allowed_disruptions(windowed, 10, 0, at(MONDAY, 12)).allowed == 5
    assert allowed_disruptions(windowed, 10, 0, at(MONDAY, 9, 30)).blocked_by_error


@pytest.mark.parametrize(
    "spec",
    [
        "*/99999999999999999999 * * * *",
        "0 0 99999999999999999999 * *",
        "0 0 1-99999999999999999999 * *",
    ],
)
def test_cron_numbers_beyond_64_bits_fail_closed_like_robfig(spec: str) -> None:
    """robfig ``mustParseInt`` is ``strconv.Atoi``: a number beyond int64 is a parse error
    ("value out of range"), so ``Budget.IsActive`` errors and the pool is blocked."""
    with pytest.raises(CronError, match="value out of range"):
        parse_cron(spec)
    allowance = allowed_disruptions(
        pool({"nodes": "5"}, {"nodes": "0", "schedule": spec, "duration": "1h"}), 10, 0, MONDAY
    )
    assert allowance.blocked_by_error


def test_a_huge_step_within_64_bits_selects_only_the_start_like_robfig() -> None:
    """robfig ``getBits`` with a step beyond the range keeps only the start value."""
    assert parse_cron("*/99999999999 * * * *").minute.values == {0}


# 29 February: 2096 is a leap year, 2100 is not, the next is 2104. robfig's Next gives up
# after the year start.year + 5, so from March 2096 until the end of 2098 it sees no hit and
# returns the zero time, which Budget.IsActive reads as "active".
LEAP_FREEZE = {"nodes": "0", "schedule": "0 0 29 2 *", "duration": "1h"}


def test_a_hit_beyond_robfigs_horizon_makes_the_budget_active() -> None:
    """``Budget.IsActive``: ``!schedule.Next(now - duration).After(now)``; the zero time is
    never after now."""
    budget = one(**LEAP_FREEZE)
    assert is_active(budget, datetime(2097, 6, 1, tzinfo=UTC))
    assert is_active(budget, datetime(2099, 1, 1, 0, 59, 58, tzinfo=UTC))
    # From 2099-01-01 00:59:59, Next(now - 1h) starts in 2099 and sees 2104-02-29.
    assert not is_active(budget, datetime(2099, 1, 1, 0, 59, 59, tzinfo=UTC))
    assert not is_active(budget, datetime(2103, 6, 1, tzinfo=UTC))
    assert is_active(budget, datetime(2104, 2, 29, 0, 30, tzinfo=UTC))
    assert not is_active(budget, datetime(2024, 6, 1, tzinfo=UTC))  # 2028-02-29 is visible


def test_windows_follow_robfigs_horizon_instead_of_opening_at_once() -> None:
    """Before, windows were derived from hits only: the pool read as open at once while
    ``allowed_disruptions`` said closed, so a deferral woke immediately, in a loop."""
    nodepool = pool({"nodes": "5"}, LEAP_FREEZE)
    now = datetime(2097, 6, 1, tzinfo=UTC)
    assert not allowed_disruptions(nodepool, 10, 0, now).permits_one
    reopens = datetime(2099, 1, 1, 0, 59, 59, tzinfo=UTC)
    assert next_allowed_at(nodepool, 10, 0, now, now + timedelta(days=3650)) == reopens
    (frozen, opened) = window_timeline(nodepool, 10, now, reopens + timedelta(days=1))
    assert (frozen.start, frozen.end, frozen.limit) == (now, reopens, 0)
    assert opened.limit == 5


leap_moments = st.datetimes(
    min_value=datetime(2095, 1, 1), max_value=datetime(2105, 12, 31), timezones=st.just(UTC)
).map(lambda m: m.replace(microsecond=0))


@settings(max_examples=60, deadline=None)
@given(
    start=leap_moments,
    duration=st.sampled_from(["1h", "48h", "0m", "720h"]),
    probes=st.lists(st.floats(0, 1), min_size=1, max_size=4),
)
def test_timeline_agrees_with_is_active_across_robfigs_horizon(
    start: datetime, duration: str, probes: list[float]
) -> None:
    nodepool = pool({"nodes": "3"}, {**LEAP_FREEZE, "duration": duration})
    end = start + timedelta(days=3 * 365)
    timeline = window_timeline(nodepool, 10, start, end)
    assert timeline[0].start == start
    for segment in timeline:
        assert allowed_disruptions(nodepool, 10, 0, segment.start).limit == segment.limit
        last = segment.end - timedelta(seconds=1)
        assert allowed_disruptions(nodepool, 10, 0, last).limit == segment.limit
    for fraction in probes:
        moment = (start + (end - start) * fraction).replace(microsecond=0)
        found = next((s for s in timeline if s.start <= moment < s.end), None)
        if found is not None:
            assert allowed_disruptions(nodepool, 10, 0, moment).limit == found.limit


# --------------------------------------------------------------------------------------------
# The search for the next permitted instant is bounded (issue 10.9)


class _CountingCron:
    """Counts cron lookups and fails once a search does far more than a bounded one would."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, limit: int) -> None:
        from lifeboat.karpenter import cron

        self.calls = 0
        original = cron.CronCursor.next_after

        def counted(cursor: cron.CronCursor, moment: datetime) -> datetime | None:
            self.calls += 1
            if self.calls > limit:
                raise AssertionError(f"more than {limit} cron lookups for one search")
            return original(cursor, moment)

        monkeypatch.setattr(cron.CronCursor, "next_after", counted)


def test_waiting_for_capacity_does_not_walk_windows_up_to_a_distant_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A used-up always-active budget means waiting for capacity: no window can help, so no
    window is visited, however far the deadline (year 2400; a freeze every other minute)."""
    counter = _CountingCron(monkeypatch, limit=50)
    business = pool({"nodes": "20%"}, FREEZE)
    now = at(MONDAY, 10)
    opening = earliest_permitted(business, 6, 2, now, datetime(2400, 1, 1, tzinfo=UTC))
    assert (opening.at, opening.complete) == (None, True)
    every_other_minute = pool(
        {"nodes": "1"}, {"nodes": "0", "schedule": "*/2 * * * *", "duration": "1m"}
    )
    opening = earliest_permitted(every_other_minute, 10, 1, now, now + timedelta(days=60))
    assert (opening.at, opening.complete) == (None, True)
    assert counter.calls <= 50


def test_a_search_through_endless_windows_stops_at_its_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two freezes taking turns every minute never leave a gap: the search stops after a
    bounded number of hops and says how far it got (not complete), instead of walking 374
    years of minutes."""
    counter = _CountingCron(monkeypatch, limit=20 * MAX_EDGES)
    alternating = pool(
        {"nodes": "0", "schedule": "0-58/2 * * * *", "duration": "1m"},
        {"nodes": "0", "schedule": "1-59/2 * * * *", "duration": "1m"},
    )
    now = at(MONDAY, 10)
    opening = earliest_permitted(alternating, 10, 0, now, datetime(2400, 1, 1, tzinfo=UTC))
    assert opening.at is None
    assert not opening.complete
    assert now < opening.searched_until <= now + timedelta(minutes=MAX_EDGES + 1)
    assert counter.calls <= 20 * MAX_EDGES


# -- robfig's day rule and the last hit, at the edges the property test rarely draws ----------


def test_six_weekdays_or_a_day_of_month_still_skip_the_seventh_day() -> None:
    """robfig ``dayMatches``: neither day field is ``*``, so a day matches either field
    (OR). ``0 0 1 * 1-6`` fires on the 1st and on Monday to Saturday, never on another
    Sunday: Sunday 2026-12-06 is skipped (six weekdays are not every day)."""
    schedule = parse_cron("0 0 1 * 1-6")
    saturday = datetime(2026, 12, 5, 0, 0, 30, tzinfo=UTC)
    assert schedule.next_after(saturday) == datetime(2026, 12, 7, tzinfo=UTC)
    sunday_noon = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)
    assert schedule.last_at_or_before(sunday_noon) == datetime(2026, 12, 5, tzinfo=UTC)


def test_an_empty_weekday_list_leaves_the_day_of_month_to_match() -> None:
    """robfig ``getField`` splits with ``strings.FieldsFunc``, which drops empty parts: a
    weekday field ``,`` sets no bit and no star, so (OR) the day of month alone decides;
    with an impossible day of month nothing ever fires."""
    first = parse_cron("0 0 1 * ,")
    assert not first.never_fires
    assert first.next_after(datetime(2026, 12, 5, tzinfo=UTC)) == datetime(2027, 1, 1, tzinfo=UTC)
    assert parse_cron("0 0 30 2 ,").never_fires


@pytest.mark.parametrize(
    ("moment", "last"),
    [
        (datetime(2026, 12, 1, 10, 1, 30, tzinfo=UTC), datetime(2026, 12, 1, 10, 0, tzinfo=UTC)),
        (datetime(2026, 12, 1, 10, 1, 59, tzinfo=UTC), datetime(2026, 12, 1, 10, 0, tzinfo=UTC)),
        (datetime(2026, 12, 1, 10, 2, 0, tzinfo=UTC), datetime(2026, 12, 1, 10, 2, tzinfo=UTC)),
    ],
)
def test_the_last_hit_is_never_the_one_in_the_next_minute(moment: datetime, last: datetime) -> None:
    """``last_at_or_before``: a hit at the minute after ``moment`` is not before it (a
    window read as open a minute early would let a disruption through a closed budget)."""
    assert parse_cron("*/2 * * * *").last_at_or_before(moment) == last


# -- the window search's bound and its memo (lifeboat.karpenter.budget_windows) --------------


def test_the_search_stops_at_the_bound_the_readme_states() -> None:
    """Two freezes taking turns every minute: the search hops window edge to window edge and
    stops after exactly ``MAX_EDGES`` of them (the docs' Limits table shows the constant, read
    from the code when the docs are built)."""
    alternating = pool(
        {"nodes": "0", "schedule": "0-58/2 * * * *", "duration": "1m"},
        {"nodes": "0", "schedule": "1-59/2 * * * *", "duration": "1m"},
    )
    now = at(MONDAY, 10)
    opening = earliest_permitted(alternating, 10, 0, now, datetime(2400, 1, 1, tzinfo=UTC))
    assert (opening.at, opening.complete) == (None, False)
    assert opening.searched_until == now + timedelta(minutes=MAX_EDGES)


def test_a_freeze_every_minute_is_known_to_never_open_without_a_search() -> None:
    """``* * * * *`` for a minute or more is active at every instant (robfig's Next from
    ``now - duration`` always finds the current minute): a 0-node budget of that kind never
    permits anything, and the search says so completely (give up), rather than stopping at
    its bound after hours of minutes (defer and look again, for ever)."""
    for duration in ("1m", "90m"):
        always = pool({"nodes": "0", "schedule": "* * * * *", "duration": duration})
        now = at(MONDAY, 10)
        opening = earliest_permitted(always, 10, 0, now, datetime(2400, 1, 1, tzinfo=UTC))
        assert (opening.at, opening.complete) == (None, True)


def test_a_budgets_state_is_worked_out_once_per_window_edge(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """BudgetActivity's memo: between two edges the state holds, so asking again inside
    that span costs no cron lookup (a search over 50 budgets hops many times per edge)."""
    activity = BudgetActivity(one(nodes="0", schedule="0 9 * * *", duration="1h"))
    counter = _CountingCron(monkeypatch, limit=1_000)
    early = at(MONDAY, 3)
    assert activity.active_at(early) is False
    first = counter.calls
    for minutes in (1, 60, 299):
        assert activity.active_at(early + timedelta(minutes=minutes)) is False
    assert counter.calls == first
    assert activity.next_change(early) == at(MONDAY, 9)
    after_change = counter.calls
    for minutes in (1, 120, 359):
        assert activity.next_change(early + timedelta(minutes=minutes)) == at(MONDAY, 9)
    assert counter.calls == after_change


def test_a_timeline_costs_work_per_segment_and_stops_at_its_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``_iter_segments`` steps from change to change and stops at ``end``: five segments
    over four days of a weekday freeze take a handful of limit evaluations, not one per
    step up to ``_MAX_SEGMENTS`` (a loop that went on at ``end`` would add only empty
    segments, merged away, at the cost of thousands of steps per chart)."""
    from lifeboat.karpenter import budget_windows

    calls = 0
    original = budget_windows._limit

    def counted(budget: Budget, node_count: int) -> int | None:
        nonlocal calls
        calls += 1
        return original(budget, node_count)

    monkeypatch.setattr(budget_windows, "_limit", counted)
    friday = datetime(2024, 1, 5, tzinfo=UTC)
    end = friday + timedelta(days=4)
    timeline = window_timeline(pool({"nodes": "10%"}, FREEZE), 20, friday, end)
    assert len(timeline) == 5 and timeline[-1].end == end
    assert calls <= 2 * len(timeline) * 2


def test_an_empty_pool_is_counted_not_refused() -> None:
    """A NodePool with no nodes yet (or all gone) is a count of 0, not an error: a budget of
    "1" still allows one (``BuildDisruptionBudgetMapping``: the limit minus what is
    disrupting), a percentage of nothing allows none."""
    assert allowed_disruptions(pool({"nodes": "1"}), 0, 0, MONDAY).allowed == 1
    assert allowed_disruptions(pool({"nodes": "10%"}), 0, 0, MONDAY).allowed == 0
    with pytest.raises(ValueError, match="must not be negative"):
        allowed_disruptions(pool({"nodes": "1"}), -1, 0, MONDAY)


def test_a_step_of_int64s_maximum_parses_and_fires_once_an_hour() -> None:
    """robfig ``getRange``: ``*/9223372036854775807`` is a valid step (Atoi's maximum), so
    only the range's start, minute 0, is selected."""
    schedule = parse_cron("*/9223372036854775807 * * * *")
    moment = datetime(2026, 12, 1, 10, 1, tzinfo=UTC)
    assert schedule.next_after(moment) == datetime(2026, 12, 1, 11, 0, tzinfo=UTC)


def test_robfigs_horizon_opens_one_second_before_the_fifth_year_before_the_hit() -> None:
    """``Schedule.Next`` gives up after the year ``start.year + 5`` (``start``: the whole
    second after ``moment``): the next 29 February after 2097 is in 2104 (2100 is no leap
    year), seen from the last second of 2098 on, not a second earlier."""
    leap_day = parse_cron("0 0 29 2 *")
    hit = datetime(2104, 2, 29, tzinfo=UTC)
    opens = robfig_horizon_opens(hit)
    assert opens == datetime(2098, 12, 31, 23, 59, 59, tzinfo=UTC)
    assert leap_day.next_after(opens) == hit
    assert leap_day.next_after(opens - timedelta(seconds=1)) is None


def test_a_threads_croniters_are_built_once_per_expression(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Building a croniter costs about a millisecond and a decision at 50 budgets asks for
    about a hundred cursors: each thread keeps one per expression (until 512 of them)."""
    from lifeboat.karpenter import cron

    built: list[str] = []
    from croniter import croniter as original

    def counting(expression: str, *args: Any, **kwargs: Any) -> Any:
        built.append(expression)
        return original(expression, *args, **kwargs)

    monkeypatch.setattr(cron, "croniter", counting)
    monkeypatch.setattr(cron, "_THREAD_CRONITERS", threading.local())
    moment = datetime(2026, 12, 1, 10, 1, tzinfo=UTC)
    for spec in ("0 9 * * *", "30 17 * * 1-5", "0 9 * * *", "30 17 * * 1-5"):
        parse_cron(spec).cursor().next_after(moment)
    assert len(built) == 2
