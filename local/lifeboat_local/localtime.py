"""Budget windows in the operator's time zone (``--tz Europe/Madrid``), for reading only.

Karpenter evaluates a budget's ``schedule`` in UTC (its cron has no zone; kubernetes-sigs/
karpenter issues #1446 and #3074 ask for one), and Lifeboat decides in UTC too: a zone only
changes how instants are shown. Where the zone observes daylight saving time, a schedule
written for local business hours moves by an hour twice a year; that is said once per
budget, with the local times it takes in each part of the year.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from lifeboat.karpenter.budgets import Budget
from lifeboat_local.common import UsageError

YEAR = timedelta(days=366)
# An instant as the tools print it (lifeboat.model.instants.format_instant).
INSTANT = re.compile(r"\b(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z)")


def zone(name: str) -> ZoneInfo:
    """The IANA zone ``name``; a usage error naming it when there is none."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise UsageError(
            f"--tz {name}: not a time zone (an IANA name such as Europe/Madrid; where the "
            "system has no time zone database, `pip install tzdata` provides one)"
        ) from None


def local_text(moment: datetime, tz: ZoneInfo) -> str:
    """``Tue 2026-12-01 15:05 CET``."""
    return moment.astimezone(tz).strftime("%a %Y-%m-%d %H:%M %Z")


def offset_changes(tz: ZoneInfo, start: datetime, span: timedelta = YEAR) -> list[datetime]:
    """The instants (to the hour) in ``[start, start + span)`` where the zone's UTC offset
    changes: its daylight saving time transitions."""
    changes = []
    moment = start.replace(minute=0, second=0, microsecond=0)
    offset = moment.astimezone(tz).utcoffset()
    # Day by day, then hour by hour inside the day that changed.
    while moment < start + span:
        following = moment + timedelta(days=1)
        if following.astimezone(tz).utcoffset() != offset:
            hour = moment
            while hour.astimezone(tz).utcoffset() == offset:
                hour += timedelta(hours=1)
            changes.append(hour)
            offset = hour.astimezone(tz).utcoffset()
        moment = following
    return changes


def _utc_time_of_day(schedule: str) -> tuple[int, int] | None:
    """(hour, minute) a cron schedule starts at, when it names one (``0 9 * * mon-fri``)."""
    fields = schedule.split()
    if len(fields) != 5 or not fields[0].isdigit() or not fields[1].isdigit():
        return None
    return int(fields[1]), int(fields[0])


def schedule_shift_warning(budget: Budget, tz: ZoneInfo, at: datetime) -> str | None:
    """What a UTC schedule becomes in ``tz`` over the next year, when that moves."""
    return shift_warning(budget.index, budget.schedule, tz, at)


def shift_warning(index: int, schedule: str | None, tz: ZoneInfo, at: datetime) -> str | None:
    """The same for budget ``index`` with cron ``schedule`` (None: no schedule)."""
    if schedule is None:
        return None
    start = _utc_time_of_day(schedule)
    changes = offset_changes(tz, at)
    if start is None or not changes:
        return None
    hour, minute = start
    seen: list[str] = []
    for moment in [at, *changes]:
        utc_start = moment.replace(hour=hour, minute=minute, second=0, microsecond=0)
        text = utc_start.astimezone(tz).strftime("%H:%M %Z")
        if text not in seen:
            seen.append(text)
    dates = ", ".join(c.astimezone(tz).strftime("%Y-%m-%d") for c in changes)
    return (
        f'budget[{index}] "{schedule}" starts at {hour:02d}:{minute:02d} UTC, '
        f"{' or '.join(seen)} in {tz.key} (the clocks change on {dates}): a window meant "
        "for local business hours moves by an hour twice a year; Karpenter evaluates "
        "schedules in UTC, and so does Lifeboat"
    )


def annotate_instants(text: str, tz: ZoneInfo) -> str:
    """Every UTC instant of ``text`` followed by its local time: ``2026-12-01T17:00:00Z
    (Tue 18:00 CET)``."""

    def local(match: re.Match[str]) -> str:
        moment = datetime.fromisoformat(match.group(1).replace("Z", "+00:00"))
        return f"{match.group(1)} ({moment.astimezone(tz).strftime('%a %H:%M %Z')})"

    return INSTANT.sub(local, text)
