"""What every event parser shares: reading fields strictly, time parsing, error reporting.

Every failure is reported as :class:`~lifeboat.model.notice.MalformedMessage` whose reason
starts with the dotted path of the offending field (``detail.instance-id: field required``)
and is never longer than :data:`MAX_REASON`, whatever the size of the input.

AWS's events are read with :class:`Fields`, not pydantic: a Spot warning is the message
that cannot wait, and importing pydantic alone costs its cold start tens of milliseconds
(about a tenth of the start-up of a function that only makes its EC2 and DynamoDB clients).
:class:`Fields` applies the rules the parsers' pydantic models did (strict JSON types, no
coercion, unknown fields ignored, the first failing field in declaration order reported)
with the same wording (``lifeboat.events.models.describe``), which the tests pin. The
messages Lifeboat writes to itself (wake-ups, rotation commands) keep pydantic
(``lifeboat.events.models``), loaded with the first of them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any, NoReturn, Self, TypeVar

from lifeboat.model.instants import as_utc
from lifeboat.model.notice import MalformedMessage

MAX_REASON = 300
"""Longest reason a :class:`MalformedMessage` carries (a 10 MB body must not reach a log line)."""

_MAX_VALUE = 60
MAX_ID = 256
MAX_NAME = 1600
# \Z, not $: "$" also matches before a trailing newline, and "i-0a1b2c3d\n" is no id.
INSTANCE_ID_RE = re.compile(r"\Ai-[0-9a-f]{8,17}\Z")
# A Capacity Reservation (a Capacity Block is one): cr- and 17 hex digits (8 in old ids).
RESERVATION_ID_RE = re.compile(r"\Acr-[0-9a-f]{8,17}\Z")
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


def parse_time(value: object) -> datetime:
    """A time as boto3 gives it (``datetime``) or as a file holds it (ISO 8601): EC2's
    answers read by the sweep (instance statuses, capacity reservations)."""
    if isinstance(value, datetime):
        return in_range(as_utc(value), value)
    if not isinstance(value, str):
        raise ValueError(f"expected a time (got {quote(value)})")
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


def check_instance_id(value: str) -> str:
    if not INSTANCE_ID_RE.match(value):
        raise ValueError(f"not an EC2 instance id (i- and 8 to 17 hex digits): {quote(value)}")
    return value


def check_reservation_id(value: str) -> str:
    if not RESERVATION_ID_RE.match(value):
        raise ValueError(
            f"not an EC2 capacity reservation id (cr- and 8 to 17 hex digits): {quote(value)}"
        )
    return value


def optional_iso8601(value: object) -> datetime | None:
    return None if value is None else parse_iso8601(value)


# --- reading a JSON object ---------------------------------------------------------------------


class _Missing:
    """The default of a required field."""


REQUIRED: Any = _Missing()
T = TypeVar("T")

_JSON_NAMES: dict[type, str] = {dict: "an object", list: "an array", str: "a string"}


def _characters(count: int) -> str:
    return f"{count} character{'' if count == 1 else 's'}"


def allowed(values: tuple[str, ...]) -> str:
    """``'a', 'b' or 'c'``: the values a literal field accepts, as pydantic lists them."""
    quoted = [f"'{value}'" for value in values]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


class FieldAccess:
    """One JSON object's fields found and checked: a field missing, of the wrong JSON type or
    refused by a check fails as :class:`MalformedMessage` naming it by its dotted path. The
    readers are :class:`JsonFields` (JSON's kinds) and :class:`Fields` (AWS's identifiers)."""

    def __init__(self, data: object, *, path: str, event_id: str | None) -> None:
        self.path = path
        self.event_id = event_id
        if not isinstance(data, dict):
            self._fail(path, f"expected an object (got {quote(data)})")
        self.data: dict[str, Any] = data

    def _fail(self, where: str, what: str) -> NoReturn:
        raise malformed(f"{where or 'body'}: {what}", self.event_id)

    def _raw(self, name: str, default: Any) -> Any:
        if name in self.data:
            return self.data[name]
        if default is REQUIRED:
            self._fail(join_path(self.path, name), "field required")
        return default

    def _typed(self, name: str, kind: type[T], default: Any) -> T | Any:
        value = self._raw(name, default)
        if name not in self.data or (value is None and default is None):
            return value
        if not isinstance(value, kind):
            where = join_path(self.path, name)
            self._fail(where, f"expected {_JSON_NAMES[kind]} (got {quote(value)})")
        return value

    def _checked(self, name: str, check: Any, value: object) -> Any:
        try:
            return check(value)
        except ValueError as error:
            self._fail(join_path(self.path, name), str(error))


class JsonFields(FieldAccess):
    """The readers of JSON's kinds of field: a string (its length bounded), one of some
    literal strings, a time, a nested object, an array (of strings, of objects)."""

    def string(
        self, name: str, default: Any = REQUIRED, *, min_length: int = 0, max_length: int = 0
    ) -> Any:
        value = self._typed(name, str, default)
        if not isinstance(value, str) or name not in self.data:
            return value
        where = join_path(self.path, name)
        if len(value) < min_length:
            self._fail(
                where, f"string should have at least {_characters(min_length)} (got {quote(value)})"
            )
        if max_length and len(value) > max_length:
            self._fail(
                where, f"string should have at most {_characters(max_length)} (got {quote(value)})"
            )
        return value

    def literal(self, name: str, values: tuple[str, ...], default: Any = REQUIRED) -> Any:
        value = self._raw(name, default)
        if name in self.data and not (isinstance(value, str) and value in values):
            where = join_path(self.path, name)
            self._fail(where, f"input should be {allowed(values)} (got {quote(value)})")
        return value

    def time(self, name: str, parse: Any = parse_iso8601, default: Any = REQUIRED) -> Any:
        """A time read by ``parse`` (:func:`parse_iso8601`, :func:`parse_rfc1123`) from the
        raw value; with ``default=None``, ``null`` is no time."""
        value = self._raw(name, default)
        if name not in self.data or (value is None and default is None):
            return value
        return self._checked(name, parse, value)

    def mapping(self, name: str) -> dict[str, Any]:
        """A nested object, kept as it is (read later, by a kind's parser)."""
        value: dict[str, Any] = self._typed(name, dict, REQUIRED)
        return value

    def array(self, name: str, default: Any = REQUIRED) -> list[Any]:
        value: list[Any] = self._typed(name, list, default)
        return value

    def strings(self, name: str, default: Any = REQUIRED) -> list[str]:
        """An array of strings."""
        values = self.array(name, default)
        where = join_path(self.path, name)
        for index, value in enumerate(values):
            if not isinstance(value, str):
                self._fail(f"{where}.{index}", f"expected a string (got {quote(value)})")
        return values

    def objects(self, name: str) -> Iterator[Self]:
        """An array of objects, each read with its own reader of this class as it is reached
        (so an earlier item's bad field is reported before a later item's)."""
        items = self.array(name)
        where = join_path(self.path, name)
        return (
            type(self)(item, path=f"{where}.{index}", event_id=self.event_id)
            for index, item in enumerate(items)
        )


class Fields(JsonFields):
    """The fields of one JSON object, each read with its type and checked, strictly.

    Each reader takes the field's name as it appears in the message and ``default`` (omit it
    for a required field); a failure raises :class:`MalformedMessage` naming the field by
    its dotted path. Call the readers in the order the fields are declared: the first failure
    is the one reported. ``None`` is accepted only where ``default`` is ``None``.

    JSON's kinds are read as :class:`JsonFields` reads them; this class adds AWS's
    identifiers: ids and names bounded as AWS bounds them, EC2 instance and capacity
    reservation ids.
    """

    def identifier(self, name: str, default: Any = REQUIRED) -> Any:
        """An id from a message (event id, request id, token): bounded, so it can be logged."""
        return self.string(name, default, min_length=1, max_length=MAX_ID)

    def name(self, name: str, default: Any = REQUIRED) -> Any:
        """A name or ARN from a message (Auto Scaling group, lifecycle hook), bounded like AWS's."""
        return self.string(name, default, min_length=1, max_length=MAX_NAME)

    def instance_id(self, name: str) -> str:
        """An EC2 instance id: ``i-`` followed by 8 to 17 lowercase hex digits."""
        value: str = self._checked(name, check_instance_id, self.string(name))
        return value

    def reservation_id(self, name: str) -> str:
        """An EC2 capacity reservation id: ``cr-`` followed by 8 to 17 lowercase hex digits."""
        value: str = self._checked(name, check_reservation_id, self.string(name))
        return value
