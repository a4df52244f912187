"""The normalised form every AWS warning is parsed into."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from lifeboat.errors import InvalidInput


class Kind(StrEnum):
    """What AWS announced (or, for ``ROTATION``, what an operator asked for). The values are
    the ``kind`` field of ``lifeboat replay --json``."""

    SPOT_INTERRUPTION = "spot-interruption"
    REBALANCE_RECOMMENDATION = "rebalance-recommendation"
    SCHEDULED_CHANGE = "scheduled-change"
    STATE_CHANGE = "state-change"
    ASG_TERMINATION = "asg-termination"
    # A launch lifecycle action: completed once the new instance's node is Ready, when the
    # operator turned that on (``complete_launch_hooks``); never acted on otherwise.
    ASG_LAUNCH = "asg-launch"
    CAPACITY_RESERVATION_INTERRUPTION = "capacity-reservation-interruption"
    # EC2's instance or system status check failed (DescribeInstanceStatus, read by the
    # instance status sweep, lifeboat.aws.sweep): involuntary, like a state change.
    INSTANCE_IMPAIRED = "instance-impaired"
    # A Capacity Block for ML is ending: EC2 terminates its instances from 30 minutes before
    # its end (lifeboat.events.capacity_block): involuntary, one notice per instance.
    CAPACITY_BLOCK_EXPIRY = "capacity-block-expiry"
    # A node of a planned rotation (lifeboat.rotation): voluntary, like a scheduled change
    # without a deadline.
    ROTATION = "rotation"
    UNSUPPORTED = "unsupported"

    @property
    def involuntary(self) -> bool:
        """Whether the instance goes away regardless of what the cluster allows."""
        return self in _INVOLUNTARY

    @property
    def voluntary(self) -> bool:
        """A warning weighed against budgets and windows (``KindActions`` apply to it): not
        involuntary, not unsupported, not a launch (nothing is done to a launched node)."""
        return not self.involuntary and self not in (Kind.UNSUPPORTED, Kind.ASG_LAUNCH)

    @property
    def label(self) -> str:
        """How a reason or a log line names the kind."""
        return _NAMES[self][0]

    @property
    def event_reason(self) -> str:
        """The ``reason`` of the Kubernetes Events recorded for this kind."""
        return _NAMES[self][1]


# One row per kind: adding a kind is adding a row here (and a parser module).
# What a scheduled change's notice says when its ``startTime`` was empty (its detail).
EMPTY_START = "startTime empty: due now (Karpenter drains a scheduled change at once)"

_NAMES = {
    Kind.SPOT_INTERRUPTION: ("spot interruption", "SpotInterruption"),
    Kind.REBALANCE_RECOMMENDATION: ("rebalance recommendation", "RebalanceRecommendation"),
    Kind.SCHEDULED_CHANGE: ("scheduled maintenance", "ScheduledMaintenance"),
    Kind.STATE_CHANGE: ("instance state change", "InstanceStateChange"),
    Kind.ASG_TERMINATION: ("Auto Scaling termination", "AutoScalingTermination"),
    Kind.ASG_LAUNCH: ("Auto Scaling launch", "AutoScalingLaunch"),
    Kind.CAPACITY_RESERVATION_INTERRUPTION: (
        "capacity reservation interruption",
        "CapacityReservationInterruption",
    ),
    Kind.INSTANCE_IMPAIRED: ("impaired instance", "InstanceImpaired"),
    Kind.CAPACITY_BLOCK_EXPIRY: ("capacity block expiry", "CapacityBlockExpiry"),
    Kind.ROTATION: ("rotation", "Rotation"),
    Kind.UNSUPPORTED: ("unsupported event", "Unsupported"),
}

_INVOLUNTARY = frozenset(
    {
        Kind.SPOT_INTERRUPTION,
        Kind.STATE_CHANGE,
        Kind.ASG_TERMINATION,
        Kind.CAPACITY_RESERVATION_INTERRUPTION,
        Kind.INSTANCE_IMPAIRED,
        Kind.CAPACITY_BLOCK_EXPIRY,
    }
)


@dataclass(frozen=True)
class LifecycleHook:
    """What is needed to heartbeat and complete an Auto Scaling lifecycle action."""

    auto_scaling_group: str
    hook_name: str
    action_token: str
    instance_id: str
    heartbeat_timeout_seconds: int | None = None


@dataclass(frozen=True)
class Notice:
    """One warning about one instance (or about none, for a no-op message).

    ``ignore_reason`` is set when the message is understood but calls for no action
    (a test notification, a non-actionable state, an unsupported detail-type).
    """

    kind: Kind
    event_id: str
    event_time: datetime
    instance_id: str | None = None
    deadline: datetime | None = None
    account: str | None = None
    region: str | None = None
    detail: str = ""
    lifecycle: LifecycleHook | None = None
    ignore_reason: str | None = None
    # The maintenance this notice announced is over (an EC2 event ``[Completed]`` or
    # ``[Canceled]``, a closed Health event): undo what Lifeboat did to a node it kept.
    ends_maintenance: bool = False
    # Told by EC2's scheduled event (DescribeInstanceStatus ``Events[]``), not only by AWS
    # Health: a node acted on for it is labelled, and the maintenance ends when the event
    # vanishes from a complete sweep (``lifeboat.aws.sweep.vanished``).
    ec2_event: bool = False
    # AWS Health's ``eventArn``: which maintenance a Health notice is about, recorded on the
    # node it holds, so that only that event's closing ends the hold
    # (``lifeboat.marks.maintenance_holds``).
    event_arn: str | None = None
    # EC2 listed this maintenance again after it had ended on the node at this instant: a new
    # hold, remembered under its own ledger key (``lifeboat.flow.sweep_holds``).
    after_end: datetime | None = None
    # The capacity reservation the notice is about (a Capacity Block's expiry): before the
    # pipeline looks its instances up the notice names no instance; after, each instance's
    # notice keeps it, and its replacement is kept out of that reservation.
    reservation_id: str | None = None

    @property
    def involuntary(self) -> bool:
        return self.kind.involuntary

    @property
    def dedup_key(self) -> str:
        """Identity of the (event, instance) pair, for idempotency."""
        return f"{self.event_id}#{self.instance_id or '-'}"

    @property
    def ledger_key(self) -> str:
        """What the ledger remembers as handled. One maintenance is acted on once, whether
        AWS Health or EC2's scheduled event (``DescribeInstanceStatus``) tells of it first:
        both name the instance and the maintenance's start (Health ``startTime``, EC2
        ``NotBefore``), so a scheduled change is keyed by those, not by who sent it."""
        if EMPTY_START in (self.detail or ""):
            # Its start is its receipt time, new on every delivery: keyed by it, SQS's second
            # delivery of an event acted on would be a new maintenance, never a duplicate.
            return self.dedup_key
        if self.kind is Kind.SCHEDULED_CHANGE and self.instance_id and self.deadline:
            start = self.deadline.strftime("%Y%m%dT%H%M%SZ")
            key = f"maintenance#{self.instance_id}#{start}"
            if self.after_end is not None:
                key += "#after-" + self.after_end.strftime("%Y%m%dT%H%M%SZ")
            return key
        if self.kind is Kind.CAPACITY_BLOCK_EXPIRY and self.instance_id and self.deadline:
            # The same for EC2's warning and the sweep's finding (DescribeCapacityReservations):
            # the instance and when EC2 starts terminating it, whoever told of it first.
            start = self.deadline.strftime("%Y%m%dT%H%M%SZ")
            return f"capacity-block#{self.instance_id}#{start}"
        return self.dedup_key


class MalformedMessage(InvalidInput):
    """A message that cannot be understood. The text names the field and what is wrong.

    ``kind`` is set when the message says what it is although its details are wrong (a Spot
    warning without ``instance-id`` is a rejected ``spot-interruption``); None otherwise.
    """

    def __init__(self, reason: str, event_id: str | None = None, kind: Kind | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.event_id = event_id
        self.kind = kind
