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

from lifeboat.model.notice import Kind, Notice
from lifeboat.wakeup.codec import Task, Wakeup

# Instances one message acts on. bench.health_split (10 ms per API request, 20 NodePools with
# 20 % budgets) measured 500 instances in one message at 90 s, 1.5 times the 60 s timeout
# (0.18 s each); with 50, the event's message took 11 s and the batch of its nine remainders,
# handled side by side, 16 s: 0.27 of the timeout, on a busy 2-core machine.
NOTICES_PER_MESSAGE = 50
# The event id of a sweep part's notice (the sweep's, about no instance).
SWEEP_PART_ID = "instance-status-sweep"


def split(
    notices: Sequence[Notice], limit: int = NOTICES_PER_MESSAGE
) -> tuple[list[Notice], list[Wakeup]]:
    """The notices of the first ``limit`` instances (acted on now) and the rest handed on.
    Counted in instances: a sweep may tell two things of one instance (impaired, and a
    scheduled event), which stay together."""
    limit = max(1, min(limit, NOTICES_PER_MESSAGE))
    first: set[str] = set()
    now: list[Notice] = []
    rest: list[Notice] = []
    for notice in notices:
        instance = notice.instance_id
        if instance is None or instance in first or len(first) < limit:
            if instance is not None:
                first.add(instance)
            now.append(notice)
        else:
            rest.append(notice)
    return now, remainders(rest, limit)


def remainders(notices: Sequence[Notice], limit: int = NOTICES_PER_MESSAGE) -> list[Wakeup]:
    """``notices`` as wake-ups of at most ``limit`` instances each, one per run of notices
    sharing an event (one message's notices always do), due at the event's time: Scheduler
    delivers a wake-up due in the past a minute from now, and the due time is the same
    whenever the message is handled. What an instance status sweep told (EC2's events and
    impairments) is never copied into a wake-up: its instances are handed on as sweep parts,
    for which EC2 is asked again (:func:`sweep_parts`)."""
    limit = max(1, min(limit, NOTICES_PER_MESSAGE))
    told_by_ec2 = [n for n in notices if _from_status(n)]
    notices = [n for n in notices if not _from_status(n)]
    planned: list[Wakeup] = sweep_parts(told_by_ec2, limit)
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


def sweep_parts(notices: Sequence[Notice], limit: int = NOTICES_PER_MESSAGE) -> list[Wakeup]:
    """The instances of a sweep's ``notices`` (each once, in order) as ``sweep-part``
    wake-ups of at most ``limit`` instances: the sweep's notice about no instance, due when
    EC2 answered (the same whenever the message is handled), and the instances' ids."""
    limit = max(1, min(limit, NOTICES_PER_MESSAGE))
    instances = list(dict.fromkeys(n.instance_id for n in notices if n.instance_id))
    if not instances:
        return []
    observed = max(_observed(n) for n in notices)
    sweep = Notice(kind=Kind.INSTANCE_IMPAIRED, event_id=SWEEP_PART_ID, event_time=observed)
    return [
        Wakeup(Task.SWEEP_PART, sweep, observed, instances=tuple(instances[at : at + limit]))
        for at in range(0, len(instances), limit)
    ]


def _from_status(notice: Notice) -> bool:
    """Told by DescribeInstanceStatus (the sweep): an impairment, or an EC2 event."""
    return notice.kind is Kind.INSTANCE_IMPAIRED or notice.ec2_event


def _observed(notice: Notice) -> datetime:
    """When EC2 answered about a sweep's notice (an impairment's ``deadline``)."""
    if notice.kind is Kind.INSTANCE_IMPAIRED and notice.deadline is not None:
        return notice.deadline
    return notice.event_time


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
