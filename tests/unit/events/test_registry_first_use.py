"""The registry's parsers imported on first use (lifeboat.events.registry.lookup): two
threads asking first for one kind, and a parser module that fails to import."""

from __future__ import annotations

import sys
import threading
from datetime import UTC, datetime

import pytest

from lifeboat.events import parse_message, registry
from lifeboat.model.notice import MalformedMessage
from tests.support.events import sample

REBALANCE = ("aws.ec2", "EC2 Instance Rebalance Recommendation")
MODULE = "lifeboat.events.rebalance_recommendation"


def test_two_threads_asking_first_for_one_kind_get_one_parser(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A batch's messages are read on several threads: the first look-ups of one kind,
    side by side, import its module once and hand both the same parser."""
    monkeypatch.delitem(registry._loaded, REBALANCE, raising=False)
    start = threading.Barrier(8)
    found: list[object] = []

    def first_lookup() -> None:
        start.wait()
        found.append(registry.lookup(*REBALANCE))

    threads = [threading.Thread(target=first_lookup) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(found) == 8 and found[0] is not None
    assert all(parser is found[0] for parser in found)


def test_a_parser_that_cannot_be_imported_fails_the_message_and_is_tried_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A kind's module failing to import (a broken deployment) is no rejection, which would
    delete the message: the message fails (back to the queue, then the dead-letter queue),
    nothing is remembered, and the next message of the kind imports it again."""
    monkeypatch.delitem(registry._loaded, REBALANCE, raising=False)
    monkeypatch.setitem(sys.modules, MODULE, None)  # import of it raises ImportError
    now = datetime.now(UTC)
    with pytest.raises(ImportError) as raised:
        parse_message(sample("rebalance-recommendation"), received_at=now)
    assert not isinstance(raised.value, MalformedMessage)
    assert REBALANCE not in registry._loaded
    monkeypatch.delitem(sys.modules, MODULE)
    [notice] = parse_message(sample("rebalance-recommendation"), received_at=now)
    assert notice.kind.value == "rebalance-recommendation"
