"""The ledger's "done" records written together: one ``BatchWriteItem`` for the notices that
finish at about the same time, instead of one ``UpdateItem`` each.

Powertools' idempotency makes two DynamoDB requests per notice: a conditional ``PutItem``
(the record "in progress": what keeps two deliveries from acting at once, so it cannot be
shared) and, once handled, an ``UpdateItem`` that marks it completed. A batch's messages are
handled side by side and finish within milliseconds of each other; in a storm, every
environment's do. Each request costs the function's CPU (botocore serialises, signs and parses
it: about 2 ms, measured in ``bench``) and a round trip, and in a storm that CPU is what the
next warnings' taints wait for. :class:`GroupCommit` writes the completions that are waiting
while one write is under way as one ``BatchWriteItem`` (up to 25 items a request), so a burst
of N completions costs a few requests, and a lone one costs one, as before.

Nothing is weakened: each completion still returns only once DynamoDB has stored it (or raises,
as a failed ``UpdateItem`` would: Powertools then fails the message and SQS retries it); the
record stored is the one Powertools' ``UpdateItem`` leaves (key, expiry, status, data).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lifeboat.errors import RetryLater

# BatchWriteItem's limit of items per request.
BATCH_LIMIT = 25
# Tries for the items DynamoDB leaves unprocessed (throttled within the batch), with a backoff
# of UNPROCESSED_DELAY * 2^try.
UNPROCESSED_TRIES = 5
UNPROCESSED_DELAY = 0.05

Item = Mapping[str, Any]


class CompletionsNotWritten(RetryLater):
    """DynamoDB left some completions unwritten after every try."""


@dataclass
class _Pending:
    item: Item
    done: bool = False
    error: BaseException | None = None


class GroupCommit:
    """Writes items handed to :meth:`put` from many threads, together: one thread writes what
    is queued (at most :data:`BATCH_LIMIT` a request) while the others wait; a thread whose item
    was not in that write leads the next. ``put`` returns once its item is written."""

    def __init__(self, write: Callable[[Sequence[Item]], None]) -> None:
        self._write = write
        self._queue: list[_Pending] = []
        self._writing = False
        self._cond = threading.Condition()
        self.writes = 0  # requests made (tests, the bench)

    def put(self, item: Item) -> None:
        mine = _Pending(item)
        with self._cond:
            self._queue.append(mine)
            while self._writing and not mine.done:
                self._cond.wait()
            if not mine.done:  # lead: write what is queued, this item among it
                self._writing = True
                group, self._queue = self._queue, []
        if not mine.done:
            self._lead(group)
        if mine.error is not None:
            raise mine.error

    def _lead(self, group: list[_Pending]) -> None:
        error: BaseException | None = None
        try:
            for start in range(0, len(group), BATCH_LIMIT):
                self.writes += 1
                self._write([p.item for p in group[start : start + BATCH_LIMIT]])
        except BaseException as failed:  # every waiting item learns it was not written
            error = failed
        with self._cond:
            for pending in group:
                pending.done, pending.error = True, error
            self._writing = False
            self._cond.notify_all()


def batch_writer(
    client: Any, table: str, sleep: Callable[[float], None] = time.sleep
) -> Callable[[Sequence[Item]], None]:
    """Writes items to ``table`` with ``BatchWriteItem``, trying the unprocessed ones again."""

    def write(items: Sequence[Item]) -> None:
        requests: list[Any] = [{"PutRequest": {"Item": dict(item)}} for item in items]
        for attempt in range(UNPROCESSED_TRIES):
            answer = client.batch_write_item(RequestItems={table: requests})
            requests = (answer.get("UnprocessedItems") or {}).get(table) or []
            if not requests:
                return
            sleep(UNPROCESSED_DELAY * 2**attempt)
        raise CompletionsNotWritten(f"DynamoDB left {len(requests)} ledger records unwritten")

    return write
