"""Deferred work, persisted in AWS: EventBridge Scheduler one-time schedules.

Why Scheduler rather than a DynamoDB table swept by a periodic Lambda: a one-time
``at(...)`` schedule wakes exactly when the budget window opens (a sweep wakes on its own
period, late by up to that period), costs nothing while it waits, needs no extra function
and no scan, and deletes itself after it fires (``ActionAfterCompletion=DELETE``). Its target
is Lifeboat's own queue, so a wake-up inherits the queue's retries and dead-letter queue.

A wake-up Scheduler cannot deliver (the queue deleted or its policy broken, for a day of
retries) goes to the target's dead-letter queue, Lifeboat's DLQ, where the alarm fires;
without it Scheduler would drop the wake-up silently.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from contextlib import suppress
from datetime import UTC, datetime, timedelta
from typing import Any

from lifeboat.wakeup.codec import Wakeup, encode

# Scheduler rejects an ``at()`` in the past; a wake-up due now fires a minute later.
MIN_DELAY = timedelta(minutes=1)


class SchedulerWakeups:
    def __init__(
        self,
        client: Any,
        *,
        group: str,
        role_arn: str,
        queue_arn: str,
        clock: Callable[[], datetime],
        dead_letter_arn: str | None = None,
    ) -> None:
        self._client = client
        self._group = group
        self._role_arn = role_arn
        self._queue_arn = queue_arn
        self._dead_letter_arn = dead_letter_arn
        self._clock = clock

    def schedule(self, wakeup: Wakeup) -> None:
        # at() takes a wall-clock time in ScheduleExpressionTimezone: convert, don't relabel.
        due = max(wakeup.due, self._clock() + MIN_DELAY).astimezone(UTC)
        target: dict[str, Any] = {
            "Arn": self._queue_arn,
            "RoleArn": self._role_arn,
            "Input": encode(wakeup),
            "RetryPolicy": {"MaximumEventAgeInSeconds": 86400, "MaximumRetryAttempts": 185},
        }
        if self._dead_letter_arn:
            target["DeadLetterConfig"] = {"Arn": self._dead_letter_arn}
        # A conflict: the same wake-up was scheduled by an earlier delivery; nothing to add.
        with suppress(self._client.exceptions.ConflictException):
            self._client.create_schedule(
                Name=schedule_name(wakeup),
                GroupName=self._group,
                ScheduleExpression=f"at({due.strftime('%Y-%m-%dT%H:%M:%S')})",
                ScheduleExpressionTimezone="UTC",
                FlexibleTimeWindow={"Mode": "OFF"},
                Target=target,
                ActionAfterCompletion="DELETE",
                Description=f"lifeboat {wakeup.task} {wakeup.notice.dedup_key}"[:512],
            )


def schedule_name(wakeup: Wakeup) -> str:
    """Deterministic (so a retry cannot schedule twice) and within Scheduler's 64 chars."""
    digest = hashlib.sha256(wakeup.key.encode()).hexdigest()[:40]
    return f"lifeboat-{wakeup.task}-{digest}"[:64]
