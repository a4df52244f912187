"""An event replayed at an instant is handled as if it arrived then: every timestamp in its
messages moves by the gap between that instant and its own time, in its own form."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from lifeboat.events import parse_message
from lifeboat_local.arrival import arriving_at, shift_text, shifted_timestamp
from lifeboat_local.common import EventFile, read_event_file
from tests.support.paths import EVENTS

HOURS = timedelta(hours=3, minutes=58)


@pytest.mark.parametrize(
    ("text", "moved"),
    [
        ("2026-12-01T14:02:00Z", "2026-12-01T18:00:00Z"),  # EventBridge's time
        ("2026-12-01T14:04:00.418Z", "2026-12-01T18:02:00.418Z"),  # a hook message's Time
        ("2026-12-01T14:02:00+01:00", "2026-12-01T18:00:00+01:00"),
        ("Tue, 08 Dec 2026 09:00:00 GMT", "Tue, 08 Dec 2026 12:58:00 GMT"),  # AWS Health's
        ("i-0a1b2c3d4e5f60001", "i-0a1b2c3d4e5f60001"),
        ("2026-13-01T14:02:00Z", "2026-13-01T14:02:00Z"),  # not an instant: the parser says so
        ("2026-12-01", "2026-12-01"),  # a date is no instant of an event
    ],
)
def test_timestamps_move_in_their_own_form(text: str, moved: str) -> None:
    assert shifted_timestamp(text, HOURS) == moved


def test_a_spot_warning_handled_hours_later_keeps_its_two_minutes() -> None:
    """spot_interruption: the deadline is the event's time plus two minutes."""
    at = datetime(2026, 12, 1, 18, 0, tzinfo=UTC)
    file, shift = arriving_at(at, read_event_file(EVENTS / "spot-interruption.json"))
    assert shift == HOURS
    [notice] = parse_message(file.bodies[0], received_at=at)
    assert notice.deadline == at + timedelta(minutes=2)


def test_a_health_change_keeps_its_days_of_notice() -> None:
    """scheduled_change: the deadline is detail.startTime (RFC 1123), days after the event."""
    source = read_event_file(EVENTS / "scheduled-change.json")
    [before, *_] = parse_message(source.bodies[0], received_at=datetime.now(UTC))
    at = datetime(2027, 3, 1, 12, 0, tzinfo=UTC)
    file, shift = arriving_at(at, source)
    [after, *_] = parse_message(file.bodies[0], received_at=at)
    assert before.deadline is not None and after.deadline is not None
    assert after.deadline - at == before.deadline - (at - shift)
    assert after.deadline == before.deadline + shift


def test_a_batch_keeps_its_messages_offsets_and_moves_from_its_earliest(tmp_path: Path) -> None:
    bodies = [
        json.dumps({"time": "2026-12-01T14:02:00Z", "detail": {}}),
        json.dumps({"time": "2026-12-01T14:03:30Z", "detail": {}}),
        "not json",
    ]
    at = datetime(2026, 12, 1, 15, 0, tzinfo=UTC)
    file, shift = arriving_at(at, EventFile(tmp_path / "b.json", bodies, batch=True))
    assert shift == timedelta(minutes=58)
    assert [json.loads(b)["time"] for b in file.bodies[:2]] == [
        "2026-12-01T15:00:00Z",
        "2026-12-01T15:01:30Z",
    ]
    assert file.bodies[2] == "not json"


def test_a_file_handled_at_its_own_time_or_without_one_is_unchanged(tmp_path: Path) -> None:
    source = read_event_file(EVENTS / "spot-interruption.json")
    at = datetime(2026, 12, 1, 14, 2, tzinfo=UTC)
    assert arriving_at(at, source) == (source, timedelta(0))
    timeless = EventFile(tmp_path / "x", ["not json"])
    assert arriving_at(at, timeless) == (timeless, timedelta(0))


def test_what_is_said_of_the_shift() -> None:
    assert shift_text(HOURS) == "+3h58m"
    assert shift_text(-timedelta(days=1, seconds=30)) == "-1d30s"
