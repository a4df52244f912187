"""An event replayed at an instant is handled as if it arrived then: every time it carries
moves with it.

A notice's deadline is counted from the event's own times (a Spot warning's is its ``time``
plus two minutes, a Health change's its ``startTime``, a lifecycle hook's its ``Time`` plus
the heartbeat timeout). Handled hours after its ``time``, an event unshifted would be judged
past its deadline ("instance goes at 14:04", judged at 18:00), which no real delivery ever
sees: SQS hands a message over seconds after it is sent. So each file is shifted by the gap
between the instant it is handled at and its own time (its earliest message's, for a batch):
every timestamp in its messages moves by that gap, so the deadline, a maintenance window's
start and end, a capacity reservation's termination time keep their offsets from the
handling instant, and the messages of one batch keep theirs from one another. In a timeline
every file moves by the same gap, so the events keep their offsets from one another too.

Timestamps are the two forms AWS events use (``lifeboat.events.base``): ISO 8601
(``2026-12-01T14:02:00Z``, EventBridge's ``time``) and RFC 1123 (``Tue, 08 Dec 2026 09:00:00
GMT``, AWS Health's), each written back in its own form. A body that is not JSON is left as
it is: the parser rejects it, naming what is wrong.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from datetime import datetime, timedelta
from email.utils import format_datetime, parsedate_to_datetime
from typing import Any

from lifeboat_local.common import EventFile
from lifeboat_local.event_times import file_time

_ISO = re.compile(
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?P<fraction>\.\d+)?(?P<zone>Z|[+-]\d{2}:\d{2})?"
)
_RFC1123 = re.compile(r"[A-Z][a-z]{2}, \d{1,2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT")
_TIMESPEC = {0: "seconds", 3: "milliseconds", 6: "microseconds"}


def arriving_at(when: datetime, file: EventFile) -> tuple[EventFile, timedelta]:
    """``file`` as if it arrived at ``when``, and the shift applied (zero for a file whose
    messages carry no time)."""
    sent = file_time(file)
    if sent is None or sent == when:
        return file, timedelta(0)
    delta = when - sent
    return replace(file, bodies=[shifted_body(body, delta) for body in file.bodies]), delta


def shifted_body(body: str, delta: timedelta) -> str:
    """The message with every timestamp in it moved by ``delta``."""
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return body
    return json.dumps(_shifted(message, delta))


def _shifted(value: Any, delta: timedelta) -> Any:
    if isinstance(value, dict):
        return {key: _shifted(item, delta) for key, item in value.items()}
    if isinstance(value, list):
        return [_shifted(item, delta) for item in value]
    if isinstance(value, str):
        return shifted_timestamp(value, delta)
    return value


def shifted_timestamp(text: str, delta: timedelta) -> str:
    """``text`` moved by ``delta`` if it is a timestamp, in its own form; else ``text``."""
    iso = _ISO.fullmatch(text)
    if iso is not None:
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            return text  # not a real instant (month 13): the parser says so
        digits = len(iso["fraction"]) - 1 if iso["fraction"] else 0
        written = (moment + delta).isoformat(timespec=_TIMESPEC.get(digits, "microseconds"))
        return written.replace("+00:00", "Z") if iso["zone"] == "Z" else written
    if _RFC1123.fullmatch(text):
        try:
            moment = parsedate_to_datetime(text)
        except (TypeError, ValueError):
            return text
        return format_datetime(moment + delta, usegmt=True)
    return text


def shift_text(delta: timedelta) -> str:
    """``+3h58m``, ``-1m30s``: a shift for a person."""
    sign = "-" if delta < timedelta(0) else "+"
    seconds = int(abs(delta).total_seconds())
    days, seconds = divmod(seconds, 86400)
    hours, seconds = divmod(seconds, 3600)
    minutes, seconds = divmod(seconds, 60)
    parts = [(days, "d"), (hours, "h"), (minutes, "m"), (seconds, "s")]
    return sign + ("".join(f"{n}{unit}" for n, unit in parts if n) or "0s")
