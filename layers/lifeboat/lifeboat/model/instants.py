"""Instants as Lifeboat reads and writes them: timezone-aware UTC, and one text form.

Two ways to meet a naive datetime, for two situations:

- :func:`as_utc` takes it to be UTC: what AWS and the Kubernetes API mean by a time written
  without a zone, and what an operator means by ``--at 2026-12-01T14:05``;
- :func:`require_utc` refuses it: inside budget and cron arithmetic a naive clock is a bug
  (a local time mistaken for UTC shifts every window), so it fails loudly there.
"""

from __future__ import annotations

from datetime import UTC, datetime

# RFC 3339 to the second, in UTC: Kubernetes' metav1.Time, and every time Lifeboat prints.
RFC3339 = "%Y-%m-%dT%H:%M:%SZ"
# RFC 3339 to the microsecond: metav1.MicroTime (a Lease's acquireTime and renewTime).
RFC3339_MICRO = "%Y-%m-%dT%H:%M:%S.%fZ"


def as_utc(moment: datetime) -> datetime:
    """``moment`` as timezone-aware UTC; a naive value is taken to be UTC already."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def require_utc(moment: datetime) -> datetime:
    """``moment`` in UTC; a naive value raises ``ValueError`` (see the module's docstring)."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"naive datetime {moment.isoformat()}: pass a timezone-aware UTC time")
    return moment.astimezone(UTC)


def format_instant(moment: datetime) -> str:
    """``2026-12-01T14:05:00Z``: the instant in UTC, to the second."""
    return as_utc(moment).strftime(RFC3339)


def format_micro(moment: datetime) -> str:
    """``2026-12-01T14:05:00.123456Z``: a metav1.MicroTime."""
    return as_utc(moment).strftime(RFC3339_MICRO)


def parse_timestamp(value: str | None) -> datetime | None:
    """An RFC 3339 timestamp from the API server (``...Z`` or an offset) as aware UTC; None
    when absent or not a timestamp."""
    if not value:
        return None
    try:
        return as_utc(datetime.fromisoformat(value.replace("Z", "+00:00")))
    except ValueError:
        return None
