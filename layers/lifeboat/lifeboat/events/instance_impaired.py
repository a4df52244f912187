"""``instance-impaired``: EC2's instance or system status check failed.

Read from a ``DescribeInstanceStatus`` response (:mod:`lifeboat.events.instance_status`) as
Karpenter's poller reads it (``pkg/providers/instancestatus/instancestatus.go``, v1.12+):
the failed details of the instance and system checks count, from the earliest
``ImpairedSince`` among them; the notice is involuntary, acted on at once once the
instance has been impaired for the ``impaired_threshold`` setting (Karpenter's
``UnhealthyThreshold``, 120 s). That threshold is applied by the pipeline before the ledger
(``lifeboat.aws.sweep.too_recently_impaired``), so an instance seen too early is seen again by
the next sweep. A detail without ``ImpairedSince`` counts as impaired for ever, as
Karpenter's zero ``time.Time`` does.

Attached EBS status (``AttachedEbsStatus``) is reported and not acted on, as Karpenter
("EBS status check failures are ignored for now": a failed volume may be a pod's, not the
node's, and replacing the node would not mend it).
"""

from __future__ import annotations

from lifeboat.events.base import EARLIEST
from lifeboat.events.instance_status import ORIGIN, InstanceStatus
from lifeboat.model.notice import Kind, Notice


def notice_id(instance_id: str, since: str) -> str:
    """The id of an impairment: one per instance and start, whatever sweep saw it."""
    return f"instance-impaired:{instance_id}:{since}"


class InstanceImpairedParser:
    kind = Kind.INSTANCE_IMPAIRED

    def parse(self, status: InstanceStatus) -> list[Notice]:
        failed = [
            (check, detail)
            for check, summary in (("instance", status.instance), ("system", status.system))
            for detail in summary.failed()
        ]
        if failed:
            since = min(detail.impaired_since or EARLIEST for _, detail in failed)
            stamp = since.strftime("%Y%m%dT%H%M%SZ")
            what = ", ".join(sorted({f"{check} status {detail.name}" for check, detail in failed}))
            return [
                Notice(
                    kind=Kind.INSTANCE_IMPAIRED,
                    event_id=notice_id(status.instance_id, stamp),
                    # When the impairment began: the threshold is measured from here to
                    # the deadline, the moment EC2 reported it (the sweep's call).
                    event_time=since,
                    instance_id=status.instance_id,
                    deadline=status.observed_at,
                    detail=f"{what} failed",
                )
            ]
        ebs = status.ebs.failed()
        if ebs and not status.events:
            names = ", ".join(sorted({d.name for d in ebs}))
            return [
                Notice(
                    kind=Kind.INSTANCE_IMPAIRED,
                    event_id=f"{ORIGIN}:{status.instance_id}:ebs",
                    event_time=status.observed_at,
                    instance_id=status.instance_id,
                    detail=f"attached EBS status {names} failed",
                    ignore_reason=(
                        "attached EBS status impaired: reported, not acted on (as Karpenter: "
                        "a failed volume may be a pod's, and a new node would not mend it)"
                    ),
                )
            ]
        return []


PARSER = InstanceImpairedParser()
