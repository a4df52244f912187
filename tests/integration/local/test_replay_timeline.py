"""A replay is a timeline: each event file is handled at its offset from the first event's
``time`` (``--at`` is when the first is handled), Lifeboat's wake-ups and the simulated
Karpenter running in between; ``--same-instant`` handles all at ``--at``. And a replay
continued from another's ``--state-out`` keeps everything the first one made."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from kubemu import load_cluster_file
from lifeboat_local.common import EventFile
from lifeboat_local.event_times import schedule
from tests.conftest import CliRun
from tests.support.paths import EVENTS, SAMPLE_CLUSTER

ROTATION = EVENTS / "rotation"
T = "2026-12-01T14:05:00Z"  # the rotation request's own time, and --at
START = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)


def _at(record: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(record["at"].replace("Z", "+00:00"))


def _copy(source: Path, target: Path, **changes: Any) -> Path:
    event = json.loads(source.read_text())
    event.update(changes)
    target.write_text(json.dumps(event))
    return target


def _records(run: CliRun) -> list[dict[str, Any]]:
    assert run.code == 0, run.err
    return [json.loads(line) for line in run.out.splitlines()]


def _starts(records: list[dict[str, Any]]) -> list[tuple[datetime, str]]:
    """When each node of the rotation was started (cordoned), and which."""
    return [
        (_at(r), r["node"])
        for r in records
        if r["kind"] == "rotation" and any(a["type"] == "cordon" for a in r["actions"])
    ]


def test_a_pause_at_40_s_and_a_resume_at_25_min_leave_nothing_started_between(
    cli: Callable[..., CliRun], tmp_path: Path
) -> None:
    pause_at, resume_at = START + timedelta(seconds=40), START + timedelta(minutes=25)
    pause = _copy(ROTATION / "pause.json", tmp_path / "pause.json", time="2026-12-01T14:05:40Z")
    resume = _copy(ROTATION / "resume.json", tmp_path / "resume.json", time="2026-12-01T14:30:00Z")
    # Given out of order: the timeline orders them by their time.
    argv = (resume, ROTATION / "legacy-to-karpenter.json", pause, "--cluster", SAMPLE_CLUSTER)
    records = _records(cli("replay", *argv, "--at", T, "--follow", "--json"))
    by_reason = {r["reason"].split(": ", 1)[-1]: _at(r) for r in records if r["node"] is None}
    assert by_reason["paused: no further node is started; nodes out of service finish"] == (
        pause_at
    )
    assert by_reason["resumed"] == resume_at
    starts = _starts(records)
    assert [at for at, _ in starts if pause_at < at < resume_at] == []
    assert starts[0][0] == START  # the first node, before the pause
    assert starts[1][0] == resume_at  # the next one once resumed, not before
    assert len(starts) == 3
    assert records[-1]["reason"].endswith("completed: 3 of 3 node(s) rotated")


def test_same_instant_handles_every_event_at_at(cli: Callable[..., CliRun], tmp_path: Path) -> None:
    pause = _copy(ROTATION / "pause.json", tmp_path / "pause.json", time="2026-12-01T14:05:40Z")
    request = ROTATION / "legacy-to-karpenter.json"
    argv = (request, pause, "--cluster", SAMPLE_CLUSTER, "--at", T, "--json", "--same-instant")
    records = _records(cli("replay", *argv))
    assert all("at" not in r for r in records)  # one instant: none to tell apart
    # Paused at once, in the same instant: only the first node was started.
    assert len([r for r in records if any(a["type"] == "cordon" for a in r["actions"])]) == 1


def _pods_per_owner(path: Path) -> Counter[str]:
    return Counter(
        owner["name"]
        for obj in load_cluster_file(path)
        if obj["kind"] == "Pod" and not obj["metadata"].get("deletionTimestamp")
        for owner in obj["metadata"].get("ownerReferences") or []
        if owner["kind"] == "ReplicaSet"
    )


def test_chained_replays_keep_every_pod(cli: Callable[..., CliRun], tmp_path: Path) -> None:
    """The simulation's generated pod names (generateName) continue across a --state-out /
    --cluster chain: the second replay's recreated checkout pod does not overwrite the one
    the first replay recreated."""
    spot = EVENTS / "spot-interruption.json"  # ip-10-0-1-11: evicts checkout-...-jx2lp
    first_state, second_state = tmp_path / "first.yaml", tmp_path / "second.yaml"
    stop = EVENTS / "state-change.json"
    detail = json.loads(stop.read_text())["detail"]
    other = _copy(  # ip-10-0-2-19: evicts checkout-...-n4wzr
        stop,
        tmp_path / "stop.json",
        id="state-change-0009",
        resources=["arn:aws:ec2:us-east-1c:instance/i-0a1b2c3d4e5f60009"],
        detail={**detail, "instance-id": "i-0a1b2c3d4e5f60009"},
    )
    before = _pods_per_owner(SAMPLE_CLUSTER)
    common = ("--at", T, "--follow", "--json")
    _records(cli("replay", spot, "--cluster", SAMPLE_CLUSTER, *common, "--state-out", first_state))
    assert _pods_per_owner(first_state) == before
    _records(cli("replay", other, "--cluster", first_state, *common, "--state-out", second_state))
    assert _pods_per_owner(second_state) == before
    names = [
        (o["metadata"].get("namespace"), o["metadata"]["name"])
        for o in load_cluster_file(second_state)
        if o["kind"] == "Pod"
    ]
    assert len(names) == len(set(names))


def _file(name: str, *times: str | None) -> EventFile:
    bodies = [json.dumps({"time": t} if t else {"detail": {}}) for t in times]
    return EventFile(Path(name), bodies, batch=len(bodies) > 1)


def test_schedule_orders_by_time_keeps_ties_in_order_and_offsets_from_the_first() -> None:
    files = [
        _file("late", "2026-12-01T14:30:00Z"),
        _file("first", "2026-12-01T14:05:00Z"),
        _file("tie", "2026-12-01T14:30:00Z"),
        _file("batch", "2026-12-01T14:10:00Z", "2026-12-01T14:06:00Z"),
    ]
    at = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)
    planned = [(when - at, file.path.name) for when, file in schedule(files, at)]
    assert planned == [
        (timedelta(0), "first"),
        (timedelta(minutes=1), "batch"),  # an SQS batch at its earliest record
        (timedelta(minutes=25), "late"),
        (timedelta(minutes=25), "tie"),
    ]


def test_schedule_a_file_without_time_goes_with_the_one_before_and_one_file_is_at_at() -> None:
    at = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)
    files = [_file("a", "2026-12-01T14:05:00Z"), _file("b", "2026-12-01T14:07:00Z"), _file("c")]
    assert [when - at for when, _ in schedule(files, at)] == [
        timedelta(0),
        timedelta(minutes=2),
        timedelta(minutes=2),
    ]
    assert [when for when, _ in schedule(files, at, same_instant=True)] == [at] * 3
    assert [when for when, _ in schedule(files[1:2], at)] == [at]
