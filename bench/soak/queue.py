"""The SQS queue and the Lambda service around ``handle_batch``, simulated.

- Batches of ``batch_size`` visible messages, oldest first.
- What ``handle_batch`` returns decides each message's fate, as the Lambda service's SQS
  poller does with a ``ReportBatchItemFailures`` response: a record named in
  ``batchItemFailures`` (or every record of a batch whose invocation raised) comes back
  after the visibility timeout with its receive count + 1, and moves to the dead-letter
  list once it was received ``max_receive`` times (the queue's redrive policy). Every other
  record is deleted.
- What each deleted message became is read from ``handle_batch``'s decision log lines
  (each names its message) through the logger it is given, as CloudWatch would show it.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, defaultdict, deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bench.events import sqs_record
from lifeboat.flow.pipeline import Pipeline
from lifeboat.model.report import Outcome, Report
from lifeboat.runtime.handler import handle_batch

from .messages import Sent


def report_from_log(fields: Mapping[str, Any]) -> Report:
    """The report a decision log line describes (``observability.log_fields``)."""
    until = fields.get("deferred_until")
    return Report(
        event_id=fields.get("event_id"),
        kind=str(fields.get("kind")),
        outcome=Outcome(fields["outcome"]),
        reason=str(fields.get("reason") or ""),
        instance_id=fields.get("instance_id"),
        node=fields.get("node"),
        nodepool=fields.get("nodepool"),
        deferred_until=datetime.fromisoformat(until.replace("Z", "+00:00")) if until else None,
        actions=tuple(fields.get("actions") or ()),
        unmanaged=bool(fields.get("unmanaged")),
        wakeup=fields.get("wakeup"),
    )


class DecisionLog:
    """The logger ``handle_batch`` writes to: keeps each message's decisions and failure
    instead of printing them."""

    def __init__(self) -> None:
        self.decisions: defaultdict[str, list[Report]] = defaultdict(list)
        self.failures: dict[str, str] = {}
        self.levels: Counter[int] = Counter()
        self._lock = threading.Lock()

    def log(self, level: int, msg: str, *args: Any, extra: Any = None, **_: Any) -> None:
        extra = extra or {}
        with self._lock:
            self.levels[level] += 1
            if msg == "decision":
                self.decisions[extra["message_id"]].append(report_from_log(extra["decision"]))

    def error(self, msg: str, *args: Any, extra: Any = None, **_: Any) -> None:
        extra = extra or {}
        with self._lock:
            self.levels[40] += 1
            if "message_id" in extra:
                self.failures[extra["message_id"]] = str(extra.get("error", msg))

    def clear(self) -> None:
        with self._lock:
            self.decisions.clear()
            self.failures.clear()


class OutcomeMetrics:
    """A ``MetricSink`` counting metrics by name (``Outcomes`` by outcome)."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def emit(self, name: str, value: float, unit: str, dimensions: dict[str, str]) -> None:
        with self._lock:
            key = name if name != "Outcomes" else f"Outcomes.{dimensions['outcome']}"
            self.counts[key] += 1


@dataclass
class QueueStats:
    batches: int = 0
    batch_errors: int = 0
    duplicates_same_batch: int = 0
    # Reports a failed delivery made before it failed (what it did is reported all the
    # same, issue 33.4): counted in the Outcomes metrics, not in any message's fate.
    reports_of_failed_deliveries: int = 0
    violations: list[str] = field(default_factory=list)


class SimulatedQueue:
    """Messages waiting, in flight and dead-lettered; ``drain`` invokes the handler until
    none is left visible or invisible."""

    def __init__(
        self,
        pipeline: Pipeline,
        *,
        batch_size: int,
        max_receive: int,
        visibility: float,
        context: Any,
        metrics: OutcomeMetrics,
    ) -> None:
        self.pipeline = pipeline
        self.batch_size = batch_size
        self.max_receive = max_receive
        self.visibility = visibility
        self.context = context
        self.metrics = metrics
        self.log = DecisionLog()
        self.waiting: deque[Sent] = deque()
        self.dead: list[Sent] = []
        self.stats = QueueStats()

    def send(self, messages: Iterable[Sent]) -> None:
        self.waiting.extend(messages)

    def drain(self) -> None:
        while self.waiting:
            self._invoke(self._take())

    def _take(self) -> list[Sent]:
        """Up to ``batch_size`` visible messages, oldest first; waits when none is visible."""
        while True:
            now = time.monotonic()
            batch: list[Sent] = []
            rest: list[Sent] = []
            while self.waiting and len(batch) < self.batch_size:
                message = self.waiting.popleft()
                (batch if message.visible_at <= now else rest).append(message)
            self.waiting.extendleft(reversed(rest))
            if batch:
                return batch
            time.sleep(max(0.0, min(m.visible_at for m in self.waiting) - now))

    def _invoke(self, batch: list[Sent]) -> None:
        bodies = [m.body for m in batch if not m.wakeup]
        self.stats.duplicates_same_batch += len(bodies) - len(set(bodies))
        for message in batch:
            message.receive_count += 1
        event = {"Records": [sqs_record(m.body, m.message_id, m.receive_count) for m in batch]}
        self.stats.batches += 1
        self.log.clear()
        try:
            response = handle_batch(
                event, self.context, self.pipeline, metrics=self.metrics, logger=self.log
            )
            failed = {item["itemIdentifier"] for item in response.get("batchItemFailures", [])}
            whole_batch_error = None
        except Exception as error:  # the invocation failed: Lambda retries every record
            self.stats.batch_errors += 1
            failed = {m.message_id for m in batch}
            whole_batch_error = f"batch: {error!r}"[:200]
        for message in batch:
            self._settle(message, failed, whole_batch_error)

    def _settle(self, message: Sent, failed: set[str], whole_batch_error: str | None) -> None:
        logged_failure = self.log.failures.get(message.message_id)
        decisions = self.log.decisions.get(message.message_id, [])
        if message.message_id not in failed:
            if logged_failure is not None:
                self.stats.violations.append(
                    f"message {message.message_id} ({message.label}) failed ({logged_failure}) "
                    "but was deleted by handle_batch"
                )
            message.reports = list(decisions)
            return
        self.stats.reports_of_failed_deliveries += len(decisions)
        error = whole_batch_error or logged_failure
        if error is None:
            self.stats.violations.append(
                f"message {message.message_id} ({message.label}) returned to the queue "
                "without a logged failure"
            )
            error = "(no error logged)"
        message.errors.append(error[:200])
        if message.receive_count >= self.max_receive:
            message.dead_lettered = True
            self.dead.append(message)
        else:
            message.visible_at = time.monotonic() + self.visibility
            self.waiting.append(message)
