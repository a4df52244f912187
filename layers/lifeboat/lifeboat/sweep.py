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

from typing import Any, Protocol

from lifeboat.events.instance_status import FILTER_SETS
from lifeboat.events.notice import Kind, Notice
from lifeboat.settings import Settings

SOURCE = "lifeboat.sweep"
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
