"""Cron schedules of Karpenter disruption budgets, parsed exactly as Karpenter parses them.

Karpenter v1 (``Budget.IsActive``) parses a budget's ``schedule`` with robfig/cron's
``ParseStandard("TZ=UTC " + schedule)``, after the API server has checked it against the CRD
pattern. This module accepts exactly the intersection of the two:

* 5 fields (minute hour day-of-month month day-of-week) with ``*``, ``?``, lists, ranges and
  steps; month names JAN-DEC and day names SUN-SAT, case-insensitive; day-of-week 0-6 only
  (robfig has no 7-for-Sunday);
* the descriptors ``@yearly @annually @monthly @weekly @daily @midnight @hourly``
  (case-sensitive, as in robfig; ``@every`` is refused by the CRD pattern).

Everything is evaluated in UTC. Croniter, a maintained library, does the iteration; it is
laxer than robfig (it accepts wrap-around ranges such as ``tue-mon``, 6/7 fields, ``7`` for
Sunday), so the strict parser below validates first and hands croniter a normalised
expression made of explicit value lists. Day-of-month/day-of-week matching follows robfig's
``dayMatches``: if either field starts with ``*`` or ``?`` (without a step above 1), a day must
match both; otherwise a day matching either is enough.
"""

from __future__ import annotations

import calendar
import re
import threading
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from functools import cached_property
from typing import Final

from croniter import CroniterBadDateError, croniter

from lifeboat.errors import InvalidInput
from lifeboat.model.instants import require_utc

__all__ = [
    "CronCursor",
    "CronError",
    "CronField",
    "CronSchedule",
    "parse_cron",
    "robfig_horizon_opens",
    "robfig_search_start",
]


class CronError(InvalidInput):
    """A schedule Karpenter would refuse (CRD pattern or robfig/cron ``ParseStandard``)."""


# The NodePool CRD pattern of ``spec.disruption.budgets[].schedule`` (karpenter.sh/v1). The API
# server applies it as a search, not a full match, which is why it is used with ``re.search``.
_CRD_SCHEDULE_PATTERN: Final = re.compile(
    r"^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\s(.+)\s(.+)\s(.+)\s(.+))$"
)

_MONTH_NAMES: Final = {
    name: number
    for number, name in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"),
        start=1,
    )
}
_DOW_NAMES: Final = {
    name: number for number, name in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))
}

# Go's strconv.Atoi: optional sign, decimal digits only, within 64 bits.
_GO_INT: Final = re.compile(r"[+-]?[0-9]+")
_INT64_MIN: Final = -(1 << 63)
_INT64_MAX: Final = (1 << 63) - 1

# Longest month length, February counted with its leap day (robfig finds it in leap years).
_MAX_DAYS: Final = {
    month: 29 if month == 2 else calendar.monthrange(2023, month)[1] for month in range(1, 13)
}

# robfig's SpecSchedule.Next gives up (returns the zero time) when no hit is found before the
# year after start.year + 5; Karpenter then treats the budget as active (zero is not after now).
_ROBFIG_YEAR_HORIZON: Final = 5
# Croniter's own search limit, a little beyond robfig's so that robfig's horizon decides.
_CRONITER_MAX_YEARS: Final = _ROBFIG_YEAR_HORIZON + 2
# How far the hit robfig cannot see is looked for: the longest gap a valid schedule can have
# is eight years (29 February across a century that is not a leap year, 2096 to 2104).
_DEEP_SEARCH_YEARS: Final = 12


@dataclass(frozen=True)
class _Bounds:
    name: str
    low: int
    high: int
    names: dict[str, int] | None = None


_MINUTE: Final = _Bounds("minute", 0, 59)
_HOUR: Final = _Bounds("hour", 0, 23)
_DOM: Final = _Bounds("day of month", 1, 31)
_MONTH: Final = _Bounds("month", 1, 12, _MONTH_NAMES)
_DOW: Final = _Bounds("day of week", 0, 6, _DOW_NAMES)


@dataclass(frozen=True)
class CronField:
    """The values one cron field selects, and robfig's "star bit" (field began with * or ?)."""

    values: frozenset[int]
    star: bool = False

    @classmethod
    def every(cls, bounds: _Bounds) -> CronField:
        """robfig's ``all(bounds)``: every value, with the star bit."""
        return cls(frozenset(range(bounds.low, bounds.high + 1)), star=True)

    @classmethod
    def only(cls, *values: int) -> CronField:
        """A field restricted to the given values."""
        return cls(frozenset(values))

    def as_list(self) -> str:
        """Explicit comma-separated list for croniter (never empty when called)."""
        return ",".join(str(value) for value in sorted(self.values))


def _go_atoi(text: str) -> int:
    """Parse an integer like robfig's ``mustParseInt`` (strconv.Atoi, then no negatives)."""
    if not _GO_INT.fullmatch(text):
        raise CronError(
            f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": invalid syntax'
        )
    number = int(text)
    if not _INT64_MIN <= number <= _INT64_MAX:
        # Go's Atoi fails beyond 64 bits: the schedule does not parse, and Karpenter blocks
        # the pool (fail closed), where Python would happily carry on with a huge step.
        raise CronError(
            f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": value out of range'
        )
    if number < 0:
        raise CronError(f"negative number ({number}) not allowed: {text}")
    return number


def _int_or_name(text: str, bounds: _Bounds) -> int:
    """robfig's ``parseIntOrName``: names (case-insensitive) first, then an integer."""
    if bounds.names is not None and text.lower() in bounds.names:
        return bounds.names[text.lower()]
    return _go_atoi(text)


def _parse_range(expr: str, bounds: _Bounds) -> CronField:
    """One comma-separated part of a field, mirroring robfig's ``getRange`` and its messages."""
    range_and_step = expr.split("/")
    low_and_high = range_and_step[0].split("-")
    single = len(low_and_high) == 1
    star = False
    if low_and_high[0] in ("*", "?"):
        # robfig ignores anything after "*-" here: "*-5" is "*".
        start, end, star = bounds.low, bounds.high, True
    else:
        start = _int_or_name(low_and_high[0], bounds)
        if len(low_and_high) == 1:
            end = start
        elif len(low_and_high) == 2:
            end = _int_or_name(low_and_high[1], bounds)
        else:
            raise CronError(f"too many hyphens: {expr}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _go_atoi(range_and_step[1])
        if single:  # "N/step" means "N-max/step"
            end = bounds.high
        if step > 1:
            star = False
    else:
        raise CronError(f"too many slashes: {expr}")
    if start < bounds.low:
        raise CronError(f"beginning of range ({start}) below minimum ({bounds.low}): {expr}")
    if end > bounds.high:
        raise CronError(f"end of range ({end}) above maximum ({bounds.high}): {expr}")
    if start > end:
        raise CronError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise CronError(f"step of range should be a positive number: {expr}")
    return CronField(frozenset(range(start, end + 1, step)), star)


def _parse_field(text: str, bounds: _Bounds) -> CronField:
    """A whole field: robfig splits on commas and drops empty parts (``strings.FieldsFunc``)."""
    values: set[int] = set()
    star = False
    for part in (piece for piece in text.split(",") if piece):
        parsed = _parse_range(part, bounds)
        values |= parsed.values
        star = star or parsed.star
    return CronField(frozenset(values), star)


def _everything(bounds: _Bounds) -> CronField:
    return CronField.every(bounds)


# robfig's parseDescriptor, as (minute, hour, dom, month, dow).
_DESCRIPTORS: Final[dict[str, tuple[CronField, CronField, CronField, CronField, CronField]]] = {
    "@yearly": (
        CronField.only(0),
        CronField.only(0),
        CronField.only(1),
        CronField.only(1),
        _everything(_DOW),
    ),
    "@monthly": (
        CronField.only(0),
        CronField.only(0),
        CronField.only(1),
        _everything(_MONTH),
        _everything(_DOW),
    ),
    "@weekly": (
        CronField.only(0),
        CronField.only(0),
        _everything(_DOM),
        _everything(_MONTH),
        CronField.only(0),
    ),
    "@daily": (
        CronField.only(0),
        CronField.only(0),
        _everything(_DOM),
        _everything(_MONTH),
        _everything(_DOW),
    ),
    "@hourly": (
        CronField.only(0),
        _everything(_HOUR),
        _everything(_DOM),
        _everything(_MONTH),
        _everything(_DOW),
    ),
}
_DESCRIPTORS["@annually"] = _DESCRIPTORS["@yearly"]
_DESCRIPTORS["@midnight"] = _DESCRIPTORS["@daily"]


def _floor_minute(moment: datetime) -> datetime:
    return moment.replace(second=0, microsecond=0)


@dataclass(frozen=True)
class CronSchedule:
    """A validated schedule: the selected values of each field, evaluated in UTC."""

    spec: str
    minute: CronField
    hour: CronField
    dom: CronField
    month: CronField
    dow: CronField

    @property
    def _day_and(self) -> bool:
        """robfig: a star in either day field means a day must match both fields."""
        return self.dom.star or self.dow.star

    def _some_valid_dom(self) -> bool:
        """Whether some selected day of month exists in some selected month."""
        return any(
            day <= _MAX_DAYS[month] for month in self.month.values for day in self.dom.values
        )

    def day_matches(self, day: date) -> bool:
        """robfig's ``dayMatches`` (month not included)."""
        dom_match = day.day in self.dom.values
        dow_match = (day.isoweekday() % 7) in self.dow.values
        if self._day_and:
            return dom_match and dow_match
        return dom_match or dow_match

    @cached_property
    def never_fires(self) -> bool:
        """True when no instant ever matches (e.g. ``0 0 30 2 *`` or an empty list ``,``).

        robfig returns the zero time for such a schedule, and Karpenter's
        ``!nextHit.After(now)`` then reads it as an always-active budget.
        """
        if not (self.minute.values and self.hour.values and self.month.values):
            return True
        if self._day_and:
            if self.dow.star:
                return not self._some_valid_dom()
            return not self.dow.values  # dom is "*": every weekday occurs in every month
        return not self.dow.values and not self._some_valid_dom()

    @cached_property
    def croniter_expression(self) -> str:
        """A croniter expression selecting exactly the same instants (needs ``day_or=True``).

        Only explicit lists and ``*`` are emitted, so croniter's own range parsing (laxer than
        robfig's) never comes into play, and the day fields are arranged so croniter's
        star-based day rule gives robfig's answer. Call only when ``never_fires`` is False.
        """
        dom, dow = self._croniter_days()
        return f"{self.minute.as_list()} {self.hour.as_list()} {dom} {self.month.as_list()} {dow}"

    def _croniter_days(self) -> tuple[str, str]:
        if self._day_and:
            if self.dom.star and self.dow.star:
                return "*", "*"
            if self.dom.star:
                return "*", self.dow.as_list()
            return self.dom.as_list(), "*"
        # OR: a field matching nothing drops out; a field matching every day makes every day match.
        if not self._some_valid_dom():
            return "*", self.dow.as_list()
        if not self.dow.values:
            return self.dom.as_list(), "*"
        if len(self.dom.values) == _DOM.high or len(self.dow.values) == _DOW.high + 1:
            return "*", "*"
        return self.dom.as_list(), self.dow.as_list()

    @cached_property
    def fires_every_minute(self) -> bool:
        """True when every minute is a hit (any window of a minute or more never closes)."""
        return (
            len(self.minute.values) == _MINUTE.high + 1
            and len(self.hour.values) == _HOUR.high + 1
            and len(self.month.values) == _MONTH.high
            and self._croniter_days() == ("*", "*")
        )

    def cursor(self) -> CronCursor:
        """A reusable iterator for many queries (building a croniter is the costly part)."""
        return CronCursor(self)

    def next_after(self, moment: datetime) -> datetime | None:
        """See ``CronCursor.next_after``."""
        return self.cursor().next_after(moment)

    def last_at_or_before(self, moment: datetime) -> datetime | None:
        """See ``CronCursor.last_at_or_before``."""
        return self.cursor().last_at_or_before(moment)


_THREAD_CRONITERS = threading.local()
_CRONITER_CACHE_SIZE = 512


class CronCursor:
    """Queries one schedule many times through a single croniter instance (not thread-safe)."""

    def __init__(self, schedule: CronSchedule) -> None:
        self.schedule = schedule
        self._iterator = self._croniter(_CRONITER_MAX_YEARS)
        self._deep: croniter | None = None

    def _croniter(self, max_years: int) -> croniter | None:
        if self.schedule.never_fires:
            return None
        # Building a croniter (expanding its expression) costs ~1 ms, and a decision at 50
        # budgets asks for about a hundred cursors: one per expression and thread is kept.
        # Every query sets the iterator's start first, so cursors of one thread may share it.
        key = (self.schedule.croniter_expression, max_years)
        cache: dict[tuple[str, int], croniter] = _THREAD_CRONITERS.__dict__.setdefault("by", {})
        found = cache.get(key)
        if found is None:
            if len(cache) >= _CRONITER_CACHE_SIZE:
                cache.clear()
            found = cache[key] = croniter(
                self.schedule.croniter_expression,
                datetime(2000, 1, 1, tzinfo=UTC),
                ret_type=datetime,
                day_or=True,
                max_years_between_matches=max_years,
            )
        return found

    @staticmethod
    def _step(iterator: croniter | None, start: datetime, backwards: bool) -> datetime | None:
        if iterator is None:
            return None
        try:
            iterator.set_current(start, force=True)
            hit: datetime = (
                iterator.get_prev(datetime) if backwards else iterator.get_next(datetime)
            )
        except (CroniterBadDateError, OverflowError):
            # No hit within croniter's search, or the search ran off the calendar (year 9999).
            return None
        return hit.astimezone(UTC)

    def next_after(self, moment: datetime) -> datetime | None:
        """The first hit strictly after ``moment``, as robfig's ``Schedule.Next``.

        None where robfig returns the zero time: no hit before the year ``moment.year + 5``
        ends (always the case when the schedule never fires).
        """
        moment = require_utc(moment)
        # Hits fall on whole minutes, so "after moment" equals "after moment's minute".
        hit = self._step(self._iterator, _floor_minute(moment), backwards=False)
        if hit is None or hit.year > robfig_search_start(moment).year + _ROBFIG_YEAR_HORIZON:
            return None
        return hit

    def next_beyond_horizon(self, moment: datetime) -> datetime | None:
        """The first hit strictly after ``moment`` even where robfig cannot see it (up to
        twelve years ahead); None when there is none that close."""
        moment = require_utc(moment)
        if self._deep is None:
            self._deep = self._croniter(_DEEP_SEARCH_YEARS)
        return self._step(self._deep, _floor_minute(moment), backwards=False)

    def last_at_or_before(self, moment: datetime) -> datetime | None:
        """The latest hit at or before ``moment`` (None if none within croniter's search)."""
        moment = require_utc(moment)
        # Croniter's get_prev is strictly before its start; hits fall on whole minutes.
        return self._step(
            self._iterator, _floor_minute(moment) + timedelta(minutes=1), backwards=True
        )


def robfig_search_start(moment: datetime) -> datetime:
    """Where robfig's ``Schedule.Next(moment)`` starts looking: the next whole second."""
    return moment.replace(microsecond=0) + timedelta(seconds=1)


def robfig_horizon_opens(hit: datetime) -> datetime:
    """The earliest ``moment`` from which robfig's ``Next(moment)`` can return ``hit``:
    it gives up after the year ``start.year + 5``, so ``start`` must lie in the year
    ``hit.year - 5`` or later (``start`` being the whole second after ``moment``)."""
    return datetime(hit.year - _ROBFIG_YEAR_HORIZON, 1, 1, tzinfo=UTC) - timedelta(seconds=1)


def parse_cron(spec: str) -> CronSchedule:
    """Parse a budget schedule the way Karpenter v1 does, or raise ``CronError``.

    Karpenter calls ``cron.ParseStandard("TZ=UTC " + schedule)``; robfig strips the ``TZ=``
    prefix and trims surrounding whitespace, so ``"@daily "`` is accepted, while the CRD pattern
    already refused a descriptor not at the very start.
    """
    trimmed = spec.strip()
    if trimmed.startswith("@"):
        fields = _DESCRIPTORS.get(trimmed)
        if fields is None:
            raise CronError(f"unrecognized descriptor: {trimmed}")
        return _crd_checked(CronSchedule(spec, *fields))
    parts = trimmed.split()
    if len(parts) != 5:
        raise CronError(f"expected exactly 5 fields, found {len(parts)}: [{' '.join(parts)}]")
    minute, hour, dom, month, dow = (
        _parse_field(text, bounds)
        for text, bounds in zip(parts, (_MINUTE, _HOUR, _DOM, _MONTH, _DOW), strict=True)
    )
    return _crd_checked(CronSchedule(spec, minute, hour, dom, month, dow))


def _crd_checked(schedule: CronSchedule) -> CronSchedule:
    """Refuse what robfig accepts but the API server would not have stored (" @daily")."""
    if not _CRD_SCHEDULE_PATTERN.search(schedule.spec):
        raise CronError("does not match the NodePool CRD schedule pattern")
    return schedule
