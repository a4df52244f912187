"""``handle_batch``'s decision log lines: each names the SQS message it decided on."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest

from lifeboat.flow.pipeline import MessageResult
from lifeboat.model.report import Outcome, Report
from lifeboat.runtime.handler import handle_batch
from tests.support.events import sqs_record

NOW = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)


class ScriptedPipeline:
    """Answers each body with the reports scripted for it (the pipeline is not under test)."""

    def __init__(self, results: dict[str, MessageResult]) -> None:
        self.results = results
        self.clock = lambda: NOW

    def process(self, bodies: Sequence[Any], **_: Any) -> list[MessageResult]:
        return [self.results[body] for body in bodies]


def test_each_decision_line_names_its_message(caplog: pytest.LogCaptureFixture) -> None:
    """The Powertools correlation id is the batch's first message only: without the message
    id a decision of the third record could not be traced to its message."""
    acted = Report("e1", "spot-interruption", Outcome.ACTED, "acted", instance_id="i-1")
    ignored = Report("e2", "state-change", Outcome.IGNORED, "running", instance_id="i-2")
    deferred = Report("e3", "rebalance-recommendation", Outcome.DEFERRED, "window")
    pipeline = ScriptedPipeline(
        {
            "one": MessageResult([acted]),
            "two": MessageResult([ignored, deferred]),
            "bad": MessageResult(error=RuntimeError("503")),
        }
    )
    event = {
        "Records": [sqs_record("one", "m-1"), sqs_record("two", "m-2"), sqs_record("bad", "m-3")]
    }
    logger = logging.getLogger("test_handler_logs")
    with caplog.at_level(logging.INFO, logger="test_handler_logs"):
        response = handle_batch(event, None, pipeline, logger=logger)  # type: ignore[arg-type]
    assert response == {"batchItemFailures": [{"itemIdentifier": "m-3"}]}
    decisions = [r for r in caplog.records if r.getMessage() == "decision"]
    assert [(r.message_id, r.decision["event_id"]) for r in decisions] == [  # type: ignore[attr-defined]
        ("m-1", "e1"),
        ("m-2", "e2"),
        ("m-2", "e3"),
    ]
    [failure] = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert failure.message_id == "m-3"  # type: ignore[attr-defined]
