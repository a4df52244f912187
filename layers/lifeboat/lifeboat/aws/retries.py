"""How Lifeboat's AWS calls retry: a few times always, and for as long as a deadline allows.

A large Spot reclaim is when an account's EC2 API is throttled (``RequestLimitExceeded``:
EC2 meters each account and region with token buckets, 100 Describe* requests and 20 a
second more, shared with Karpenter and every other tool of the account) and when DynamoDB
may throttle too. Each client Lifeboat makes (:func:`make_client`) has

* short **timeouts** (botocore's default is 60 s to connect and 60 s to read: one hung
  call would use up the whole invocation), and
* one retry handler, :class:`DeadlineRetries`, on botocore's retry event: the failures
  botocore's standard mode retries (throttled, transient, 5xx, modeled as retryable) are
  tried again after a full-jitter backoff of ``BASE_DELAY * 2^attempt``, at most
  :data:`MAX_DELAY`: :data:`ATTEMPTS` tries in all, and beyond that for as long as the window
  of the message being handled allows (``lifeboat.model.patience``: its deadline and what
  is left of the invocation), and no longer.

botocore's standard mode itself is left one attempt: its backoff (up to 1 s, then 2 s, ...
capped at 20 s) spends a Spot warning's seconds where a throttled bucket refills 20 tokens
a second. ``adaptive`` mode is not used either: its client-side rate limiter makes a call
*wait* for a token, with no bound a deadline could set, and each Lambda environment keeps
its own bucket, so it would not spread the account's load anyway.
"""

from __future__ import annotations

import random
from typing import Any

from botocore.config import Config
from botocore.retries.standard import (
    ModeledRetryableChecker,
    OrRetryChecker,
    RetryEventAdapter,
    ThrottledRetryableChecker,
    ThrottlingStatusCodeChecker,
    TransientRetryableChecker,
)

from lifeboat.model.patience import may_retry_within_window

# Tries of one call outside a deadline's window (botocore's own default): beyond them, only
# a message's deadline window retries.
ATTEMPTS = 3
CONNECT_TIMEOUT = 3.0
READ_TIMEOUT = 10.0
# The backoff: full jitter over BASE_DELAY * 2^attempt, at most MAX_DELAY (botocore's own
# cap is 20 s, a sixth of a Spot warning).
BASE_DELAY = 0.2
MAX_DELAY = 2.0


def client_config() -> Config:
    """The botocore configuration of every client Lifeboat makes: standard mode left one
    attempt (its retry handler stays registered and answers "no"), so
    :class:`DeadlineRetries` decides every retry."""
    return Config(
        retries={"mode": "standard", "total_max_attempts": 1},
        connect_timeout=CONNECT_TIMEOUT,
        read_timeout=READ_TIMEOUT,
    )


class DeadlineRetries:
    """A ``needs-retry`` handler asked after botocore's standard one (which, left one
    attempt, never retries): the delay before the next try, or None (no retry). A retry for
    a failure the standard mode retries (throttled, transient, 5xx, modeled as retryable),
    while fewer than :data:`ATTEMPTS` tries were made or the drawn delay still ends inside
    the current window."""

    def __init__(self, rng: random.Random | None = None) -> None:
        self._adapter = RetryEventAdapter()
        self._retryable = OrRetryChecker(
            [
                TransientRetryableChecker(),
                ThrottledRetryableChecker(),
                ThrottlingStatusCodeChecker(),
                ModeledRetryableChecker(),
            ]
        )
        # SystemRandom: environments restored from one SnapStart snapshot must not draw
        # the same backoff and retry in step.
        self._rng = rng or random.SystemRandom()

    def __call__(self, **kwargs: Any) -> float | None:
        context = self._adapter.create_retry_context(**kwargs)
        if not self._retryable.is_retryable(context):
            return None
        attempt = max(1, int(context.attempt_number))
        delay = self._rng.uniform(0, min(MAX_DELAY, BASE_DELAY * 2 ** min(attempt, 30)))
        if attempt < ATTEMPTS or may_retry_within_window(delay):
            return delay
        return None


def retry_within_deadline(client: Any, rng: random.Random | None = None) -> Any:
    """``client`` with :class:`DeadlineRetries` deciding its retries (made with
    :func:`client_config`)."""
    service = client.meta.service_model.service_id.hyphenize()
    client.meta.events.register_last(
        f"needs-retry.{service}",
        DeadlineRetries(rng),
        unique_id=f"lifeboat-deadline-retries-{service}",
    )
    return client


def make_client(session: Any, service: str, region: str) -> Any:
    """A boto3 client of ``session`` with Lifeboat's retries and timeouts."""
    client = session.client(service, region_name=region, config=client_config())
    return retry_within_deadline(client)
