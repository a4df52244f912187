"""bench.dynamodb's table gives Powertools' idempotency the answers DynamoDB gives (checked
against moto's DynamoDB, which implements the condition expressions in full): a key is acted
on once, a duplicate is told so, a failed handling is forgotten, a key being handled is
refused. A stand-in that answered otherwise would make the storm's ledger measure lie."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from bench.dynamodb import DynamoDbTable
from bench.harness import (
    IDEMPOTENCY_TABLE,
    LambdaContext,
    boto_client,
    create_idempotency_table,
    moto_aws,
)
from lifeboat.aws.idempotency import PowertoolsLedger
from lifeboat.model.report import Outcome, Report

REPORT = Report(None, "spot-interruption", Outcome.ACTED, "acted")


@pytest.fixture(params=["bench", "moto"])
def ledger(request: pytest.FixtureRequest) -> Iterator[PowertoolsLedger]:
    with moto_aws():
        if request.param == "bench":
            client = DynamoDbTable(IDEMPOTENCY_TABLE, round_trip=0.0).client()
        else:
            create_idempotency_table()
            client = boto_client("dynamodb")
        made = PowertoolsLedger(IDEMPOTENCY_TABLE, boto3_client=client)
        made.register_lambda_context(LambdaContext())
        yield made


def _fails() -> Report:
    raise RuntimeError("the handling failed")


def test_once_then_a_duplicate(ledger: PowertoolsLedger) -> None:
    assert ledger.once("event#i-1", lambda: REPORT) is REPORT
    assert ledger.once("event#i-1", lambda: pytest.fail("acted twice")) is None


def test_a_failed_handling_is_forgotten(ledger: PowertoolsLedger) -> None:
    with pytest.raises(RuntimeError):
        ledger.once("event#i-2", _fails)
    assert ledger.once("event#i-2", lambda: REPORT) is REPORT


def test_a_key_being_handled_is_refused(ledger: PowertoolsLedger) -> None:
    answers: list[Any] = []

    def nested() -> Report:
        try:
            answers.append(ledger.once("event#i-3", lambda: REPORT))
        except Exception as error:  # what a concurrent duplicate is told
            answers.append(type(error).__name__)
        return REPORT

    run: Callable[[], Report] = nested
    assert ledger.once("event#i-3", run) is REPORT
    assert answers and answers[0] not in (REPORT, None)
