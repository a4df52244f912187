"""Exactly-once action across invocations: Powertools idempotency on DynamoDB.

Keyed by (event id, instance). A redelivered message, or the same event delivered by two
rules, finds the completed record and is reported as a duplicate instead of acting again;
a concurrent duplicate finds the record in progress and is retried later by SQS. When
handling fails, Powertools deletes the in-progress record, so the retry is not mistaken for
a duplicate.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)

from lifeboat.errors import InvalidInput
from lifeboat.model.ledger import remembered
from lifeboat.model.report import Report

# Long enough to outlive SQS retention and any redelivery of the same event.
RECORD_TTL = timedelta(days=15)


class PowertoolsLedger:
    def __init__(self, table_name: str, *, boto3_client: Any = None) -> None:
        self._persistence = DynamoDBPersistenceLayer(
            table_name=table_name, boto3_client=boto3_client
        )
        self._config = IdempotencyConfig(
            event_key_jmespath="key",
            raise_on_no_idempotency_key=True,
            expires_after_seconds=int(RECORD_TTL.total_seconds()),
        )
        self._run = idempotent_function(
            data_keyword_argument="item",
            persistence_store=self._persistence,
            config=self._config,
        )(_handle_once)

    def register_lambda_context(self, context: Any) -> None:
        """Lets Powertools expire an in-progress record when the invocation times out."""
        self._config.register_lambda_context(context)

    def once(self, key: str, handle: Callable[[], Report]) -> Report | None:
        # Each call gets its own token; a stored result carrying another token means the
        # key was handled before, by another delivery.
        token = uuid.uuid4().hex
        produced: list[Report] = []
        try:
            stored = self._run(item={"key": key}, token=token, handle=handle, produced=produced)
        except _NotRemembered as rejected:
            return rejected.report  # Powertools deleted the in-progress record
        if stored.get("token") != token or not produced:
            return None
        return produced[0]


def _handle_once(
    item: dict[str, str], token: str, handle: Callable[[], Report], produced: list[Report]
) -> dict[str, Any]:
    report = handle()
    if not remembered(report):
        raise _NotRemembered(report)  # Powertools stores no record for a raising call
    produced.append(report)
    return {"token": token, "outcome": str(report.outcome), "key": item["key"]}


class _NotRemembered(InvalidInput):
    """A report the ledger does not remember as done (a rejection: lifeboat.model.ledger)."""

    def __init__(self, report: Report) -> None:
        super().__init__(report.reason)
        self.report = report
