"""Go ``time.Duration`` strings, as Kubernetes objects carry them (``metav1.Duration``).

Karpenter stores a budget's ``duration`` and a pod's ``karpenter.sh/do-not-disrupt`` duration
as Go duration strings; both are parsed here exactly as ``time.ParseDuration`` parses them.
"""

from __future__ import annotations

import math
import re
from datetime import timedelta
from fractions import Fraction
from typing import Final

from lifeboat.errors import BrokenInvariant

__all__ = ["format_go_duration", "parse_go_duration"]

_NANOS_PER_UNIT: Final = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,  # U+00B5 micro sign
    "μs": 1_000,  # U+03BC Greek mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_GO_DURATION_PART: Final = re.compile(r"([0-9]*)(?:\.([0-9]*))?([^0-9.]*)")
_MAX_GO_DURATION_NS: Final = (1 << 63) - 1


def parse_go_duration(text: str) -> timedelta:
    """Parse a Go ``time.ParseDuration`` string ("1h30m", "8h", "45s", "1h0m0s", "1.5h").

    Budgets store ``duration`` as a ``metav1.Duration``, which is a Go duration string.
    Sub-microsecond precision is truncated (timedelta has none). Raises ``ValueError``.
    """
    if not isinstance(text, str):
        raise ValueError(f"invalid duration {text!r}: not a string")
    rest, negative = text, False
    if rest[:1] in ("+", "-"):
        negative, rest = rest[0] == "-", rest[1:]
    if rest == "0":
        return timedelta(0)
    if not rest:
        raise ValueError(f'invalid duration "{text}"')
    total = Fraction(0)
    while rest:
        match = _GO_DURATION_PART.match(rest)
        if match is None:  # the pattern matches the empty string
            raise BrokenInvariant("godurations.parse_go_duration: no match")
        whole, fraction, unit = match.group(1), match.group(2), match.group(3)
        if not whole and not fraction:
            raise ValueError(f'invalid duration "{text}"')
        if not unit:
            raise ValueError(f'missing unit in duration "{text}"')
        if unit not in _NANOS_PER_UNIT:
            raise ValueError(f'unknown unit "{unit}" in duration "{text}"')
        value = Fraction(int(whole or "0"))
        if fraction:
            value += Fraction(int(fraction), 10 ** len(fraction))
        total += value * _NANOS_PER_UNIT[unit]
        rest = rest[match.end() :]
    if total > _MAX_GO_DURATION_NS:
        raise ValueError(f'invalid duration "{text}": out of range')
    micros = math.trunc(total / 1000)
    return timedelta(microseconds=-micros if negative else micros)


def format_go_duration(value: timedelta) -> str:
    """Format like Go's ``Duration.String`` ("8h0m0s", "1h30m0s", "45s", "0s")."""
    micros = (value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds
    sign = "-" if micros < 0 else ""
    micros = abs(micros)
    if micros == 0:
        return "0s"
    if micros < 1_000_000:
        if micros < 1_000:
            return f"{sign}{micros}µs"
        return f"{sign}{_trim(Fraction(micros, 1_000))}ms"
    hours, micros = divmod(micros, 3_600_000_000)
    minutes, micros = divmod(micros, 60_000_000)
    seconds = _trim(Fraction(micros, 1_000_000)) + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{seconds}"
    if minutes:
        return f"{sign}{minutes}m{seconds}"
    return f"{sign}{seconds}"


def _trim(value: Fraction) -> str:
    """A decimal without trailing zeros (value has at most 6 decimals)."""
    text = f"{float(value):.6f}".rstrip("0").rstrip(".")
    return text or "0"
