"""Time from AWS, not the function's clock (issue 33.6).

Every deadline Lifeboat weighs is AWS's: a Spot warning's ``instance-action`` time, a
maintenance's ``startTime``, an impairment's ``ImpairedSince``, the due time of a schedule.
Compared with the function's own clock, a clock 15 minutes fast calls a fresh Spot warning
stale (and takes it out of the involuntary path), one 15 minutes slow obeys a stale one as
urgent. So the pipeline's clock is :class:`AwsClock`: the function's clock corrected by AWS's,
read from the HTTP ``Date`` of every answer of the AWS clients it watches (EC2 first: each batch
describes its instances before anything is decided; DynamoDB, the ledger, before anything is
done).

``Date`` has a resolution of one second (RFC 9110 ``IMF-fixdate``) and is written by the
server before the answer travels back: the correction is the midpoint of that second minus
the local time of receipt, within about a second of the true skew, and it is changed only
when an answer disagrees with it by more than that (:data:`RESOLUTION`), so it does not
jitter. Whatever the function's clock says, the times Lifeboat decides on are AWS's to within
that second, from the first AWS answer on (tests: ``tests/unit/test_aws_clock.py``, at
plus and minus 15 minutes).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any

# The resolution of an HTTP Date: skews within it are noise, not drift.
RESOLUTION = timedelta(seconds=1)
# A Date further than this from the local clock is not believed. AWS refuses a request signed
# (SigV4 ``X-Amz-Date``) more than 15 minutes off its own clock (EC2 ``RequestExpired``,
# DynamoDB "Signature expired"), and botocore does not correct for skew: no answer of a
# signed request can come from an AWS further off than that, plus the answer's round trip.
# Further off is a hostile or broken endpoint (a proxy, a cache replaying an old answer with
# its old Date): believing it would move every deadline by up to its error (12 hours before
# the hostile review of issue 33.6).
BELIEVABLE = timedelta(minutes=16)


def _utc_now() -> datetime:
    return datetime.now(UTC)


class AwsClock:
    """A clock that tells AWS's time: ``local`` corrected by the skew AWS's answers show."""

    def __init__(self, local: Callable[[], datetime] = _utc_now) -> None:
        self._local = local
        self._skew = timedelta(0)
        self._lock = threading.Lock()
        self.observed = 0

    def __call__(self) -> datetime:
        return self._local() + self._skew

    @property
    def skew(self) -> timedelta:
        """AWS's time minus the function's, as last corrected."""
        return self._skew

    def observe(self, date: str) -> None:
        """An AWS answer's ``Date`` header, received now."""
        try:
            aws = parsedate_to_datetime(date)
        except (TypeError, ValueError, IndexError):
            return
        if aws.tzinfo is None:
            return  # not an IMF-fixdate (which says GMT)
        skew = aws.astimezone(UTC) + RESOLUTION / 2 - self._local()
        if abs(skew) > BELIEVABLE:
            return
        with self._lock:
            self.observed += 1
            if abs(skew - self._skew) > RESOLUTION:
                self._skew = skew

    def watch(self, client: Any) -> None:
        """Correct this clock from every answer of the boto3 ``client``."""
        client.meta.events.register("after-call", self._after_call)

    def _after_call(self, http_response: Any = None, parsed: Any = None, **_: Any) -> None:
        date = _date_of(getattr(http_response, "headers", None))
        if date is None and isinstance(parsed, Mapping):
            metadata = parsed.get("ResponseMetadata")
            if isinstance(metadata, Mapping):
                date = _date_of(metadata.get("HTTPHeaders"))
        if date is not None:
            self.observe(date)


def _date_of(headers: Any) -> str | None:
    if not isinstance(headers, Mapping):
        return None
    for name in ("Date", "date"):
        value = headers.get(name)
        if isinstance(value, str) and value:
            return value
    return None
