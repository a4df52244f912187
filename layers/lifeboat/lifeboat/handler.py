"""The body of the Lambda handler: an SQS batch in, partial batch failures out.

A plain function over a built pipeline, so tests call it directly; ``functions/interruption
/app.py`` only wires Powertools around it. A record whose handling raised is reported as a
batch item failure: SQS delivers it again, and after ``maxReceiveCount`` tries moves it to
the dead-letter queue. Every other record is deleted, because it was acted on, deferred,
ignored with a reason, or rejected with a reason (logged; a malformed message will never
parse, so retrying it would only delay the dead-letter queue's alarm for nothing useful).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from lifeboat.observability import MetricSink, log_fields, report_metrics
from lifeboat.pipeline import MessageResult, Pipeline
from lifeboat.report import Outcome

_log = logging.getLogger("lifeboat")


def handle_batch(
    event: Mapping[str, Any],
    context: Any,
    pipeline: Pipeline,
    *,
    metrics: MetricSink | None = None,
    logger: logging.Logger | logging.LoggerAdapter[logging.Logger] | Any = _log,
    clock: Callable[[], datetime] | None = None,
) -> dict[str, Any]:
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
    results = pipeline.process([_body(record) for record in records])
    by_message: dict[str, MessageResult] = {}
    for record, result in zip(records, results, strict=True):
        # The same message twice in one batch: if either handling failed, so does the message.
        if result.error is not None or record["messageId"] not in by_message:
            by_message[record["messageId"]] = result
    now = (clock or pipeline.clock)()

    def record_handler(record: SQSRecord) -> None:
        result: MessageResult = by_message[record.message_id]
        for report in result.reports:
            level = logging.WARNING if report.outcome is Outcome.REJECTED else logging.INFO
            # The message id ties each decision to its SQS message (the correlation id is
            # only the batch's first), for an operator and for the soak's audit alike.
            logger.log(
                level,
                "decision",
                extra={"decision": log_fields(report), "message_id": record.message_id},
            )
        if metrics is not None:
            report_metrics(result.reports, metrics, now)
        if result.error is not None:
            logger.error(
                "message failed; it returns to the queue",
                extra={"message_id": record.message_id, "error": repr(result.error)[:500]},
            )
            raise result.error

    processor = BatchProcessor(event_type=EventType.SQS)
    response = process_partial_response(
        event=dict(event), record_handler=record_handler, processor=processor, context=context
    )
    return dict(response)


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
