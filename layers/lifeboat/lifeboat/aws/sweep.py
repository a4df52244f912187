"""The instance status sweep: EC2's own view of instance health, as Karpenter's poller reads it.

Karpenter's AWS provider (v1.12+, ``pkg/controllers/interruption/instancestatus_controller.go``)
calls ``DescribeInstanceStatus`` every minute and deletes the NodeClaim of every instance
with a scheduled event, or impaired for ``UnhealthyThreshold`` (120 s). Beside it, scheduled
maintenance never waits for a NodePool's budgets and windows; with its permission denied,
nobody replaces impaired instances. The sweep gives Lifeboat both: an EventBridge Scheduler
schedule (template.yaml ``InstanceStatusSweepSchedule``) sends :func:`sweep_request` to the
queue at the ``InstanceStatusSweepRate``; the pipeline answers it with
:meth:`Ec2InstanceStatuses.pages` and reads the pages like any other message
(``lifeboat.events.parse_statuses``), so the notices go through the same triage (only
instances of the managed clusters go on), resolve, decide, act, ledger and reports.

Each of Karpenter's three filter sets (``lifeboat.events.instance_status.FILTER_SETS``) is
one paginated call of up to 1,000 results: EC2 filters server-side, so a sweep costs three
calls whatever the fleet size while fewer than 1,000 instances per set are in trouble.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any, Protocol

from lifeboat.events.base import MAX_REASON, clip
from lifeboat.events.instance_status import FILTER_SETS, InstanceStatus
from lifeboat.events.notice import Kind, Notice
from lifeboat.kube import nodes
from lifeboat.kube.objects import Obj
from lifeboat.model.instances import instance_id_from_provider_id
from lifeboat.model.settings import Settings

SOURCE = "lifeboat.aws.sweep"
DETAIL_TYPE = "Instance Status Sweep"
# DescribeInstanceStatus's largest page.
PAGE_SIZE = 1000


def is_sweep_request(message: dict[str, Any]) -> bool:
    """Whether a message asks for a sweep (what the schedule sends)."""
    return message.get("source") == SOURCE and message.get("detail-type") == DETAIL_TYPE


def sweep_request(request_id: str, time: str) -> dict[str, Any]:
    """The message the schedule sends (its ``Input``, with Scheduler's context attributes
    ``<aws.scheduler.execution-id>`` and ``<aws.scheduler.scheduled-time>`` as id and time)."""
    return {
        "version": "0",
        "id": request_id,
        "source": SOURCE,
        "detail-type": DETAIL_TYPE,
        "time": time,
        "detail": {},
    }


class InstanceStatuses(Protocol):
    """Where the sweep reads instance status from (EC2, or a test's response)."""

    def pages(self) -> list[dict[str, Any]]: ...


class Ec2InstanceStatuses:
    """``DescribeInstanceStatus`` with Karpenter's three filter sets, every page of each.

    ``IncludeAllInstances`` is left false, as Karpenter leaves it: only running instances
    are described (a stopped or terminated one is a state change's business).
    """

    def __init__(self, ec2_client: Any) -> None:
        self._ec2 = ec2_client
        self.calls = 0

    def pages(self) -> list[dict[str, Any]]:
        pages: list[dict[str, Any]] = []
        paginator = self._ec2.get_paginator("describe_instance_status")
        for filters in FILTER_SETS:
            for page in paginator.paginate(Filters=filters, MaxResults=PAGE_SIZE):
                self.calls += 1
                pages.append(page)
        return pages


def too_recently_impaired(notice: Notice, settings: Settings) -> str | None:
    """Why an ``instance-impaired`` notice is not acted on yet: impaired for less than the
    ``impaired_threshold`` when EC2 reported it (Karpenter: ``clk.Since(ImpairedSince) >=
    UnhealthyThreshold``). Checked before the ledger, so the next sweep sees it again."""
    if notice.kind is not Kind.INSTANCE_IMPAIRED or notice.ignore_reason:
        return None
    observed = notice.deadline or notice.event_time
    elapsed = observed - notice.event_time
    if elapsed >= settings.impaired_threshold:
        return None
    return (
        f"impaired for {int(elapsed.total_seconds())} s, under the "
        f"{int(settings.impaired_threshold.total_seconds())} s threshold: looking again at "
        "the next sweep"
    )


# What a vanished event's notice says it is (its ``detail``).
VANISHED = "EC2 event no longer reported"


def complete(pages: list[dict[str, Any]]) -> bool:
    """Whether ``pages`` are a whole sweep's answer: a page per filter set at least, the
    last one without a ``NextToken``. (A call that fails raises, and the sweep's message
    goes back to the queue: only a complete answer may end a maintenance by silence.)"""
    return len(pages) >= len(FILTER_SETS) and not pages[-1].get("NextToken")


def vanished(
    statuses: Iterable[InstanceStatus], marked: Iterable[Obj], observed_at: datetime
) -> list[Notice]:
    """The maintenances that ended by vanishing: each node ``marked`` with
    ``lifeboat.dev/ec2-maintenance`` (Lifeboat acted on or deferred an EC2 scheduled event
    for it) and still carrying Lifeboat's scheduled-change taint, whose instance has no
    event starting then in a complete sweep's ``statuses`` (finished or not: a finished one
    is ended by its own notice). EC2 drops a cancelled event, and a completed one after a
    while; the notice ends the maintenance as ``[Canceled]`` does. A maintenance known only
    from AWS Health never carries the label, so it never ends this way."""
    scheduled = {
        (status.instance_id, event.not_before)
        for status in statuses
        for event in status.events
        if event.not_before is not None
    }
    key = nodes.taint_key(Kind.SCHEDULED_CHANGE)
    notices = []
    for node in marked:
        start = nodes.ec2_maintenance_start(node)
        instance = instance_id_from_provider_id(str(node.get("spec", {}).get("providerID", "")))
        if start is None or instance is None or (instance, start) in scheduled:
            continue
        if nodes.is_deleting(node) or not any(t.get("key") == key for t in nodes.taints(node)):
            continue  # going anyway, or undone already (by hand, or the node was let go)
        notices.append(
            Notice(
                kind=Kind.SCHEDULED_CHANGE,
                event_id=f"vanished:{instance}:{nodes.ec2_maintenance_value(start)}",
                event_time=observed_at,
                instance_id=instance,
                deadline=start,
                detail=VANISHED,
                ends_maintenance=True,
                ec2_event=True,
            )
        )
    return notices


def unlisted(cluster: str | None, error: Exception, observed_at: datetime) -> Notice:
    """The report of a cluster whose marked nodes could not be listed: nothing ends there
    this time, the next sweep looks again."""
    where = f"cluster {cluster}" if cluster else "the cluster"
    return Notice(
        kind=Kind.SCHEDULED_CHANGE,
        event_id=f"vanished:{cluster or '-'}",
        event_time=observed_at,
        ignore_reason=clip(
            f"could not list the nodes of {where} labelled {nodes.EC2_MAINTENANCE_LABEL} "
            f"({type(error).__name__}: {error}); vanished EC2 events looked at next sweep",
            MAX_REASON,
        ),
    )
