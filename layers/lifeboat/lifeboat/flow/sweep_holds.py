"""What a complete sweep learns about the EC2 maintenances holding nodes.

Each complete sweep lists, per cluster, the nodes labelled ``lifeboat.dev/ec2-maintenance``
(one LIST, whatever the fleet) and compares their holds (``lifeboat.marks.maintenance_holds``)
with the events EC2 lists:

* **an event missing** ends its hold only once it has been missing from
  :data:`ABSENT_SWEEPS` complete sweeps in a row over at least :data:`ABSENCE`. EC2's API
  is eventually consistent (the EC2 API reference, "Eventual consistency in the Amazon EC2
  API": a read may briefly not reflect what is), and EC2 drops a cancelled event, or a
  completed one after a while, instead of always marking it. Three sweeps (one a minute by
  default) and five minutes: one answer that blinks, or two sweeps delivered together
  after a backlog, never uncordon a node whose maintenance is still ahead, while a real
  cancellation is honoured within minutes, hours or days before a retirement. The count
  and the first miss are written on the hold, so they survive between invocations; an event
  listed again clears them. A maintenance known only from AWS Health never ends this way.
* **an event listed again after its hold ended** (``Notice.after_end``) is a new hold, not a
  duplicate of the maintenance the ledger remembers.

Nothing is written in a dry run, so nothing ends there by absence.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from lifeboat.events.instance_status import InstanceStatus
from lifeboat.kube import nodes
from lifeboat.kube.client import KubeApi, KubeError
from lifeboat.marks import node_marks
from lifeboat.marks.maintenance_holds import Hold, holds_of, holds_operations
from lifeboat.model.instances import instance_id_from_provider_id
from lifeboat.model.instants import format_instant
from lifeboat.model.notice import Kind, Notice
from lifeboat.model.objects import Obj
from lifeboat.model.report import Outcome, Report

ABSENCE = timedelta(minutes=5)
ABSENT_SWEEPS = 3
# What a vanished event's notice says it is (its ``detail`` when EC2's code is unknown).
VANISHED = "EC2 event no longer reported"

Listed = set[tuple[str, datetime | None, str]]


@dataclass
class ClusterHolds:
    """One cluster's part of a sweep: maintenances ended by absence, reports of absences
    still being counted, and each marked node's holds by instance (for ``relisted``)."""

    ends: list[Notice] = field(default_factory=list)
    reports: list[Report] = field(default_factory=list)
    holds: dict[str, list[Hold]] = field(default_factory=dict)


def listed_events(statuses: Iterable[InstanceStatus]) -> Listed:
    """Every (instance, start, code) EC2 lists, finished or not (a finished one is ended by
    its own notice)."""
    return {
        (status.instance_id, event.not_before, event.code)
        for status in statuses
        for event in status.events
    }


def look_at(
    kube: KubeApi, cluster: str | None, listed: Listed, now: datetime, *, dry_run: bool
) -> ClusterHolds:
    """The cluster's marked nodes against ``listed``: absences counted (written on the
    node), the holds missing long enough ended. Listing errors are the caller's."""
    found = ClusterHolds()
    for node in kube.list_nodes(node_marks.EC2_MAINTENANCE_LABEL):
        instance = instance_id_from_provider_id(str(node.get("spec", {}).get("providerID", "")))
        if instance is None:
            continue
        holds = holds_of(node) or _from_label(node)
        found.holds[instance] = holds
        if nodes.is_deleting(node) or not _tainted(node):
            continue  # going anyway, or undone already (by hand, or the node was let go)
        counted = [_counted(hold, instance, node, listed, now) for hold in holds]
        if counted != holds and not dry_run:
            try:
                kube.patch_node(nodes.name_of(node), holds_operations(node, counted))
            except KubeError as error:
                if error.status not in (404, 409, 422):
                    raise
                continue  # changed under us: counted again at the next sweep
        for hold in counted:
            if hold.missing_since is None or not hold.active:
                continue
            if now - hold.missing_since >= ABSENCE and hold.missing_sweeps >= ABSENT_SWEEPS:
                found.ends.append(_vanished(instance, hold, now))
            else:
                found.reports.append(_still_counting(instance, hold, cluster))
    return found


def relisted(notices: list[Notice], holds: dict[str, list[Hold]]) -> list[Notice]:
    """``notices`` with each EC2 event listed again after its hold ended on the node marked
    as such (``after_end``): a new hold, under its own ledger key."""
    marked = []
    for notice in notices:
        if notice.ends_maintenance or not notice.ec2_event or notice.instance_id is None:
            marked.append(notice)
            continue
        named = [hold for hold in holds.get(notice.instance_id, []) if hold.names(notice)]
        ended = [hold.ended for hold in named if hold.ended is not None]
        if ended and not any(hold.active for hold in named) and max(ended) < notice.event_time:
            notice = replace(notice, after_end=max(ended))
        marked.append(notice)
    return marked


def _counted(hold: Hold, instance: str, node: Obj, listed: Listed, now: datetime) -> Hold:
    """``hold`` with this complete sweep counted: missing once more, or listed again."""
    if not hold.active or not _from_ec2(hold, node):
        return hold
    present = any(
        listed_instance == instance
        and start == hold.start
        and (hold.code is None or code == hold.code)
        for listed_instance, start, code in listed
    )
    if present:
        return replace(hold, missing_since=None, missing_sweeps=0)
    return replace(
        hold, missing_since=hold.missing_since or now, missing_sweeps=hold.missing_sweeps + 1
    )


def _from_ec2(hold: Hold, node: Obj) -> bool:
    """Whether EC2's event told of this hold (its code seen by a sweep), or, for a node
    labelled before holds were recorded, the label names its start."""
    if hold.code is not None:
        return True
    return hold.arn is None and hold.start == node_marks.ec2_maintenance_start(node)


def _from_label(node: Obj) -> list[Hold]:
    start = node_marks.ec2_maintenance_start(node)
    return [Hold(start)] if start is not None else []


def _tainted(node: Obj) -> bool:
    key = node_marks.taint_key(Kind.SCHEDULED_CHANGE)
    return any(t.get("key") == key for t in nodes.taints(node))


def _vanished(instance: str, hold: Hold, now: datetime) -> Notice:
    stamp = node_marks.ec2_maintenance_value(hold.start) if hold.start else "-"
    return Notice(
        kind=Kind.SCHEDULED_CHANGE,
        event_id=f"vanished:{instance}:{stamp}",
        event_time=now,
        instance_id=instance,
        deadline=hold.start,
        # Named by its start (ec2_event False: its code is in the text, not compared).
        detail=f"{hold.code}: {VANISHED}" if hold.code else VANISHED,
        ends_maintenance=True,
    )


def _still_counting(instance: str, hold: Hold, cluster: str | None) -> Report:
    since = format_instant(hold.missing_since) if hold.missing_since else "-"
    stamp = node_marks.ec2_maintenance_value(hold.start) if hold.start else "-"
    return Report(
        event_id=f"vanished:{instance}:{stamp}",
        kind=str(Kind.SCHEDULED_CHANGE),
        outcome=Outcome.IGNORED,
        reason=(
            f"{VANISHED}: {hold.describe()} missing from {hold.missing_sweeps} complete "
            f"sweep(s) since {since}; it ends once missing from {ABSENT_SWEEPS} sweeps over "
            f"{int(ABSENCE.total_seconds() // 60)} minutes, and the node stays out until then"
        ),
        instance_id=instance,
        cluster=cluster,
    )


def listing_failed(cluster: str | None, error: Exception, now: datetime) -> Report:
    """The report of a cluster whose marked nodes could not be listed or counted: an error,
    with the cluster; nothing ends there this time, the next sweep looks again."""
    where = f"cluster {cluster}" if cluster else "the cluster"
    return Report(
        event_id=f"vanished:{cluster or '-'}",
        kind=str(Kind.SCHEDULED_CHANGE),
        outcome=Outcome.IGNORED,
        reason=(
            f"error: could not look at the nodes of {where} labelled "
            f"{node_marks.EC2_MAINTENANCE_LABEL} ({type(error).__name__}: {str(error)[:300]}); "
            "EC2 events no longer reported there are looked at again at the next sweep"
        ),
        cluster=cluster,
        event_time=now,
    )
