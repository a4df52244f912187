"""When each event file of a replay is handled: a replay is a timeline.

The first event is handled at ``--at``, every later one at its offset from the first event's
own ``time`` (a pause sent 25 minutes after a rotation request is handled 25 minutes after
``--at``), in time order, files in the order given where times tie. A file whose messages
carry no time (a message body that is not JSON, a hook message without ``Time``) goes with
the file given before it. ``--same-instant`` (or a single file) handles every file at
``--at``: "what if all of these arrived now".
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime

from lifeboat_local.common import EventFile

# Where an event's own time is: EventBridge's envelope, an Auto Scaling hook message.
TIME_FIELDS = ("time", "Time")


def body_time(body: str) -> datetime | None:
    """The instant a message says it was sent, or None when it says none (readably)."""
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict):
        return None
    answered = _answer_date(message)
    if answered is not None:
        return answered
    for field in TIME_FIELDS:
        text = message.get(field)
        if isinstance(text, str):
            try:
                moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
            except ValueError:
                return None  # the parser rejects it, naming the field
            return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment
    return None


def _answer_date(message: dict[str, object]) -> datetime | None:
    """When EC2 sent a saved DescribeInstanceStatus answer (the ``date`` header boto3 keeps
    in ``ResponseMetadata``, of its first page): a timeline of saved answers is the sweeps'."""
    from email.utils import parsedate_to_datetime

    pages = message.get("Pages")
    first = pages[0] if isinstance(pages, list) and pages else message
    if not isinstance(first, dict) or "InstanceStatuses" not in first:
        return None
    meta = first.get("ResponseMetadata")
    headers = meta.get("HTTPHeaders") if isinstance(meta, dict) else None
    date = headers.get("date") if isinstance(headers, dict) else None
    if not isinstance(date, str):
        return None
    try:
        moment = parsedate_to_datetime(date)
    except (ValueError, TypeError, IndexError, OverflowError):
        return None  # the sweep's reader rejects it, naming the field
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def file_time(file: EventFile) -> datetime | None:
    """The earliest time of the file's messages (an SQS batch is handled as one)."""
    times = [t for t in map(body_time, file.bodies) if t is not None]
    return min(times, default=None)


def schedule(
    files: Sequence[EventFile], at: datetime, *, same_instant: bool = False
) -> list[tuple[datetime, EventFile]]:
    """(instant it is handled at, file), in the order they are handled."""
    times = [file_time(f) for f in files]
    known = [t for t in times if t is not None]
    if same_instant or len(files) < 2 or not known:
        return [(at, f) for f in files]
    first = min(known)
    resolved: list[datetime] = []
    previous = first
    for moment in times:
        previous = moment if moment is not None else previous
        resolved.append(previous)
    order = sorted(range(len(files)), key=lambda i: (resolved[i], i))
    return [(at + (resolved[i] - first), files[i]) for i in order]
