"""Which cluster a notice is for, and whether this stack may act on it. Pure.

One stack serves many clusters: the instance's EC2 tags name its cluster. An instance of a
cluster the stack does not manage, of no cluster, or without the operator's managed tag is
ignored with a reason (and counted), never silently dropped. A message from another account
or region than the stack's is rejected (``lifeboat.decide.origin.foreign_origin``): its
instance ids mean nothing here, and acting on a namesake would be wrong.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime

from lifeboat.decide.origin import foreign_origin
from lifeboat.errors import RetryLater
from lifeboat.model.instances import InstanceInfo
from lifeboat.model.notice import Notice
from lifeboat.model.report import Outcome
from lifeboat.model.settings import Settings
from lifeboat.wakeup.codec import Task, Wakeup


class NotYetKnown(RetryLater):
    """The instance is unknown for now; the message goes back to the queue for a while
    (operators sharing a queue with another consumer choose a grace period)."""


@dataclass(frozen=True)
class Route:
    """The cluster a notice goes to, or why it is skipped."""

    cluster: str | None = None
    skip_reason: str | None = None


def _unmanaged(cluster: str | None, settings: Settings, managed: Collection[str] | None) -> bool:
    """Whether ``cluster`` is not this stack's. ``managed``: the clusters found served
    (``lifeboat.aws.discovery``, asked by the caller beforehand so this stays pure); None: the
    named ones (``settings.clusters``, where empty means any)."""
    if managed is not None:
        return cluster is None or cluster not in managed
    return bool(settings.clusters) and cluster not in settings.clusters


def route(
    notice: Notice,
    info: InstanceInfo | None,
    settings: Settings,
    now: datetime,
    managed: Collection[str] | None = None,
) -> Route:
    instance = notice.instance_id
    if not instance:
        return Route()
    if info is None:
        if (
            settings.unknown_instance_grace
            and now - notice.event_time < settings.unknown_instance_grace
        ):
            raise NotYetKnown(f"instance {instance} is unknown; retrying within the grace period")
        return Route(
            skip_reason=f"instance {instance} is unknown (not found in EC2 or the cluster)",
        )
    if settings.managed_tag and settings.managed_tag not in info.tags:
        return Route(
            info.cluster,
            f"instance {instance} lacks the managed tag {settings.managed_tag}",
        )
    if _unmanaged(info.cluster, settings, managed):
        if info.cluster is None:
            why = f"instance {instance} belongs to no EKS cluster"
        else:
            why = f"instance {instance} belongs to cluster {info.cluster}, not managed here"
        return Route(info.cluster, why)
    return Route(info.cluster)


@dataclass(frozen=True)
class Triage:
    """Whether a notice goes on to be resolved in ``cluster`` (``outcome`` None), or ends
    here as rejected or ignored with ``reason``."""

    cluster: str | None = None
    outcome: Outcome | None = None
    reason: str = ""
    # Ignored because the instance is not this stack's to manage (counted apart).
    unmanaged: bool = False


def triage(
    notice: Notice,
    info: InstanceInfo | None,
    settings: Settings,
    now: datetime,
    managed: Collection[str] | None = None,
) -> Triage:
    """The checks every notice passes before the cluster is asked anything, in order:
    origin (account and region), what the message itself says (a no-op, no instance), then
    the instance: known, carrying the managed tag, of a managed cluster.

    Raises :class:`NotYetKnown` when an unknown instance is still within the grace period.
    """
    foreign = foreign_origin(notice, settings)
    if foreign is not None:
        return Triage(outcome=Outcome.REJECTED, reason=foreign)
    if notice.ignore_reason or not notice.instance_id:
        why = notice.ignore_reason or "the message names no instance"
        return Triage(outcome=Outcome.IGNORED, reason=why)
    where = route(notice, info, settings, now, managed)
    if where.skip_reason is not None or info is None:
        why = where.skip_reason or "unknown instance"
        return Triage(where.cluster, Outcome.IGNORED, why, unmanaged=True)
    hook = notice.lifecycle
    group = info.auto_scaling_group
    if hook is not None and hook.auto_scaling_group != group and info.auto_scaling_group_known:
        # Completing a lifecycle action lets its group go on: only the instance's own group
        # (EC2 tags every instance of a group with aws:autoscaling:groupName). An instance
        # EC2 puts in no group (a Karpenter node) confirms no hook at all.
        why = (
            f"the lifecycle hook names Auto Scaling group {hook.auto_scaling_group[:256]}, "
            f"but instance {info.instance_id} belongs to {info.auto_scaling_group or 'none'}"
        )
        return Triage(where.cluster, Outcome.REJECTED, why)
    return Triage(where.cluster)


def triage_follow_up(
    wakeup: Wakeup,
    info: InstanceInfo | None,
    settings: Settings,
    now: datetime,
    managed: Collection[str] | None = None,
) -> Triage:
    """The triage of Lifeboat's own follow-up work, which anyone allowed to send to the
    queue could forge: the same checks as an AWS event, and the cluster it names must be the
    instance's. An instance EC2 no longer describes (terminated over an hour ago) cannot be
    checked against EC2: only a replacement's hand-over goes on then, to the cluster the
    wake-up names if this stack manages it, and only if the old NodeClaim still matches the
    wake-up (checked when it is read: :func:`~lifeboat.decide.wakeups.check_old_claim`)."""
    notice = wakeup.notice
    if info is None and wakeup.task in (Task.FINISH_REPLACEMENT, Task.HAND_OVER):
        foreign = foreign_origin(notice, settings)
        if foreign is not None:
            return Triage(outcome=Outcome.REJECTED, reason=foreign)
        if _unmanaged(wakeup.cluster, settings, managed):
            why = f"follow-up for cluster {wakeup.cluster or '(none)'}, not managed here"
            return Triage(outcome=Outcome.REJECTED, reason=why)
        return Triage(wakeup.cluster)
    checked = triage(notice, info, settings, now, managed)
    if checked.outcome is None and wakeup.cluster and wakeup.cluster != checked.cluster:
        why = (
            f"follow-up names cluster {wakeup.cluster}, but instance {notice.instance_id} "
            f"belongs to {checked.cluster or 'no cluster'}"
        )
        return Triage(outcome=Outcome.REJECTED, reason=why)
    return checked
