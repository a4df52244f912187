"""``lifeboat.model.deadline``: how hard to try before a notice's deadline, on an injected clock
(every function takes ``now``), at the edges of each rule: the queue's visibility timeout
(380 s), the handling margin (5 s), the in-process patience (20 s), the doubling backoff."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from cfnlint.decode import decode_str  # type: ignore[import-untyped]  # cfn-lint is untyped

from lifeboat.model.deadline import (
    DISTANT_REDELIVERIES,
    HANDLING_MARGIN,
    QUEUE_VISIBILITY_TIMEOUT,
    RETRY_PATIENCE,
    is_near,
    redelivery_delay,
    retry_window,
)
from tests.support.paths import TEMPLATE

NOW = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)


def seconds(n: float) -> timedelta:
    return timedelta(seconds=n)


@pytest.mark.parametrize(
    ("deadline", "near"),
    [
        (None, False),
        (NOW, False),  # already due: nothing to hurry for
        (NOW - seconds(1), False),
        (NOW + seconds(1), True),
        (NOW + QUEUE_VISIBILITY_TIMEOUT - seconds(1), True),
        (NOW + QUEUE_VISIBILITY_TIMEOUT, False),  # the queue alone brings it back in time
        (NOW + QUEUE_VISIBILITY_TIMEOUT + seconds(1), False),
    ],
)
def test_a_deadline_is_near_when_the_queue_alone_would_return_the_message_too_late(
    deadline: datetime | None, near: bool
) -> None:
    assert is_near(deadline, NOW) is near


@pytest.mark.parametrize(
    ("left", "window"),
    [
        (120, RETRY_PATIENCE),  # a fresh two-minute warning: the whole patience
        (RETRY_PATIENCE.total_seconds() + 5, RETRY_PATIENCE),
        (RETRY_PATIENCE.total_seconds() + 4, RETRY_PATIENCE - seconds(1)),
        (8, seconds(3)),  # the margin kept back for the handling itself
        (5.5, seconds(0.5)),
        (HANDLING_MARGIN.total_seconds(), None),  # nothing left after the margin
        (3, None),
    ],
)
def test_the_retry_window_is_the_patience_or_what_the_deadline_leaves_after_the_margin(
    left: float, window: timedelta | None
) -> None:
    assert retry_window(NOW + seconds(left), NOW) == window


@pytest.mark.parametrize("deadline", [None, NOW - seconds(1), NOW + QUEUE_VISIBILITY_TIMEOUT])
def test_without_a_near_deadline_there_is_no_window_and_the_redelivery_backs_off_from_10_s(
    deadline: datetime | None,
) -> None:
    """Issue 36.1: a failed message comes back in seconds, not after the visibility timeout;
    without a near deadline from 10 s, doubling, never later than the queue would bring it."""
    assert retry_window(deadline, NOW) is None
    delays = [redelivery_delay(deadline, NOW, receive_count=n) for n in range(1, 11)]
    assert delays == [10, 20, 40, 80, 160, 320, 380, 380, 380, 380]
    assert redelivery_delay(deadline, NOW, receive_count=500) == 380  # exponent capped


def test_the_default_ten_deliveries_of_a_lasting_failure_take_about_half_an_hour() -> None:
    """DISTANT_REDELIVERIES is what nine waits between ten deliveries add up to."""
    waits = sum(redelivery_delay(None, NOW, receive_count=n) for n in range(1, 10))
    assert seconds(waits) == DISTANT_REDELIVERIES
    assert 25 * 60 <= waits <= 35 * 60


@pytest.mark.parametrize(
    ("receive_count", "delay"),
    [(0, 1), (1, 1), (2, 2), (3, 4), (4, 8), (5, 16), (6, 32), (7, 64)],
)
def test_redelivery_backs_off_doubling_with_each_delivery(receive_count: int, delay: int) -> None:
    deadline = NOW + seconds(300)
    assert redelivery_delay(deadline, NOW, receive_count) == delay


def test_redelivery_never_comes_later_than_the_margin_before_the_deadline() -> None:
    deadline = NOW + seconds(40)
    assert redelivery_delay(deadline, NOW, receive_count=7) == 35
    assert redelivery_delay(deadline, NOW, receive_count=60) == 35  # exponent capped
    assert redelivery_delay(NOW + seconds(3), NOW, receive_count=1) == 0  # at once


def test_a_two_minute_warning_gets_about_seven_deliveries() -> None:
    """The docstring's claim, on the injected clock: deliveries at the backoff, each
    handled at once, until the deadline's margin."""
    deadline = NOW + seconds(120)
    now, deliveries = NOW, 1
    while (delay := redelivery_delay(deadline, now, deliveries)) > 0 and now + seconds(
        delay
    ) < deadline:
        now += seconds(delay)
        deliveries += 1
    assert 6 <= deliveries <= 8


def test_the_in_process_patience_is_a_third_of_the_functions_timeout() -> None:
    """RETRY_PATIENCE: a batch that waits its retries out still returns, and reports its
    failures, within the function's timeout (template.yaml, InterruptionFunction)."""
    template, errors = decode_str(TEMPLATE.read_text())
    assert not errors and template is not None
    timeout = template["Resources"]["InterruptionFunction"]["Properties"]["Timeout"]
    window = retry_window(NOW + QUEUE_VISIBILITY_TIMEOUT - seconds(1), NOW)
    assert window == seconds(timeout / 3)


@pytest.mark.parametrize(
    ("time_left", "window"),
    [
        (None, RETRY_PATIENCE),  # no invocation limit known: the deadline's window
        (60.0, RETRY_PATIENCE),  # a fresh invocation leaves more than the patience
        (15.0, seconds(15) - HANDLING_MARGIN),  # the invocation ends first
        (HANDLING_MARGIN.total_seconds(), None),  # nothing left to retry in
    ],
)
def test_the_window_ends_before_the_invocation_does(
    time_left: float | None, window: timedelta | None
) -> None:
    """What the invocation leaves bounds the window too, so a message that waited it out is
    still reported failed (and brought back early) instead of lost with a timed-out run."""
    assert retry_window(NOW + seconds(110), NOW, time_left) == window
