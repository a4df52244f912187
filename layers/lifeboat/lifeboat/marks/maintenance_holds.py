"""Which maintenances hold a node: recorded on the node, so that an end ends only its own.

A node Lifeboat tainted (or marked, while deferring) for scheduled maintenance carries the
annotation ``lifeboat.dev/maintenance-holds``: a JSON list with one entry per maintenance,
written in the same patch as the taint. An entry names its maintenance as the messages
name it: the start (EC2 ``NotBefore``, Health ``startTime``), EC2's event ``code`` when EC2
told of it, AWS Health's ``eventArn`` when Health did. An end (``[Completed]``/``[Canceled]``,
a closed Health event, an event gone from the sweeps) ends the entry it names and no other:
a node held for a newer retirement stays out when an older reboot's end is still listed.

An ended entry is kept (``ended``: when) with the EC2 label, so that the sweep, listing the
labelled nodes, knows an event EC2 lists again after its end is a new hold, not a duplicate
(``Notice.after_end``). ``missing_since``/``missing_sweeps`` count an EC2 event's absence from
complete sweeps (``lifeboat.flow.sweep_holds``).

Pure: built from what is read, JSON patches guarded by ``test`` as everywhere.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from typing import Any

from lifeboat.kube import nodes
from lifeboat.marks import node_marks
from lifeboat.model.instants import format_instant
from lifeboat.model.notice import Kind, Notice
from lifeboat.model.objects import Obj

HOLDS_ANNOTATION = f"{node_marks.DOMAIN}/maintenance-holds"
# Entries kept on a node (the newest): holds and recent ends, far more than ever coexist.
MAX_HOLDS = 8

Operation = dict[str, Any]


# The EC2 event code of AWS Health's EC2 scheduled event types (the type is the third part
# of the event ARN's resource, ``event/EC2/<type>/<id>``), so that an EC2 ``[Completed]``
# of another code at the same start does not end a hold only Health named. A type not
# listed names no code (the start alone decides, as before).
HEALTH_TYPE_CODES = {
    "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED": "instance-retirement",
    "AWS_EC2_INSTANCE_STOP_SCHEDULED": "instance-stop",
    "AWS_EC2_INSTANCE_REBOOT_MAINTENANCE_SCHEDULED": "instance-reboot",
    "AWS_EC2_SYSTEM_REBOOT_MAINTENANCE_SCHEDULED": "system-reboot",
}


def ec2_code_of(arn: str | None) -> str | None:
    """The EC2 event code a Health event ARN's type stands for (None: not known)."""
    parts = (arn or "").split(":event/", 1)[-1].split("/")
    return HEALTH_TYPE_CODES.get(parts[1]) if len(parts) > 2 else None


@dataclass(frozen=True)
class Hold:
    """One maintenance on a node: what names it, and whether it ended or went missing."""

    start: datetime | None
    code: str | None = None
    arn: str | None = None
    ended: datetime | None = None
    missing_since: datetime | None = None
    missing_sweeps: int = 0

    @property
    def active(self) -> bool:
        return self.ended is None

    def names(self, notice: Notice) -> bool:
        """Whether ``notice`` is about this maintenance: the same start and, where both
        sides know it, the same Health event or the same EC2 event code."""
        if self.start != notice.deadline:
            return False
        if self.arn and notice.event_arn:
            return self.arn == notice.event_arn
        code = self.code or ec2_code_of(self.arn)
        if code and notice.ec2_event:
            return code == notice.detail
        return True

    def describe(self) -> str:
        start = format_instant(self.start) if self.start else "no given start"
        what = self.code or ("AWS Health event" if self.arn else "maintenance")
        return f"{what} starting {start}"

    def to_json(self) -> dict[str, Any]:
        return {
            key: (format_instant(value) if isinstance(value, datetime) else value)
            for key, value in asdict(self).items()
            if value not in (None, 0)
        }


def hold_for(notice: Notice) -> Hold:
    """The entry a scheduled-change notice's hold records."""
    return Hold(
        start=notice.deadline,
        code=notice.detail or None if notice.ec2_event else None,
        arn=notice.event_arn,
    )


def holds_of(node: Obj) -> list[Hold]:
    """The node's entries, oldest first ([] when none is recorded, or the record is not
    Lifeboat's: a node tainted before holds were recorded ends as it always did)."""
    text = nodes.annotations_of(node).get(HOLDS_ANNOTATION)
    if not text:
        return []
    try:
        entries = json.loads(text)
    except (ValueError, RecursionError):
        return []
    if not isinstance(entries, list):
        return []
    return [hold for hold in map(_read, entries) if hold is not None]


def active_holds(node: Obj) -> list[Hold]:
    return [hold for hold in holds_of(node) if hold.active]


def with_hold(holds: list[Hold], new: Hold) -> list[Hold]:
    """``holds`` with ``new`` held: an entry naming the same maintenance is held again (its
    names merged: EC2's code added to Health's ARN, or the reverse), else ``new`` appended."""
    probe = Notice(
        kind=Kind.SCHEDULED_CHANGE,
        event_id="-",
        event_time=_EPOCH,
        deadline=new.start,
        detail=new.code or "",
        ec2_event=new.code is not None,
        event_arn=new.arn,
    )
    kept = [hold for hold in holds if not hold.names(probe)]
    merged = next((hold for hold in holds if hold.names(probe)), None)
    if merged is not None:
        new = Hold(new.start, new.code or merged.code, new.arn or merged.arn)
    return _newest([*kept, new])


def ended_holds(holds: list[Hold], notice: Notice, at: datetime) -> list[Hold]:
    """``holds`` with every active entry ``notice`` names ended ``at``."""
    return [
        replace(hold, ended=at, missing_since=None, missing_sweeps=0)
        if hold.active and hold.names(notice)
        else hold
        for hold in holds
    ]


def holds_operations(node: Obj, holds: list[Hold]) -> list[Operation]:
    """Write ``holds`` in the annotation ([] if unchanged), testing the value read."""
    value = json.dumps([hold.to_json() for hold in holds], separators=(",", ":"), sort_keys=True)
    annotations = node.get("metadata", {}).get("annotations")
    if annotations is None:
        return [
            {"op": "test", "path": "/metadata/annotations", "value": None},
            {"op": "add", "path": "/metadata/annotations", "value": {HOLDS_ANNOTATION: value}},
        ]
    before = annotations.get(HOLDS_ANNOTATION)
    if before == value:
        return []
    path = "/metadata/annotations/" + HOLDS_ANNOTATION.replace("~", "~0").replace("/", "~1")
    if before is None:
        return [{"op": "add", "path": path, "value": value}]
    return [
        {"op": "test", "path": path, "value": before},
        {"op": "replace", "path": path, "value": value},
    ]


def _newest(holds: list[Hold]) -> list[Hold]:
    """At most MAX_HOLDS entries: ended ones go first, the oldest first."""
    while len(holds) > MAX_HOLDS:
        ended = [hold for hold in holds if not hold.active]
        holds.remove(ended[0] if ended else holds[0])
    return holds


def _read(entry: object) -> Hold | None:
    if not isinstance(entry, dict):
        return None
    try:
        return Hold(
            start=_time(entry.get("start")),
            code=_text(entry.get("code")),
            arn=_text(entry.get("arn")),
            ended=_time(entry.get("ended")),
            missing_since=_time(entry.get("missing_since")),
            missing_sweeps=int(entry.get("missing_sweeps") or 0),
        )
    except (TypeError, ValueError, OverflowError):
        return None


def _time(value: object) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError("not a time")
    moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _text(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError("not a string")
    return value


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def ended_for(node: Obj, notice: Notice) -> bool:
    """Whether the maintenance ``notice`` is about ended on this node after the notice was
    sent (a deferral's wake-up coming due after the end: let go). A notice sent after the
    end (EC2 listing the event again) is a new hold, not ended. Without an entry naming it,
    the node's ``lifeboat.dev/maintenance-ended`` says, as before holds were recorded."""
    named = [hold for hold in holds_of(node) if hold.names(notice)]
    if named:
        return any(
            hold.ended is not None and notice.event_time <= hold.ended for hold in named
        ) and not any(hold.active for hold in named)
    return notice.deadline is not None and node_marks.maintenance_ended(node, notice.deadline)
