"""``lifeboat.flow.split``: a notice naming many instances becomes one message's worth and
remainders, and a remainder on the wire is validated as strictly as an AWS event."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from lifeboat.aws.scheduler import schedule_name
from lifeboat.events.notice import Kind, MalformedMessage
from lifeboat.flow.split import NOTICES_PER_MESSAGE, expand, remainders, split
from lifeboat.wakeup.codec import MAX_REMAINDER, Task, Wakeup, decode, encode
from tests.support.events import LIFECYCLE_HOOK, SAMPLE_TIME, notice

DEADLINE = SAMPLE_TIME + timedelta(days=7)


def _instances(count: int) -> list[str]:
    return [f"i-{index:017x}" for index in range(1, count + 1)]


def _health(count: int, event_id: str = "health-1") -> list[Any]:
    return [
        notice(Kind.SCHEDULED_CHANGE, instance=i, event_id=event_id, deadline=DEADLINE)
        for i in _instances(count)
    ]


def test_the_wire_bound_is_the_split_size() -> None:
    assert MAX_REMAINDER == NOTICES_PER_MESSAGE


def test_a_large_notice_keeps_its_first_instances_and_hands_on_the_rest_in_order() -> None:
    notices = _health(123)
    now, later = split(notices, 50)
    assert now == notices[:50]
    assert [len(w.instances) for w in later] == [50, 23]
    assert [n for w in later for n in expand(w)] == notices[50:]
    # Each remainder carries the event (its id, deadline, account) and no instance of its own.
    assert {w.notice for w in later} == {replace(notices[0], instance_id=None)}
    assert {w.due for w in later} == {notices[0].event_time}


def test_a_limit_above_the_wire_bound_is_held_to_it() -> None:
    _now, later = split(_health(3 * NOTICES_PER_MESSAGE), 10 * NOTICES_PER_MESSAGE)
    assert [len(w.instances) for w in later] == [NOTICES_PER_MESSAGE, NOTICES_PER_MESSAGE]


def test_remainders_are_named_from_the_event_and_their_instances_never_the_clock() -> None:
    """Handled twice (a redelivered original), the same remainders under the same
    schedule names; two events, or two chunks of one, never share a name."""
    first = [schedule_name(w) for w in split(_health(160), 50)[1]]
    again = [schedule_name(w) for w in split(_health(160), 50)[1]]
    other = [schedule_name(w) for w in split(_health(160, "health-2"), 50)[1]]
    assert first == again
    assert len(set(first)) == 3 and not set(first) & set(other)


def test_a_remainder_round_trips_through_its_wire_form() -> None:
    [wakeup] = remainders(_health(7))
    assert decode(json.loads(encode(wakeup))) == wakeup


def _wire(**changes: Any) -> dict[str, Any]:
    [wakeup] = remainders(_health(3))
    body: dict[str, Any] = json.loads(encode(wakeup))
    for name, value in changes.items():
        if name.startswith("notice_"):
            body["notice"][name.removeprefix("notice_")] = value
        else:
            body[name] = value
    return body


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"instances": _instances(MAX_REMAINDER + 1)}, "lifeboat-wakeup.instances"),
        ({"instances": []}, "instances: a remainder names at least one instance"),
        ({"instances": ["i-00000001", "i-00000001"]}, "an instance is named twice"),
        ({"instances": ["i-0123456789abcdef0\n"]}, "lifeboat-wakeup.instances"),
        ({"instances": [12345]}, "lifeboat-wakeup.instances"),
        ({"notice_instance_id": "i-0123456789abcdef0"}, "notice.instance_id"),
        ({"notice_kind": "rotation"}, "is never split"),
        ({"notice_ignore_reason": "x"}, "no lifecycle hook and no ignore_reason"),
        ({"cluster": "other"}, "names no replacement"),
    ],
)
def test_a_malformed_remainder_is_rejected_naming_the_field(
    changes: dict[str, Any], reason: str
) -> None:
    with pytest.raises(MalformedMessage) as raised:
        decode(_wire(**changes))
    assert reason in raised.value.reason


def test_a_remainder_may_not_carry_a_lifecycle_hook() -> None:
    hook = {
        "auto_scaling_group": LIFECYCLE_HOOK.auto_scaling_group,
        "hook_name": LIFECYCLE_HOOK.hook_name,
        "action_token": LIFECYCLE_HOOK.action_token,
        "instance_id": LIFECYCLE_HOOK.instance_id,
    }
    with pytest.raises(MalformedMessage, match="lifecycle"):
        decode(_wire(notice_lifecycle=hook))


def test_only_a_remainder_names_instances() -> None:
    wakeup = Wakeup(Task.DECIDE, _health(1)[0], SAMPLE_TIME)
    body = json.loads(encode(wakeup))
    body["instances"] = _instances(2)
    with pytest.raises(MalformedMessage, match="only a remainder names instances"):
        decode(body)
