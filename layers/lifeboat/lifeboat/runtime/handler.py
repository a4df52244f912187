"""The body of the Lambda handler: an SQS batch in, partial batch failures out.

A plain function over a built pipeline, so tests call it directly; ``functions/interruption
/app.py`` only wires Powertools around it. A record whose handling raised is reported as a
batch item failure (``ReportBatchItemFailures``): SQS delivers it again, sooner than the
queue's visibility timeout (in seconds, backing off: ``lifeboat.model.deadline``), and after
``maxReceiveCount`` tries moves it to the dead-letter queue. Every other record is deleted,
because it was acted on, deferred, ignored with a reason, or rejected with a reason (logged;
a malformed message will never parse, so retrying it would only delay the dead-letter
queue's alarm for nothing useful). When every record failed the invocation itself fails,
so the function's Errors alarm sees a broken deployment at once.

After the pipeline: one log line per decision (with the record's message id as correlation
id), the batch's metrics, a traced subsegment per report when X-Ray sampled the invocation,
and notifications of actions and give-ups; none of these can fail a record.

The response is built here rather than with Powertools' batch utility: the pipeline has
already decided every record's fate, so only the list of failures is left to write, and
that utility's import (asyncio and the data classes of every event source) would cost a
tenth of the function's cold start.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from datetime import datetime
from functools import partial
from typing import Any

from lifeboat.aws.notify import Notifier
from lifeboat.aws.redelivery import Redelivery
from lifeboat.errors import RetryLater
from lifeboat.flow.pipeline import MessageResult, Pipeline
from lifeboat.model.deadline import QUEUE_VISIBILITY_TIMEOUT, redelivery_delay
from lifeboat.model.report import Outcome, Report
from lifeboat.telemetry.observability import BatchMetricSink, MetricSink, log_fields, report_metrics
from lifeboat.telemetry.tracing import RecordTracer

_log = logging.getLogger("lifeboat")


class AllRecordsFailed(RetryLater):
    """Every record of the batch failed: the invocation fails and SQS retries them all."""


def handle_batch(
    event: Mapping[str, Any],
    context: Any,
    pipeline: Pipeline,
    *,
    metrics: MetricSink | None = None,
    logger: logging.Logger | logging.LoggerAdapter[logging.Logger] | Any = _log,
    clock: Callable[[], datetime] | None = None,
    tracer: RecordTracer | None = None,
    notifier: Notifier | None = None,
    redelivery: Redelivery | None = None,
) -> dict[str, Any]:
    records = _records(event)
    results = pipeline.process(
        [_body(record) for record in records],
        time_left=_time_left(context),
        receives=[_receive_count(record) for record in records],
    )
    by_message = _by_message(records, results)
    now = (clock or pipeline.clock)()

    failures: list[dict[str, str]] = []
    published: list[Report] = []
    published_ids: list[str] = []
    for message_id, (record, result) in by_message.items():
        _observe(logger, message_id, result, now, metrics, tracer)
        published += result.reports
        published_ids += [message_id] * len(result.reports)
        if result.error is not None:
            failures.append({"itemIdentifier": message_id})
            _failed(logger, record, result, now, redelivery)
    _set_correlation_id(logger, None)

    undelivered = _notify(logger, notifier, published, published_ids)
    if metrics is not None:
        _batch_metrics(logger, metrics, len(failures), undelivered)
    if failures and len(failures) == len(by_message):
        raise AllRecordsFailed(
            f"All records failed processing. {len(failures)} individual errors logged separately"
        )
    return {"batchItemFailures": failures}


def _records(event: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The batch's records, or ValueError when the event is no SQS batch."""
    records = event.get("Records") if isinstance(event, Mapping) else None
    if (
        not isinstance(records, list)
        or not records
        or not all(_is_record(record) for record in records)
    ):
        raise ValueError(
            "Invalid event format: expected an SQS batch event with a 'Records' list "
            "of one or more records (is the function's trigger the Lifeboat queue?)"
        )
    return records


def _by_message(
    records: list[Mapping[str, Any]], results: list[MessageResult]
) -> dict[str, tuple[Mapping[str, Any], MessageResult]]:
    """Each message once, in the batch's order, with its first record and its result. The
    same message twice in one batch: if either handling failed, so does the message."""
    by_message: dict[str, tuple[Mapping[str, Any], MessageResult]] = {}
    for record, result in zip(records, results, strict=True):
        message_id: str = record["messageId"]
        if message_id not in by_message:
            by_message[message_id] = (record, result)
        elif result.error is not None:
            by_message[message_id] = (by_message[message_id][0], result)
    return by_message


def _observe(
    logger: Any,
    message_id: str,
    result: MessageResult,
    now: datetime,
    metrics: MetricSink | None,
    tracer: RecordTracer | None,
) -> None:
    """A message's decisions in the log (its id as correlation id), metrics and trace."""
    _set_correlation_id(logger, message_id)
    for report in result.reports:
        level = logging.WARNING if report.outcome is Outcome.REJECTED else logging.INFO
        logger.log(
            level, "decision", extra={"decision": log_fields(report), "message_id": message_id}
        )
    if metrics is not None:
        report_metrics(result.reports, metrics, now)
    if tracer is not None:
        _best_effort(logger, "trace", partial(tracer.annotate, message_id, result.reports))


def _notify(
    logger: Any, notifier: Notifier | None, published: list[Report], message_ids: list[str]
) -> int:
    """Publish the batch's notifications; how many were not delivered."""
    if notifier is None:
        return 0
    try:
        return notifier.publish(published, message_ids=message_ids)
    except Exception as error:  # never fails a record that was acted on
        logger.warning("could not publish notifications", extra={"error": repr(error)[:300]})
        return len(published)


def _batch_metrics(logger: Any, metrics: MetricSink, failures: int, undelivered: int) -> None:
    """The batch's own metrics (failed records, undelivered notifications), then the flush."""
    if failures:
        metrics.emit("RecordFailures", failures, "Count", {})
    if undelivered:
        metrics.emit("NotificationFailures", undelivered, "Count", {})
    if isinstance(metrics, BatchMetricSink):
        _best_effort(logger, "metrics", metrics.flush)


def _failed(
    logger: Any,
    record: Mapping[str, Any],
    result: MessageResult,
    now: datetime,
    redelivery: Redelivery | None,
) -> None:
    """Log a failed record and ask for its redelivery in seconds (``redelivery_delay``);
    once the backoff reaches the queue's visibility timeout, the queue brings it back."""
    delay = redelivery_delay(result.deadline, now, _receive_count(record))
    logger.error(
        "message failed; it returns to the queue",
        extra={
            "message_id": record["messageId"],
            "error": repr(result.error)[:500],
            "deadline": result.deadline.isoformat() if result.deadline else None,
            "redelivery_in_seconds": delay,
        },
    )
    receipt = record.get("receiptHandle")
    sooner = delay < QUEUE_VISIBILITY_TIMEOUT.total_seconds()
    if sooner and redelivery is not None and isinstance(receipt, str) and receipt:
        redelivery.redeliver_in(receipt, delay)


def _time_left(context: Any) -> Callable[[], float] | None:
    """Seconds left of the invocation, from the Lambda context (None: no context says)."""
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    if not callable(remaining):
        return None
    return lambda: float(remaining()) / 1000


def _receive_count(record: Mapping[str, Any]) -> int:
    attributes = record.get("attributes")
    raw = attributes.get("ApproximateReceiveCount") if isinstance(attributes, Mapping) else None
    try:
        return max(1, int(raw)) if raw is not None else 1
    except (TypeError, ValueError):
        return 1


def _set_correlation_id(logger: Any, value: str | None) -> None:
    """Powertools Logger: the record's message id on every line logged while it is handled."""
    setter = getattr(logger, "set_correlation_id", None)
    if callable(setter):
        setter(value)


def _best_effort(logger: Any, what: str, call: Callable[[], Any]) -> None:
    """Observability never fails a record: the decision was carried out already."""
    try:
        call()
    except Exception as error:
        logger.warning(f"could not write {what}", extra={"error": repr(error)[:300]})


def _is_record(record: Any) -> bool:
    """What SQS always sends: an object with a messageId (what batchItemFailures names)."""
    message_id = record.get("messageId") if isinstance(record, Mapping) else None
    return isinstance(message_id, str) and message_id != ""


def _body(record: Mapping[str, Any]) -> str:
    """The record's body as the text SQS carries. A body that is not text (no real queue
    sends one) becomes JSON text, so parsing rejects it with a reason instead of raising
    out of ``Pipeline.process`` and failing every other record of the batch with it."""
    body = record.get("body", "")
    if isinstance(body, str):
        return body
    try:
        return json.dumps(body)
    except (TypeError, ValueError):
        return ""
