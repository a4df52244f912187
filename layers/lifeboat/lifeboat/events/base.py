"""What every event parser shares: field types, time parsing and error reporting.

Every failure is reported as :class:`~lifeboat.events.notice.MalformedMessage` whose reason
starts with the dotted path of the offending field (``detail.instance-id: field required``)
and is never longer than :data:`MAX_REASON`, whatever the size of the input.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Annotated, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    StringConstraints,
    ValidationError,
)

from lifeboat.events.notice import MalformedMessage
from lifeboat.instants import as_utc

MAX_REASON = 300
"""Longest reason a :class:`MalformedMessage` carries (a 10 MB body must not reach a log line)."""

_MAX_VALUE = 60
MAX_ID = 256
# \Z, not $: "$" also matches before a trailing newline, and "i-0a1b2c3d\n" is no id.
INSTANCE_ID_RE = re.compile(r"\Ai-[0-9a-f]{8,17}\Z")
# The instants a message may name. AWS sends nothing outside them, and the arithmetic done
# on a notice (deadlines, patience, windows weeks ahead) stays far inside what a datetime
# can hold (year 9999): a time outside is rejected here, not an OverflowError later.
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(9000, 1, 1, tzinfo=UTC)


def quote(value: object) -> str:
    """A short, log-safe rendering of a value taken from a message."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):  # not JSON, too deep, too many digits
        text = f"<{type(value).__name__}>"
    if len(text) > _MAX_VALUE:
        text = text[: _MAX_VALUE - 1] + "…"
    return text


def clip(text: str, limit: int = _MAX_VALUE) -> str:
    """``text`` cut to ``limit`` characters (values from messages end up in reasons and logs)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def malformed(reason: str, event_id: str | None = None) -> MalformedMessage:
    """A :class:`MalformedMessage` with ``reason`` cut to :data:`MAX_REASON` characters."""
    event_id = known_id(event_id)
    if len(reason) > MAX_REASON:
        reason = reason[: MAX_REASON - 1] + "…"
    return MalformedMessage(reason, event_id=event_id)


def known_id(value: object) -> str | None:
    """``value`` if it can serve as the event id of a rejected message, else ``None``."""
    return value if isinstance(value, str) and 0 < len(value) <= MAX_ID else None


def join_path(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


# --- times -------------------------------------------------------------------------------------


def in_range(moment: datetime, value: object) -> datetime:
    """``moment`` if it lies between :data:`EARLIEST` and :data:`LATEST`."""
    if not EARLIEST <= moment < LATEST:
        raise ValueError(
            f"out of range (before {EARLIEST.year} or from {LATEST.year} on): {quote(value)}"
        )
    return moment


def parse_iso8601(value: object) -> datetime:
    """An ISO 8601 timestamp (``2026-12-01T14:02:00Z``) as aware UTC."""
    if not isinstance(value, str):
        raise ValueError(f"expected an ISO 8601 time string (got {quote(value)})")
    try:
        moment = as_utc(datetime.fromisoformat(value))
    except (ValueError, OverflowError):
        raise ValueError(f"not an ISO 8601 time: {quote(value)}") from None
    return in_range(moment, value)


def parse_rfc1123(value: object) -> datetime:
    """An RFC 1123 date (``Wed, 02 Dec 2026 12:00:00 GMT``), or ISO 8601 defensively."""
    if not isinstance(value, str):
        raise ValueError(f"expected an RFC 1123 date string (got {quote(value)})")
    try:
        moment = as_utc(parsedate_to_datetime(value))
    except (ValueError, TypeError, IndexError, OverflowError):
        try:
            moment = as_utc(datetime.fromisoformat(value))
        except (ValueError, OverflowError):
            raise ValueError(f"not an RFC 1123 date: {quote(value)}") from None
    return in_range(moment, value)


def shift(when: datetime, delta: timedelta, *, field: str, event_id: str | None) -> datetime:
    """``when + delta``, reporting an out-of-range result as malformed input."""
    try:
        return when + delta
    except OverflowError:
        raise malformed(f"{field}: {when.isoformat()} is out of range", event_id) from None


def _check_instance_id(value: str) -> str:
    if not INSTANCE_ID_RE.match(value):
        raise ValueError(f"not an EC2 instance id (i- and 8 to 17 hex digits): {quote(value)}")
    return value


Id = Annotated[str, StringConstraints(min_length=1, max_length=MAX_ID)]
"""An identifier from a message (event id, request id, token): bounded, so it can be logged."""

Name = Annotated[str, StringConstraints(min_length=1, max_length=1600)]
"""A name or ARN from a message (Auto Scaling group, lifecycle hook): bounded like AWS's."""

InstanceId = Annotated[str, AfterValidator(_check_instance_id)]
"""An EC2 instance id: ``i-`` followed by 8 to 17 lowercase hex digits."""

Iso8601 = Annotated[datetime, BeforeValidator(parse_iso8601)]
"""A timezone-aware UTC time read from an ISO 8601 string (never from a number)."""

Rfc1123 = Annotated[datetime, BeforeValidator(parse_rfc1123)]
"""A timezone-aware UTC time read from an RFC 1123 (or ISO 8601) string."""

OptionalIso8601 = Annotated[
    datetime | None, BeforeValidator(lambda v: None if v is None else parse_iso8601(v))
]


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
