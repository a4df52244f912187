"""lifeboat.aws.completions: the ledger's completions written together, each still returning
only once written (or raising, as a failed UpdateItem would)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import pytest

from lifeboat.aws.completions import (
    BATCH_LIMIT,
    UNPROCESSED_TRIES,
    CompletionsNotWritten,
    GroupCommit,
    Item,
    batch_writer,
)


class SlowWrites:
    """Holds the first write until released, so others queue behind it."""

    def __init__(self, fail: bool = False) -> None:
        self.groups: list[list[Item]] = []
        self.release = threading.Event()
        self.fail = fail

    def __call__(self, items: Sequence[Item]) -> None:
        self.groups.append(list(items))
        if len(self.groups) == 1:
            assert self.release.wait(5)
        if self.fail:
            raise RuntimeError("ProvisionedThroughputExceededException")


def _put_all(commits: GroupCommit, count: int) -> tuple[list[threading.Thread], list[Any]]:
    errors: list[Any] = []

    def put(n: int) -> None:
        try:
            commits.put({"id": {"S": f"k{n}"}})
        except Exception as error:
            errors.append(error)

    threads = [threading.Thread(target=put, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    return threads, errors


def _wait_queued(commits: GroupCommit, count: int) -> None:
    for _ in range(500):
        with commits._cond:
            if len(commits._queue) >= count:
                return
        threading.Event().wait(0.01)
    raise AssertionError("the completions did not queue")


def test_completions_that_wait_behind_a_write_go_together() -> None:
    """40 completions: one write under way, the 39 behind it in two requests (25 + 14)
    instead of 39 UpdateItems; every put returns only once its item is written."""
    writes = SlowWrites()
    commits = GroupCommit(writes)
    first, _ = _put_all(commits, 1)
    _wait_writing(writes)
    rest, errors = _put_all(commits, 39)
    _wait_queued(commits, 39)
    writes.release.set()
    for thread in first + rest:
        thread.join(5)
    assert errors == []
    assert [len(group) for group in writes.groups] == [1, BATCH_LIMIT, 39 - BATCH_LIMIT]
    written = {item["id"]["S"] for group in writes.groups for item in group}
    assert written == {f"k{n}" for n in range(39)} | {"k0"}


def _wait_writing(writes: SlowWrites) -> None:
    for _ in range(500):
        if writes.groups:
            return
        threading.Event().wait(0.01)
    raise AssertionError("no write started")


def test_a_failed_write_fails_every_completion_of_its_group() -> None:
    writes = SlowWrites(fail=True)
    commits = GroupCommit(writes)
    first, first_errors = _put_all(commits, 1)
    _wait_writing(writes)
    rest, errors = _put_all(commits, 3)
    _wait_queued(commits, 3)
    writes.release.set()
    for thread in first + rest:
        thread.join(5)
    assert len(first_errors) == 1 and len(errors) == 3


def test_a_lone_completion_is_one_request() -> None:
    writes: list[list[Item]] = []
    commits = GroupCommit(lambda items: writes.append(list(items)))
    commits.put({"id": {"S": "k"}})
    commits.put({"id": {"S": "l"}})
    assert [len(group) for group in writes] == [1, 1]


class Dynamo:
    """BatchWriteItem leaving the first ``unprocessed`` answers' items unprocessed."""

    def __init__(self, unprocessed: int) -> None:
        self.unprocessed = unprocessed
        self.calls: list[int] = []

    def batch_write_item(self, RequestItems: dict[str, Any]) -> dict[str, Any]:
        requests = RequestItems["ledger"]
        self.calls.append(len(requests))
        if len(self.calls) <= self.unprocessed:
            return {"UnprocessedItems": {"ledger": requests[1:]}}
        return {"UnprocessedItems": {}}


def test_unprocessed_items_are_written_again() -> None:
    dynamo = Dynamo(unprocessed=2)
    write = batch_writer(dynamo, "ledger", sleep=lambda _s: None)
    write([{"id": {"S": "a"}}, {"id": {"S": "b"}}, {"id": {"S": "c"}}])
    assert dynamo.calls == [3, 2, 1]


def test_items_left_unprocessed_after_every_try_raise() -> None:
    dynamo = Dynamo(unprocessed=10**6)
    write = batch_writer(dynamo, "ledger", sleep=lambda _s: None)
    with pytest.raises(CompletionsNotWritten):
        write([{"id": {"S": str(n)}} for n in range(10)])
    assert len(dynamo.calls) == UNPROCESSED_TRIES
