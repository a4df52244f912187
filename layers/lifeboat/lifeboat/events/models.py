"""Pydantic types for the messages Lifeboat writes to itself (wake-ups, rotation commands).

AWS's events are read by the hand-written :class:`lifeboat.events.base.Fields` instead:
importing pydantic costs a Spot warning's cold start tens of milliseconds. These types are
loaded with the first wake-up or rotation command, which need pydantic's richer checks
(patterns, bounds, nested models). Failures are reported exactly as the event parsers
report theirs (:func:`describe`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    StringConstraints,
    ValidationError,
)

from lifeboat.events.base import (
    MAX_ID,
    MAX_NAME,
    check_instance_id,
    malformed,
    optional_iso8601,
    parse_iso8601,
    parse_rfc1123,
    quote,
)

Id = Annotated[str, StringConstraints(min_length=1, max_length=MAX_ID)]
"""An identifier from a message (event id, request id, token): bounded, so it can be logged."""

Name = Annotated[str, StringConstraints(min_length=1, max_length=MAX_NAME)]
"""A name or ARN from a message (Auto Scaling group, lifecycle hook): bounded like AWS's."""

InstanceId = Annotated[str, AfterValidator(check_instance_id)]
"""An EC2 instance id: ``i-`` followed by 8 to 17 lowercase hex digits."""

Iso8601 = Annotated[datetime, BeforeValidator(parse_iso8601)]
"""A timezone-aware UTC time read from an ISO 8601 string (never from a number)."""

Rfc1123 = Annotated[datetime, BeforeValidator(parse_rfc1123)]
"""A timezone-aware UTC time read from an RFC 1123 (or ISO 8601) string."""

OptionalIso8601 = Annotated[datetime | None, BeforeValidator(optional_iso8601)]


# --- models ------------------------------------------------------------------------------------


class Model(BaseModel):
    """Base of every message model: strict types, unknown fields ignored, immutable."""

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True, defer_build=True)


M = TypeVar("M", bound=BaseModel)


def validate(model: type[M], data: object, *, path: str, event_id: str | None) -> M:
    """``model`` validated from ``data``; any failure becomes :class:`MalformedMessage`.

    The reason names the first error's location, dotted and prefixed by ``path``.
    """
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise malformed(describe(exc, path), event_id) from None
    except RecursionError:
        raise malformed(f"{path or 'body'}: nested too deeply", event_id) from None


_EXPECTED = {
    "string_type": "a string",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "list_type": "an array",
}
"""Pydantic's type errors, in the vocabulary of JSON."""


def describe(exc: ValidationError, path: str) -> str:
    """``location: what is wrong`` for the first error of ``exc``."""
    error = exc.errors(include_url=False)[0]
    where = ".".join([part for part in [path, *map(str, error["loc"])] if part]) or "body"
    kind = error["type"]
    message = str(error["msg"])
    if kind == "missing":
        what = "field required"
    elif kind in _EXPECTED:
        what = f"expected {_EXPECTED[kind]} (got {quote(error.get('input'))})"
    elif kind in {"value_error", "assertion_error"}:
        what = message.removeprefix("Value error, ").removeprefix("Assertion failed, ")
    else:
        what = f"{message[:1].lower()}{message[1:]} (got {quote(error.get('input'))})"
    return f"{where}: {what}"
