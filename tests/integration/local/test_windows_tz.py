"""``lifeboat windows --tz``: the UTC windows Karpenter evaluates, shown in the operator's
zone with daylight saving time shifts, and a warning where a schedule written for local
business hours moves by an hour twice a year. Deciding stays UTC: the zone changes no
limit, no allowance and nothing of the UTC output."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime

from lifeboat.karpenter.budgets import parse_budgets
from lifeboat_local.localtime import offset_changes, schedule_shift_warning, zone
from tests.conftest import CliRun
from tests.support.paths import EVENTS, SAMPLE_CLUSTER

# Friday before Europe's spring change (Sunday 2027-03-28, 01:00 UTC).
BEFORE_SPRING = "2027-03-26T12:00:00Z"


def test_the_windows_are_shown_in_local_time_across_the_spring_change(
    cli: Callable[..., CliRun],
) -> None:
    argv = ("windows", "--cluster", SAMPLE_CLUSTER, "--at", BEFORE_SPRING, "--days", "4")
    utc = cli(*argv)
    local = cli(*argv, "--tz", "Europe/Madrid")
    assert utc.code == local.code == 0
    assert local.out.startswith(utc.out)  # the UTC answer is unchanged
    shown = local.out[len(utc.out) :]
    # general's freeze "0 9 * * mon-fri" for 8h: 10:00-18:00 CET before, 11:00-19:00 CEST after.
    assert "Fri 2027-03-26 18:00 CET   Mon 2027-03-29 11:00 CEST  2" in shown
    assert "Mon 2027-03-29 11:00 CEST  Mon 2027-03-29 19:00 CEST  0" in shown
    assert (
        'warning: budget[1] "0 9 * * mon-fri" starts at 09:00 UTC, 10:00 CET or 11:00 CEST in '
        "Europe/Madrid (the clocks change on 2027-03-28, 2027-10-31"
    ) in shown


def test_json_has_local_ends_and_the_warning(cli: Callable[..., CliRun]) -> None:
    argv = ("windows", "--cluster", SAMPLE_CLUSTER, "--at", BEFORE_SPRING, "--days", "4")
    plain = json.loads(cli(*argv, "--json").out)
    document = json.loads(cli(*argv, "--json", "--tz", "Europe/Madrid").out)
    assert document["tz"] == "Europe/Madrid"
    general = next(p for p in document["nodepools"] if p["nodepool"] == "general")
    frozen = [row for row in general["timeline"] if row["limit"] == 0]
    assert frozen[1]["start"] == "2027-03-29T09:00:00Z"
    assert frozen[1]["start_local"] == "2027-03-29T11:00:00+02:00"
    assert frozen[0]["end_local"] == "2027-03-26T18:00:00+01:00"
    assert len(general["tz_warnings"]) == 1
    # Without the local fields, the same document: the decision does not move.
    for pool in document["nodepools"]:
        pool.pop("tz_warnings")
        for row in pool["timeline"]:
            del row["start_local"], row["end_local"]
    del document["tz"]
    assert document == plain


def test_a_zone_without_daylight_saving_gets_no_warning() -> None:
    at = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)
    tokyo = zone("Asia/Tokyo")
    assert offset_changes(tokyo, at) == []
    nodepool = {
        "spec": {
            "disruption": {"budgets": [{"nodes": "0", "schedule": "0 9 * * *", "duration": "8h"}]}
        }
    }
    [budget] = parse_budgets(nodepool)
    assert schedule_shift_warning(budget, tokyo, at) is None
    assert schedule_shift_warning(budget, zone("America/New_York"), at) is not None


def test_europe_changes_its_clocks_on_the_last_sundays_of_march_and_october() -> None:
    changes = offset_changes(zone("Europe/Madrid"), datetime(2026, 12, 1, tzinfo=UTC))
    assert changes == [
        datetime(2027, 3, 28, 1, 0, tzinfo=UTC),
        datetime(2027, 10, 31, 1, 0, tzinfo=UTC),
    ]


def test_an_unknown_zone_is_a_usage_error(cli: Callable[..., CliRun]) -> None:
    run = cli("windows", "--cluster", SAMPLE_CLUSTER, "--tz", "Mars/Olympus")
    assert run.code == 1
    assert "--tz Mars/Olympus: not a time zone" in run.err
    assert run.out == ""


def test_explain_shows_its_instants_in_the_zone_and_the_schedule_warning(
    cli: Callable[..., CliRun],
) -> None:
    event = EVENTS / "rebalance-recommendation.json"
    argv = ("explain", event, "--cluster", SAMPLE_CLUSTER, "--at", "2026-12-01T14:05:00Z")
    utc = cli(*argv)
    local = cli(*argv, "--tz", "Europe/Madrid")
    assert utc.code == local.code == 0
    assert "DEFERRED until 2026-12-01T17:00:00Z (Tue 18:00 CET)" in local.out
    assert "window ends 2026-12-01T17:00:00Z (Tue 18:00 CET); limit 0" in local.out
    assert 'Europe/Madrid: warning: budget[1] "0 9 * * mon-fri" starts at 09:00 UTC' in local.out
    # The same decision: only the annotations and the warning differ.
    stripped = re.sub(r" \([A-Z][a-z]{2} \d{2}:\d{2} CET\)", "", local.out)
    kept = [line for line in stripped.splitlines() if "Europe/Madrid" not in line]
    assert kept == utc.out.splitlines()
    [record] = [
        json.loads(line) for line in cli(*argv, "--tz", "Europe/Madrid", "--json").out.splitlines()
    ]
    assert record["tz"] == "Europe/Madrid"
    assert len(record["tz_warnings"]) == 1
