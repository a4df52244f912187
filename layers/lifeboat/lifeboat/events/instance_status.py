"""A ``DescribeInstanceStatus`` response, read the way Karpenter's poller reads it.

Karpenter's AWS provider (v1.12 and later, ``pkg/providers/instancestatus/instancestatus.go``)
asks EC2 for the status of instances with three filter sets, ORed by calling once per set
(``DescribeInstanceStatus`` ANDs filters of different names): instance status ``impaired``,
system status ``impaired``, and a scheduled event of one of five codes. The same sets are
:data:`FILTER_SETS` here, used by the sweep (``lifeboat.aws.sweep``).

A response is what boto3 returns (``InstanceStatuses``, ``NextToken``, ``ResponseMetadata``),
with times as ``datetime`` objects or, in a file, as ISO 8601 strings (``json.dumps(...,
default=str)`` writes ``2026-12-01 13:58:00+00:00``). Each instance status is read into an
:class:`InstanceStatus`; the kinds' parsers (:mod:`lifeboat.events.instance_impaired`,
:mod:`lifeboat.events.ec2_scheduled_event`) turn it into notices. An instance named twice
(it matched two filter sets) is read once, as Karpenter's ``seen`` map does.
https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeInstanceStatus.html
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from email.utils import parsedate_to_datetime
from typing import Any

from lifeboat.events.base import Fields, in_range, malformed, parse_time, quote
from lifeboat.model.instants import as_utc

# The scheduled event codes EC2 announces, each acted on by Karpenter's poller
# (instancestatus.go: ec2types.EventCode{InstanceReboot, SystemReboot, SystemMaintenance,
# InstanceRetirement, InstanceStop}).
EVENT_CODES = (
    "instance-reboot",
    "system-reboot",
    "system-maintenance",
    "instance-retirement",
    "instance-stop",
)
FILTER_SETS: tuple[list[dict[str, Any]], ...] = (
    [{"Name": "instance-status.status", "Values": ["impaired"]}],
    [{"Name": "system-status.status", "Values": ["impaired"]}],
    [{"Name": "event.code", "Values": list(EVENT_CODES)}],
)
# What the source of a DescribeInstanceStatus response is called in reasons and reports.
ORIGIN = "DescribeInstanceStatus"


@dataclass(frozen=True)
class CheckDetail:
    """One detail of a status check (``reachability``): ``failed`` since when."""

    name: str
    status: str
    impaired_since: datetime | None


@dataclass(frozen=True)
class Check:
    """A status check (instance, system or attached EBS): its summary and details."""

    status: str
    details: tuple[CheckDetail, ...]

    @classmethod
    def read(cls, fields: Fields | None) -> Check:
        if fields is None:
            return cls("not-applicable", ())
        status = fields.string("Status", "not-applicable")
        details = tuple(
            CheckDetail(
                name=detail.string("Name", ""),
                status=detail.string("Status", ""),
                impaired_since=detail.time("ImpairedSince", parse_time, None),
            )
            for detail in (fields.objects("Details") if "Details" in fields.data else ())
        )
        return cls(status, details)

    def failed(self) -> tuple[CheckDetail, ...]:
        """The details that failed (Karpenter keeps only ``StatusTypeFailed``)."""
        return tuple(d for d in self.details if d.status == "failed")


@dataclass(frozen=True)
class ScheduledEvent:
    """One of ``Events[]``: EC2's scheduled event for the instance."""

    code: str
    description: str
    not_before: datetime | None
    not_after: datetime | None
    event_id: str | None

    @property
    def finished(self) -> str | None:
        """``Completed`` or ``Canceled`` when EC2's description says the event is over
        (it prefixes ``[Completed]`` or ``[Canceled]``), else None."""
        for word in ("Completed", "Canceled", "Cancelled"):
            if self.description.startswith(f"[{word}]"):
                return word
        return None


@dataclass(frozen=True)
class InstanceStatus:
    """One entry of ``InstanceStatuses``, with the time it was observed."""

    instance_id: str
    zone: str | None
    state: str
    instance: Check
    system: Check
    ebs: Check
    events: tuple[ScheduledEvent, ...]
    observed_at: datetime
    path: str

    @classmethod
    def read(cls, fields: Fields, observed_at: datetime) -> InstanceStatus:
        def nested(name: str) -> Fields | None:
            if fields.data.get(name) is None:
                return None
            return Fields(fields.mapping(name), path=f"{fields.path}.{name}", event_id=None)

        instance_id = fields.instance_id("InstanceId")
        zone = fields.string("AvailabilityZone", None)
        state = nested("InstanceState")
        events = tuple(
            ScheduledEvent(
                code=event.string("Code", ""),
                description=event.string("Description", ""),
                not_before=event.time("NotBefore", parse_time, None),
                not_after=event.time("NotAfter", parse_time, None),
                event_id=event.identifier("InstanceEventId", None),
            )
            for event in (fields.objects("Events") if "Events" in fields.data else ())
        )
        return cls(
            instance_id=instance_id,
            zone=zone,
            state=state.string("Name", "running") if state is not None else "running",
            instance=Check.read(nested("InstanceStatus")),
            system=Check.read(nested("SystemStatus")),
            ebs=Check.read(nested("AttachedEbsStatus")),
            events=events,
            observed_at=observed_at,
            path=fields.path,
        )


def observed_time(payload: dict[str, Any], default: datetime) -> datetime:
    """When EC2 answered: the ``date`` header boto3 keeps in ``ResponseMetadata``, else
    ``default`` (the time the message was received)."""
    meta = payload.get("ResponseMetadata")
    headers = meta.get("HTTPHeaders") if isinstance(meta, dict) else None
    date = headers.get("date") if isinstance(headers, dict) else None
    if isinstance(date, str):
        try:
            return in_range(as_utc(parsedate_to_datetime(date)), date)
        except (ValueError, TypeError, IndexError, OverflowError):
            raise malformed(
                f"ResponseMetadata.HTTPHeaders.date: not an HTTP date: {quote(date)}"
            ) from None
    return default


def read_response(payload: dict[str, Any], *, received_at: datetime) -> list[InstanceStatus]:
    """Every instance status of a response (or of its ``Pages``), each instance once."""
    pages = payload.get("Pages") if "InstanceStatuses" not in payload else [payload]
    seen: dict[str, InstanceStatus] = {}
    for number, page in enumerate(pages or []):
        where = f"Pages.{number}" if "InstanceStatuses" not in payload else ""
        page_fields = Fields(page, path=where, event_id=None)
        observed = observed_time(page_fields.data, received_at)
        for status in page_fields.objects("InstanceStatuses"):
            read = InstanceStatus.read(status, observed)
            seen.setdefault(read.instance_id, read)
    return list(seen.values())
