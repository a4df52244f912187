"""An event replayed at ``--at`` is handled as if it arrived then: its deadline (a Spot
warning's time plus two minutes, a Health change's startTime days ahead) keeps its offset
from the handling instant, so when an event is replayed changes nothing but the times.

Replayed a week later (same weekday, same hour: the NodePools' cron budget windows are the
same), every decision is the same and every instant a week later. Without the shift the
Health retirement's start would be in the past and its second node would be disrupted at
once, regardless of its pool's budget (decide/notice.py: ``latest`` passed).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from lifeboat_local.arrival import shifted_timestamp
from tests.conftest import CliRun
from tests.support.paths import EVENTS, SAMPLE_CLUSTER

T = "2026-12-01T14:05:00Z"  # just after the samples' own times
A_WEEK_LATER = "2026-12-08T14:05:00Z"
WEEK = timedelta(days=7)
INSTANT = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z")
SAMPLES = sorted(EVENTS.glob("*.json"))


def _a_week_later(record: dict[str, Any]) -> dict[str, Any]:
    """The record with every instant in it (fields and reasons) a week later."""
    text = INSTANT.sub(lambda m: shifted_timestamp(m[0], WEEK), json.dumps(record))
    moved: dict[str, Any] = json.loads(text)
    return moved


def _replay(cli: Callable[..., CliRun], at: str) -> list[dict[str, Any]]:
    run = cli(
        "replay", *SAMPLES, "--cluster", SAMPLE_CLUSTER, "--at", at, "--same-instant", "--json"
    )
    assert run.code == 0, run.err
    return run.records


def test_replayed_a_week_later_every_decision_is_the_same_a_week_later(
    cli: Callable[..., CliRun],
) -> None:
    now, later = _replay(cli, T), _replay(cli, A_WEEK_LATER)
    assert [_a_week_later(r) for r in now] == later
    # The Health retirement's second node still waits for its pool's one slot.
    [second] = [r for r in later if r["instance_id"] == "i-0a1b2c3d4e5f60005"]
    assert second["outcome"] == "deferred"


def test_a_spot_warning_explained_hours_after_its_time_has_its_two_minutes(
    cli: Callable[..., CliRun],
) -> None:
    """spot_interruption: deadline = time + 2 min; judged at 18:00, the instance goes at
    18:02, not "passed 3h56m ago"; explain says the event's times were moved."""
    event = EVENTS / "spot-interruption.json"
    run = cli("explain", event, "--cluster", SAMPLE_CLUSTER, "--at", "2026-12-01T18:00:00Z")
    assert run.code == 0, run.err
    assert "deadline:    2026-12-01T18:02:00Z (in 2m)" in run.out
    assert "passed" not in run.out
    assert "sent 2026-12-01T18:00:00Z (its times moved +3h58m: handled as if sent when" in run.out
    replay = cli("replay", event, "--cluster", SAMPLE_CLUSTER, "--at", "2026-12-01T18:00:00Z")
    assert "instance goes at 2026-12-01T18:02:00Z" in replay.out
