"""Whatever the body, parse_message returns notices or raises MalformedMessage, nothing else."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lifeboat.events import MAX_REASON, UNEXPECTED, MalformedMessage, Notice, parse_message
from tests.support.paths import EVENTS

RECEIVED = datetime(2026, 12, 1, 15, 0, tzinfo=UTC)
SAMPLES: list[Any] = [
    json.loads(path.read_text(encoding="utf-8"))
    for path in sorted([*EVENTS.glob("*.json"), *EVENTS.glob("raw/*.json")])
]

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=30)
    | st.sampled_from(
        [
            "i-0a1b2c3d4e5f60001",
            "i-123",
            "2026-12-01T14:02:00Z",
            "9999-12-31T23:59:59Z",
            "0001-01-01T00:00:00Z",
            "Tue, 08 Dec 2026 09:00:00 GMT",
            "Mon, 31 Dec 9999 23:59:59 GMT",
            "EC2",
            "scheduledChange",
            "closed",
            "aws.ec2",
            "aws.health",
            "aws.autoscaling",
            "autoscaling:EC2_INSTANCE_LAUNCHING",
            "autoscaling:TEST_NOTIFICATION",
            "Notification",
            "stopping",
            "",
        ]
    )
)
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=20), children, max_size=5)
    ),
    max_leaves=20,
)


def check(body: Any) -> None:
    reason: str | None = None
    try:
        notices = parse_message(body, received_at=RECEIVED)
    except MalformedMessage as exc:
        reason = exc.reason
    if reason is not None:
        assert reason
        assert len(reason) <= MAX_REASON
        assert not reason.startswith(UNEXPECTED), reason
        return
    assert notices
    for notice in notices:
        assert isinstance(notice, Notice)
        assert notice.event_id
        for moment in (notice.event_time, notice.deadline):
            assert moment is None or moment.utcoffset() == timedelta(0)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, child in value.items():
            found += _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += _paths(child, (*prefix, index))
    return found


@st.composite
def mutated_samples(draw: st.DrawFn) -> Any:
    """A sample event (maybe wrapped in SNS) with a few fields deleted or replaced."""
    value = copy.deepcopy(draw(st.sampled_from(SAMPLES)))
    for _ in range(draw(st.integers(0, 3))):
        paths = _paths(value)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = value
        for step in path[:-1]:
            parent = parent[step]
        if draw(st.booleans()):
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(json_values)
    if draw(st.booleans()):
        value = {"Type": "Notification", "MessageId": "m-1", "Message": json.dumps(value)}
    return value


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_values)
def test_arbitrary_json_values(value: Any) -> None:
    check(json.dumps(value))
    if isinstance(value, dict):
        check(value)


@settings(max_examples=1000, deadline=None)
@given(st.text() | st.binary())
def test_arbitrary_text_and_bytes(body: str | bytes) -> None:
    check(body)


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_samples())
def test_mutated_samples(value: Any) -> None:
    check(json.dumps(value))
    check(value)


@settings(max_examples=1000, deadline=None)
@given(st.sampled_from([json.dumps(sample) for sample in SAMPLES]), st.data())
def test_truncated_and_spliced_text(text: str, data: st.DataObject) -> None:
    cut = data.draw(st.integers(0, len(text)))
    check(text[:cut])
    check(text[:cut] + data.draw(st.text(max_size=10)) + text[cut:])
