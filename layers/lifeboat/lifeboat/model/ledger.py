"""Remembering which (event, instance) pairs were handled, so a duplicate acts once.

``Ledger`` is what the pipeline asks; ``MemoryLedger`` serves replay and tests, and
``lifeboat.aws.idempotency.PowertoolsLedger`` the Lambda (DynamoDB). Both give the same
answers: handled before -> None (a duplicate), being handled right now -> an error (the
message is retried later), failed or rejected -> forgotten (the retry, or the genuine
message a forged one borrowed the ids of, is not a duplicate).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol

from lifeboat.errors import RetryLater
from lifeboat.model.outcome import Outcome
from lifeboat.model.report import Report


class Ledger(Protocol):
    """Remembers which (event, instance) pairs were handled, so a duplicate acts once."""

    def once(self, key: str, handle: Callable[[], Report]) -> Report | None:
        """Run ``handle`` unless ``key`` was handled before (then None). If ``handle``
        raises, or its report is a rejection (:func:`remembered`), the key is not
        remembered, so the retry (or the genuine message) is not a duplicate."""
        ...


class HandlingInProgress(RetryLater):
    """The same (event, instance) is being handled right now; retry the message later."""


class MemoryLedger:
    """The in-process ledger of replay and tests, with Powertools' semantics: a key being
    handled is neither run again nor called done (its handling may still fail)."""

    def __init__(self) -> None:
        self._done: set[str] = set()
        self._running: set[str] = set()
        self._lock = threading.Lock()

    def once(self, key: str, handle: Callable[[], Report]) -> Report | None:
        with self._lock:
            if key in self._done:
                return None
            if key in self._running:
                raise HandlingInProgress(f"{key} is being handled by another delivery")
            self._running.add(key)
        try:
            report = handle()
        finally:
            with self._lock:
                self._running.discard(key)
        if remembered(report):
            with self._lock:
                self._done.add(key)
        return report


def remembered(report: Report) -> bool:
    """Whether a handled (event, instance) is remembered as done. A rejection is not: a
    forged message (another account, a made-up remainder) naming a genuine event's id and
    instances would otherwise have the genuine event reported as a duplicate of it."""
    return report.outcome is not Outcome.REJECTED
