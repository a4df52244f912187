"""How long the calls made for the message being handled may keep retrying.

A Spot warning gives two minutes; a throttled API (EC2's ``RequestLimitExceeded``, DynamoDB's
``ThrottlingException``, the API server's 429) is exactly what a large Spot reclaim brings.
The pipeline opens a window per message (:func:`retrying_for`, sized by
``lifeboat.model.deadline.retry_window`` from the message's deadline and what is left of the
invocation); every client then retries its transient failures, with backoff, for as long as
the window allows, and no longer:

* the Kubernetes client (``lifeboat.kube.transport.KubeTransport.request``),
* the boto3 clients, through the retry hook of ``lifeboat.aws.retries``.

The window is a context variable: each thread of a batch handles its own message, so each
sees its own window; outside any window, clients keep their bounded attempts.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import timedelta

# Until when the current thread's calls keep retrying, on which clock (None: attempts).
_retry_until: ContextVar[tuple[float, Callable[[], float]] | None] = ContextVar(
    "lifeboat_retry_until", default=None
)


@contextmanager
def retrying_for(
    window: timedelta | None, *, clock: Callable[[], float] = time.monotonic
) -> Iterator[None]:
    """Within this block, this thread's transient failures are retried for up to ``window``
    (from now on ``clock``, the one the clients' ``sleep`` moves: real time in production)
    instead of each client's bounded attempts; None keeps the attempts."""
    until = None if window is None else (clock() + window.total_seconds(), clock)
    token = _retry_until.set(until)
    try:
        yield
    finally:
        _retry_until.reset(token)


def may_retry_within_window(delay: float) -> bool:
    """Whether a retry after ``delay`` seconds still starts inside the current window."""
    window = _retry_until.get()
    if window is None:
        return False
    until, clock = window
    return clock() + delay < until


def seconds_left() -> float | None:
    """Seconds left of the current window (None: no window is open)."""
    window = _retry_until.get()
    if window is None:
        return None
    until, clock = window
    return max(0.0, until - clock())
