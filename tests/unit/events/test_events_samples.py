"""The sample events parse to what they stand for, and their SQS forms never drift."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from lifeboat.events import Kind, parse_message
from tests.support.paths import EVENTS

RECEIVED = datetime(2026, 12, 1, 15, 0, tzinfo=UTC)

EXPECTED: dict[str, tuple[Kind, list[str | None]]] = {
    "spot-interruption.json": (Kind.SPOT_INTERRUPTION, ["i-0a1b2c3d4e5f60001"]),
    "rebalance-recommendation.json": (Kind.REBALANCE_RECOMMENDATION, ["i-0a1b2c3d4e5f60002"]),
    "state-change.json": (Kind.STATE_CHANGE, ["i-0a1b2c3d4e5f60003"]),
    "scheduled-change.json": (
        Kind.SCHEDULED_CHANGE,
        ["i-0a1b2c3d4e5f60004", "i-0a1b2c3d4e5f60005"],
    ),
    "asg-termination.json": (Kind.ASG_TERMINATION, ["i-0a1b2c3d4e5f60006"]),
    "capacity-reservation-interruption.json": (
        Kind.CAPACITY_RESERVATION_INTERRUPTION,
        ["i-0a1b2c3d4e5f60007"],
    ),
    # A Capacity Block's warning names its reservation, no instance: the pipeline finds them.
    "capacity-block-expiry.json": (Kind.CAPACITY_BLOCK_EXPIRY, [None]),
}
SAMPLES = sorted(path.name for path in EVENTS.glob("*.json"))


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "make_sqs_samples", EVENTS / "make_sqs_samples.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_kind_has_a_sample() -> None:
    assert sorted(EXPECTED) == SAMPLES


@pytest.mark.parametrize("name", SAMPLES)
def test_sample_parses_to_its_kind(name: str) -> None:
    kind, instances = EXPECTED[name]
    notices = parse_message((EVENTS / name).read_text(encoding="utf-8"), received_at=RECEIVED)
    assert [n.kind for n in notices] == [kind] * len(instances)
    assert [n.instance_id for n in notices] == instances
    event = load(EVENTS / name)
    for notice in notices:
        assert notice.ignore_reason is None
        assert notice.event_id == event["id"]
        assert notice.account == "123456789012"
        assert notice.region == "us-east-1"


def test_samples_have_distinct_uuid_ids() -> None:
    ids = [load(EVENTS / name)["id"] for name in SAMPLES]
    assert len(set(ids)) == len(ids)
    for event_id in ids:
        assert len(event_id) == 36
        assert event_id.count("-") == 4


@pytest.mark.parametrize("name", SAMPLES)
def test_sqs_sample_wraps_the_event(name: str) -> None:
    batch = load(EVENTS / "sqs" / name)
    [record] = batch["Records"]
    assert json.loads(record["body"]) == load(EVENTS / name)
    assert record["md5OfBody"] == hashlib.md5(record["body"].encode()).hexdigest()
    assert record["eventSource"] == "aws:sqs"
    assert record["eventSourceARN"] == "arn:aws:sqs:us-east-1:123456789012:lifeboat-interruptions"
    assert record["awsRegion"] == "us-east-1"
    assert set(record["attributes"]) == {
        "ApproximateReceiveCount",
        "SentTimestamp",
        "SenderId",
        "ApproximateFirstReceiveTimestamp",
    }
    assert parse_message(record["body"], received_at=RECEIVED) == parse_message(
        (EVENTS / name).read_text(encoding="utf-8"), received_at=RECEIVED
    )


def test_sqs_samples_match_the_script() -> None:
    expected = script().samples()
    assert sorted(path.name for path in (EVENTS / "sqs").glob("*.json")) == SAMPLES
    for path, text in expected.items():
        assert path.read_text(encoding="utf-8") == text, f"{path.name}: run make_sqs_samples.py"


def test_script_regenerates_identically(tmp_path: Path) -> None:
    module = script()
    for name in SAMPLES:
        (tmp_path / name).write_bytes((EVENTS / name).read_bytes())
    first = module.samples(tmp_path)
    second = module.samples(tmp_path)
    assert first == second
    assert {path.name: text for path, text in first.items()} == {
        name: (EVENTS / "sqs" / name).read_text(encoding="utf-8") for name in SAMPLES
    }


def test_script_check_mode_passes() -> None:
    result = subprocess.run(
        [sys.executable, str(EVENTS / "make_sqs_samples.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("name", "kind", "reason"),
    [
        ("raw/asg-lifecycle-hook.json", Kind.ASG_TERMINATION, None),
        ("raw/asg-test-notification.json", Kind.ASG_TERMINATION, "test notification"),
    ],
)
def test_raw_samples(name: str, kind: Kind, reason: str | None) -> None:
    [notice] = parse_message((EVENTS / name).read_text(encoding="utf-8"), received_at=RECEIVED)
    assert notice.kind is kind
    assert notice.ignore_reason == reason
