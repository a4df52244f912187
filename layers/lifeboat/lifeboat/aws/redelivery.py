"""Bringing a failed message back in seconds: ``sqs:ChangeMessageVisibility``.

A record the handler reports as failed becomes visible again when its visibility timeout
runs out (380 s on Lifeboat's queue). The handler asks for an earlier redelivery, backing off
with each delivery and before the deadline where one is near
(``lifeboat.model.deadline.redelivery_delay``). Best effort: if the call fails, the message
still comes back, only later.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

_log = logging.getLogger(__name__)


class Redelivery(Protocol):
    def redeliver_in(self, receipt_handle: str, seconds: int) -> bool:
        """Make the received message visible again in ``seconds``; False if that failed."""
        ...


class SqsRedelivery:
    """:class:`Redelivery` on Lifeboat's queue, with a boto3 ``sqs`` client."""

    def __init__(self, client: Any, queue_url: str) -> None:
        self._client = client
        self._queue_url = queue_url

    def redeliver_in(self, receipt_handle: str, seconds: int) -> bool:
        try:
            self._client.change_message_visibility(
                QueueUrl=self._queue_url,
                ReceiptHandle=receipt_handle,
                VisibilityTimeout=max(0, int(seconds)),
            )
        except Exception as error:  # best effort: the queue's own timeout still applies
            _log.warning("could not shorten the message's visibility: %r", error)
            return False
        return True
