"""Whatever a message claiming to be a rotation command holds, it is parsed or rejected with
a reason (MalformedMessage), never an unhandled exception that would send it, after every
retry, to the dead-letter queue instead of a report naming what is wrong."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lifeboat.events import MAX_REASON, MalformedMessage
from lifeboat.rotation.messages import is_rotation_event
from lifeboat.rotation.request import RotationCommand, parse_command

SAMPLES = [
    json.loads(path.read_text())
    for path in sorted((Path(__file__).resolve().parents[3] / "events" / "rotation").glob("*.json"))
]
values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=30)
    | st.sampled_from(["lifeboat", "Lifeboat Rotation Requested", "ami-0123456789abcdef0"]),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=20), children, max_size=4)
    ),
    max_leaves=12,
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix] if prefix else []
    children = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else []
    )
    for key, child in children:
        found += _paths(child, (*prefix, key))
    return found


@st.composite
def mutated(draw: st.DrawFn) -> dict[str, Any]:
    value: dict[str, Any] = copy.deepcopy(draw(st.sampled_from(SAMPLES)))
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(value)
        path = draw(st.sampled_from(paths))
        parent: Any = value
        for step in path[:-1]:
            parent = parent[step]
        if draw(st.booleans()):
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(values)
    return value


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_a_mutated_command_is_parsed_or_rejected_with_a_reason(message: dict[str, Any]) -> None:
    if not is_rotation_event(message):
        return
    reason = None
    try:
        command = parse_command(message)
    except MalformedMessage as error:
        reason = error.reason
    if reason is not None:
        assert reason and len(reason) <= MAX_REASON
        return
    assert isinstance(command, RotationCommand) and command.name


@settings(max_examples=300, deadline=None)
@given(values)
def test_any_detail_type_or_source_value_is_told_apart(value: Any) -> None:
    for key in ("source", "detail-type"):
        message = copy.deepcopy(SAMPLES[0])
        message[key] = value
        assert is_rotation_event(message) in (True, False)
