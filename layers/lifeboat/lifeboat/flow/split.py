"""A notice naming many instances, split so each message finishes well inside the timeout.

One AWS Health event can name hundreds of instances (a retirement wave, a host fleet's
maintenance). Each costs a dozen API requests and a pool lease, so 500 of them in one
message took about 90 s against the function's 60 s timeout: the invocation timed out with
every message of its batch (a Spot warning among them), and the instances not reached
waited for the queue's 380 s visibility timeout to come round again.

So one message acts on at most :data:`NOTICES_PER_MESSAGE` instances (``bench.health_split``
measures what that costs) and hands the others on as ``remainder`` wake-ups of at most as
many instances each, through the same Scheduler and queue as every follow-up. The rest is
handed on *before* the first instance is acted on, so the message is deleted only once the
instances it names are acted on or safely enqueued; a message that fails comes back, and
hands the same rest on again.

Nothing is done twice:

* a remainder's notices keep the event's id, so each (event, instance) goes through the
  ledger under the same key as if the event had never been split: a redelivered original,
  or a remainder delivered twice, finds its instances handled and reports duplicates;
* a remainder's name derives from the event and the instances it names, and its due time
  from the event's time, never from the clock: a redelivered original schedules the same
  remainders under the same names (Scheduler answers ConflictException while they wait).

A remainder is untrusted input like any message: ``lifeboat.wakeup.codec.decode`` validates it
(at most :data:`NOTICES_PER_MESSAGE` well-formed, distinct instance ids, no lifecycle hook)
and each of its notices is triaged as the AWS event it came from (account, region, managed
tag, cluster), then judged in order like any other (budgets are weighed per instance, under
the pool's lease). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from lifeboat.events.notice import Notice
from lifeboat.wakeup.codec import Task, Wakeup

# Instances one message acts on. bench.health_split (10 ms per API request, 20 NodePools with
# 20 % budgets) measured 500 instances in one message at 90 s, 1.5 times the 60 s timeout
# (0.18 s each); with 50, the event's message took 11 s and the batch of its nine remainders,
# handled side by side, 16 s: 0.27 of the timeout, on a busy 2-core machine.
NOTICES_PER_MESSAGE = 50


def split(
    notices: Sequence[Notice], limit: int = NOTICES_PER_MESSAGE
) -> tuple[list[Notice], list[Wakeup]]:
    """The first ``limit`` notices (acted on now) and the rest as remainder wake-ups."""
    limit = max(1, min(limit, NOTICES_PER_MESSAGE))
    return list(notices[:limit]), remainders(notices[limit:], limit)


def remainders(notices: Sequence[Notice], limit: int = NOTICES_PER_MESSAGE) -> list[Wakeup]:
    """``notices`` as wake-ups of at most ``limit`` instances each, one per run of notices
    sharing an event (one message's notices always do), due at the event's time: Scheduler
    delivers a wake-up due in the past a minute from now, and the due time is the same
    whenever the message is handled."""
    limit = max(1, min(limit, NOTICES_PER_MESSAGE))
    planned: list[Wakeup] = []
    chunk: list[Notice] = []
    for notice in notices:
        if notice.instance_id is None:
            continue  # a no-op about no instance was already reported with its message
        if chunk and (len(chunk) == limit or _template(chunk[0]) != _template(notice)):
            planned.append(_wakeup(chunk))
            chunk = []
        chunk.append(notice)
    if chunk:
        planned.append(_wakeup(chunk))
    return planned


def expand(wakeup: Wakeup) -> list[Notice]:
    """A remainder's notices, one per instance, each as the event's parser made it."""
    return [replace(wakeup.notice, instance_id=instance) for instance in wakeup.instances]


def _template(notice: Notice) -> Notice:
    return replace(notice, instance_id=None)


def _wakeup(chunk: list[Notice]) -> Wakeup:
    first = chunk[0]
    instances = tuple(n.instance_id for n in chunk if n.instance_id is not None)
    return Wakeup(Task.REMAINDER, _template(first), _due(first), instances=instances)


def _due(notice: Notice) -> datetime:
    return notice.event_time
