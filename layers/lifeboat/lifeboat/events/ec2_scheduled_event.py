"""EC2 scheduled events (``Events[]`` of ``DescribeInstanceStatus``): maintenance ahead.

Each of the five codes Karpenter's poller acts on (``instance-reboot``, ``system-reboot``,
``system-maintenance``, ``instance-retirement``, ``instance-stop``) becomes a
``scheduled-change`` notice due at ``NotBefore``: the same voluntary treatment as AWS
Health's ``scheduledChange`` (windows, budgets, do-not-disrupt, forced
``scheduled_change_lead`` before the start), where Karpenter deletes the NodeClaim at once
(``instancestatus.go``: "we treat all events as instance degradation"). Health and EC2
announce the same maintenance with the same instance and start, so the notice's
``ledger_key`` is the same for both: one maintenance is acted on once. An event that names
no ``NotBefore`` (only its ``Code``, as Karpenter's controller test sends it) is due now:
acted on at once where the budgets allow, never dropped.

A description starting ``[Completed]`` or ``[Canceled]`` (EC2 keeps a finished event in the
list for a while, so marked) ends the maintenance: an ``ends_maintenance`` notice, which
undoes what Lifeboat did to a node it kept (``lifeboat.decide.notice``).
https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/monitoring-instances-status-check_sched.html
"""

from __future__ import annotations

from typing import Any

from lifeboat.events.base import clip
from lifeboat.events.instance_status import EVENT_CODES, InstanceStatus, ScheduledEvent
from lifeboat.model.notice import Kind, Notice


def _event_id(status: InstanceStatus, event: ScheduledEvent) -> str:
    if event.event_id:
        return event.event_id
    start = event.not_before.strftime("%Y%m%dT%H%M%SZ") if event.not_before else "-"
    return f"{clip(event.code)}:{status.instance_id}:{start}"


def _notice(status: InstanceStatus, event: ScheduledEvent, **fields: Any) -> Notice:
    return Notice(
        kind=Kind.SCHEDULED_CHANGE,
        event_id=_event_id(status, event),
        event_time=status.observed_at,
        instance_id=status.instance_id,
        detail=clip(event.code),
        ec2_event=True,
        **fields,
    )


class Ec2ScheduledEventParser:
    kind = Kind.SCHEDULED_CHANGE

    def parse(self, status: InstanceStatus) -> list[Notice]:
        notices = []
        for event in status.events:
            if event.code not in EVENT_CODES:
                reason = f"EC2 scheduled event code {clip(event.code)!r} is not maintenance"
                notices.append(_notice(status, event, ignore_reason=reason))
            elif event.finished is not None:
                notices.append(
                    _notice(status, event, deadline=event.not_before, ends_maintenance=True)
                )
            else:
                # No NotBefore (Karpenter's own controller test sends only a Code): due now,
                # as Karpenter deletes the claim at once; weighed against the budgets with no
                # start to force it by (lifeboat.decide.notice says "start not given").
                notices.append(_notice(status, event, deadline=event.not_before))
        return notices


PARSER = Ec2ScheduledEventParser()
