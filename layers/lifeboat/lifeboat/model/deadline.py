"""How hard to try before a notice's deadline: in-process retries, and the next delivery.

A Spot warning gives two minutes. A message that fails comes back after the queue's
visibility timeout (380 s, six function timeouts as AWS advises for Lambda event sources):
long after the instance is gone. So a message whose deadline is nearer than that

* keeps retrying transient Kubernetes failures inside the invocation, for at most
  :data:`RETRY_PATIENCE` and never closer to the deadline than :data:`HANDLING_MARGIN`
  (:func:`retry_window`, used by ``lifeboat.kube.transport``), and
* if it fails all the same, is made visible again within seconds, backing off with each
  delivery and always before the deadline (:func:`redelivery_delay`, applied by the handler
  with ``sqs:ChangeMessageVisibility``).

A message without a near deadline (a rebalance recommendation, maintenance days away) keeps
the bounded retries of ``kube.RetryPolicy`` in-process (nothing is gained by hurrying it, and
a struggling API server is spared), and comes back after 10, 20, 40, ... seconds, at most the
queue's visibility timeout: a passing failure is retried in seconds, a lasting one still
spreads the default ten deliveries over about half an hour (:data:`DISTANT_REDELIVERIES`)
before the dead-letter queue. Pure: the clock is passed in.
"""

from __future__ import annotations

from datetime import datetime, timedelta

# template.yaml, Queue.VisibilityTimeout (a test keeps the two equal).
QUEUE_VISIBILITY_TIMEOUT = timedelta(seconds=380)
# The most one message spends retrying in-process: a third of the function's 60 s timeout,
# so a batch that waits it out still returns (and reports its failures) in time.
RETRY_PATIENCE = timedelta(seconds=20)
# What handling a message takes once the API server answers again (a few requests).
HANDLING_MARGIN = timedelta(seconds=5)
# The first redelivery after a failure, doubled with each further delivery.
FIRST_REDELIVERY = timedelta(seconds=1)
# The first redelivery of a failed message without a near deadline, doubled with each further
# delivery up to the queue's visibility timeout.
FIRST_DISTANT_REDELIVERY = timedelta(seconds=10)
# What the default MaxReceiveCount (10) spends on a lasting failure of such a message: the
# nine waits between its ten deliveries (10 + 20 + ... + 320 + 3 x 380 s, about 30 minutes).
DISTANT_REDELIVERIES = timedelta(seconds=10 + 20 + 40 + 80 + 160 + 320 + 3 * 380)
# A message naming several instances starts no further one when less than this is left of
# the invocation, and hands the rest on as their own messages (lifeboat.flow.split): enough for
# the instance under way to finish (bounded retries) and the rest to be scheduled.
INVOCATION_RESERVE = timedelta(seconds=15)


def is_near(deadline: datetime | None, now: datetime) -> bool:
    """True when a failed message would come back after ``deadline`` by the queue alone."""
    return deadline is not None and now < deadline < now + QUEUE_VISIBILITY_TIMEOUT


def retry_window(
    deadline: datetime | None, now: datetime, time_left: float | None = None
) -> timedelta | None:
    """How long transient failures may be retried in-process (None: the policy's attempts).

    ``time_left``: seconds left of the invocation, when known; the window ends
    :data:`HANDLING_MARGIN` before it, so a message that waited it out is still reported
    as failed (and made visible again early) rather than lost with a timed-out invocation."""
    if deadline is None or not is_near(deadline, now):
        return None
    window = min(RETRY_PATIENCE, deadline - now - HANDLING_MARGIN)
    if time_left is not None:
        window = min(window, timedelta(seconds=time_left) - HANDLING_MARGIN)
    return window if window > timedelta(0) else None


def redelivery_delay(deadline: datetime | None, now: datetime, receive_count: int) -> int:
    """Seconds until a failed message should be delivered again.

    Near its deadline: 1, 2, 4, 8, ... seconds for the 1st, 2nd, 3rd, 4th delivery, never
    later than :data:`HANDLING_MARGIN` before the deadline: a two-minute warning gets about
    seven deliveries, inside the template's default ``MaxReceiveCount`` of 10. Otherwise
    10, 20, 40, ... seconds, at most the queue's visibility timeout.
    """
    doublings = 2 ** max(0, min(receive_count - 1, 16))
    if deadline is None or not is_near(deadline, now):
        distant = min(FIRST_DISTANT_REDELIVERY * doublings, QUEUE_VISIBILITY_TIMEOUT)
        return int(distant.total_seconds())
    backoff = FIRST_REDELIVERY * doublings
    latest = deadline - now - HANDLING_MARGIN
    return max(0, int(min(backoff, latest).total_seconds()))
