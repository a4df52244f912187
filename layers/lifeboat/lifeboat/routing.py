"""Which cluster a notice is for, and whether this stack may act on it. Pure.

One stack serves many clusters: the instance's EC2 tags name its cluster. An instance of a
cluster the stack does not manage, of no cluster, or without the operator's managed tag is
ignored with a reason (and counted), never silently dropped. A message from another account
or region than the stack's is rejected (:func:`foreign_origin`): its instance ids mean
nothing here, and acting on a namesake would be wrong.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from lifeboat.events.notice import Notice
from lifeboat.instances import InstanceInfo
from lifeboat.settings import Settings


class NotYetKnown(RuntimeError):
    """The instance is unknown for now; the message goes back to the queue for a while
    (operators sharing a queue with another consumer choose a grace period)."""


@dataclass(frozen=True)
class Route:
    cluster: str | None = None
    skip_reason: str | None = None


def foreign_origin(notice: Notice, settings: Settings) -> str | None:
    """Why ``notice`` comes from another account or region than the stack's, or None.

    Only a field both sides know can mismatch: a message without ``account`` (moto delivers
    EventBridge events without it; a lifecycle hook message sent straight to SQS carries no
    region) and a stack without ``account_id``/``region`` settings are not checked.
    """
    for what, theirs, ours in (
        ("account", notice.account, settings.account_id),
        ("region", notice.region, settings.region),
    ):
        if theirs and ours and theirs != ours:
            return f"event from {what} {theirs[:64]}, but this stack serves {what} {ours}"
    return None


def route(notice: Notice, info: InstanceInfo | None, settings: Settings, now: datetime) -> Route:
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
    if settings.clusters and info.cluster not in settings.clusters:
        if info.cluster is None:
            why = f"instance {instance} belongs to no EKS cluster"
        else:
            why = f"instance {instance} belongs to cluster {info.cluster}, not managed here"
        return Route(info.cluster, why)
    return Route(info.cluster)
