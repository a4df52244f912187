"""How Lifeboat's AWS calls retry: botocore's standard mode, then the message's deadline.

A large Spot reclaim is when an account's EC2 API is throttled (``RequestLimitExceeded``:
EC2 meters each account and region with token buckets, 100 Describe* requests and 20 a
second more, shared with Karpenter and every other tool of the account) and when DynamoDB
may throttle too. Each client Lifeboat makes is configured by :func:`client_config`:

* botocore's **standard** retry mode, :data:`ATTEMPTS` tries with its exponential backoff
  and full jitter, for throttling, transient and 5xx errors, whatever the message. Not
  ``adaptive``: its client-side rate limiter makes a call *wait* for a token, with no
  bound a deadline could set, and each Lambda environment keeps its own bucket, so it
  would not spread the account's load anyway.
* short **timeouts** (botocore's default is 60 s to connect and 60 s to read: one hung
  call would use up the whole invocation).

and :func:`retry_within_deadline` adds one hook to botocore's retry event: once the standard
mode has given up, a retryable failure is tried again, with full-jitter backoff capped at
:data:`MAX_DELAY`, for as long as the window of the message being handled allows
(``lifeboat.model.patience``: its deadline and what is left of the invocation), and no
longer. A message without a near deadline keeps the standard attempts only.
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

# Tries of one call by botocore's standard mode (its own default, for every service but
# DynamoDB's 4): beyond them, only a message's deadline window retries.
ATTEMPTS = 3
CONNECT_TIMEOUT = 3.0
READ_TIMEOUT = 10.0
# The backoff of the window's retries: full jitter over base * 2^attempt, at most MAX_DELAY
# (botocore's own cap is 20 s, a sixth of a Spot warning).
BASE_DELAY = 0.1
MAX_DELAY = 2.0


def client_config() -> Config:
    """The botocore configuration of every client Lifeboat makes."""
    return Config(
        retries={"mode": "standard", "total_max_attempts": ATTEMPTS},
        connect_timeout=CONNECT_TIMEOUT,
        read_timeout=READ_TIMEOUT,
    )


class DeadlineRetries:
    """A ``needs-retry`` handler asked after botocore's standard one: None (no retry) unless
    the failure is one the standard mode retries (throttled, transient, 5xx, modeled as
    retryable) and a retry after the drawn delay still starts inside the current window."""

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
        return delay if may_retry_within_window(delay) else None


def retry_within_deadline(client: Any, rng: random.Random | None = None) -> Any:
    """``client`` with :class:`DeadlineRetries` asked after its standard retries."""
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
