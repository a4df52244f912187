"""The instance status sweep: EC2's own view of instance health, as Karpenter's poller reads it.

Karpenter's AWS provider (v1.12+, ``pkg/controllers/interruption/instancestatus_controller.go``)
calls ``DescribeInstanceStatus`` every minute and deletes the NodeClaim of every instance
with a scheduled event, or impaired for ``UnhealthyThreshold`` (120 s). Beside it, scheduled
maintenance never waits for a NodePool's budgets and windows; with its permission denied,
nobody replaces impaired instances. The sweep gives Lifeboat both: an EventBridge Scheduler
schedule (template.yaml ``InstanceStatusSweepSchedule``) sends :func:`sweep_request` to the
queue at the ``InstanceStatusSweepRate``; the pipeline answers it with
:meth:`Ec2InstanceStatuses.pages` and reads the pages (``lifeboat.events.parse_statuses``),
so the notices go through the same triage (only instances of the managed clusters go on),
resolve, decide, act, ledger and reports.

The queue carries the trigger, never EC2's word: a sweep request carries nothing and is
obeyed only from the stack's own schedule (:func:`sweep_request_problem`); a raw answer on
the queue is rejected (``lifeboat.events``). Every notice is triaged before the split
(``lifeboat.flow.sweep_triage``); the managed instances one message does not take on are
handed on as sweep parts, for which EC2 is asked again (:meth:`Ec2InstanceStatuses.describe`).
``lifeboat replay`` stands a reader of saved answers where EC2 stands.

Each of Karpenter's three filter sets (``lifeboat.events.instance_status.FILTER_SETS``) is
one paginated call of up to 1,000 results: EC2 filters server-side, so a sweep costs three
calls whatever the fleet size while fewer than 1,000 instances per set are in trouble.
"""

from __future__ import annotations

from typing import Any, Protocol

from lifeboat.model.notice import Kind, Notice
from lifeboat.model.settings import Settings

SOURCE = "lifeboat.aws.sweep"
DETAIL_TYPE = "Instance Status Sweep"
# DescribeInstanceStatus's largest page.
PAGE_SIZE = 1000
# The most InstanceIds one DescribeInstanceStatus call takes.
IDS_PER_CALL = 100


def sweep_request(request_id: str, time: str, schedule_arn: str | None = None) -> dict[str, Any]:
    """The message the schedule sends (its ``Input``, with Scheduler's context attributes
    ``<aws.scheduler.execution-id>``, ``<aws.scheduler.scheduled-time>`` and
    ``<aws.scheduler.schedule-arn>`` as id, time and resource)."""
    return {
        "version": "0",
        "id": request_id,
        "source": SOURCE,
        "detail-type": DETAIL_TYPE,
        "time": time,
        "resources": [schedule_arn] if schedule_arn else [],
        "detail": {},
    }


def sweep_request_problem(message: dict[str, Any], schedule_arn: str | None) -> str | None:
    """Why a sweep request is not the stack's own schedule's (None: it is). A sweep request
    carries nothing EC2 said: it only makes the function ask EC2 itself, so a forged one
    costs three calls at most; still, only the stack's schedule is obeyed. ``schedule_arn``:
    the stack's sweep schedule (None: not known here, as in replay: not checked)."""
    if message.get("detail") not in ({}, None):
        return "detail: a sweep request carries nothing (EC2 is asked, never told)"
    if schedule_arn is None:
        return None
    resources = message.get("resources")
    if resources != [schedule_arn]:
        shown = str(resources)[:200]
        return (
            f"resources: a sweep request comes from this stack's schedule {schedule_arn} "
            f"(got {shown})"
        )
    return None


class InstanceStatuses(Protocol):
    """Where the sweep reads instance status from (EC2, or a saved answer in replay)."""

    def pages(self) -> list[dict[str, Any]]:
        """A whole sweep: every page of each of Karpenter's filter sets."""
        ...

    def describe(self, instance_ids: list[str]) -> list[dict[str, Any]]:
        """The status of these instances now (a sweep part: ``lifeboat.flow.split``)."""
        ...

    def complete(self, pages: list[dict[str, Any]]) -> bool:
        """Whether ``pages`` (what :meth:`pages` gave) are a whole answer: only a whole
        answer may end a maintenance by silence."""
        ...


class Ec2InstanceStatuses:
    """``DescribeInstanceStatus`` with Karpenter's three filter sets, every page of each.

    ``IncludeAllInstances`` is left false, as Karpenter leaves it: only running instances
    are described (a stopped or terminated one is a state change's business).
    """

    def __init__(self, ec2_client: Any) -> None:
        self._ec2 = ec2_client
        self.calls = 0

    def pages(self) -> list[dict[str, Any]]:
        # The sweep's reader, imported by the first sweep: not at a Spot warning's cold start.
        from lifeboat.events.instance_status import FILTER_SETS

        pages: list[dict[str, Any]] = []
        paginator = self._ec2.get_paginator("describe_instance_status")
        for filters in FILTER_SETS:
            for page in paginator.paginate(Filters=filters, MaxResults=PAGE_SIZE):
                self.calls += 1
                pages.append(page)
        return pages

    def complete(self, pages: list[dict[str, Any]]) -> bool:
        return complete(pages)

    def describe(self, instance_ids: list[str]) -> list[dict[str, Any]]:
        """EC2 asked again about named instances (``InstanceIds``, at most 100 a call; EC2
        takes no ``MaxResults`` beside them): a sweep part's, never a copy of an answer."""
        pages: list[dict[str, Any]] = []
        for first in range(0, len(instance_ids), IDS_PER_CALL):
            chunk = instance_ids[first : first + IDS_PER_CALL]
            paginator = self._ec2.get_paginator("describe_instance_status")
            for page in paginator.paginate(InstanceIds=chunk):
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


def complete(pages: list[dict[str, Any]]) -> bool:
    """Whether ``pages`` are a whole sweep's answer: each filter set's pagination ended
    (a page without ``NextToken`` per set, as Karpenter's ``pager.HasMorePages`` loop
    reads them), the last page among them. Counting pages alone took a saved answer whose
    first set took two pages and whose third never answered for whole. (A call that fails
    raises, and the sweep's message goes back to the queue: only a complete answer may end
    a maintenance by silence.)"""
    from lifeboat.events.instance_status import FILTER_SETS  # as in Ec2InstanceStatuses.pages

    ends = sum(1 for page in pages if not page.get("NextToken"))
    return bool(pages) and ends >= len(FILTER_SETS) and not pages[-1].get("NextToken")
