"""What EC2 knows about an instance: its node name, cluster, NodeClaim and ASG.

One DescribeInstances per SQS batch answers, for every instance in it, the questions that
would otherwise cost a scan of the cluster's nodes: the node name (its private DNS name on
EKS), the NodeClaim and NodePool (Karpenter tags every instance it launches), the cluster
and the Auto Scaling group.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

CLUSTER_TAG_PREFIX = "kubernetes.io/cluster/"
EKS_CLUSTER_TAGS = ("eks:cluster-name", "aws:eks:cluster-name", "karpenter.sh/discovery")


@dataclass(frozen=True)
class InstanceInfo:
    """One instance as EC2 describes it (its tags and state), for the notices naming it."""

    instance_id: str
    node_name: str | None = None
    nodeclaim: str | None = None
    nodepool: str | None = None
    cluster: str | None = None
    auto_scaling_group: str | None = None
    zone: str | None = None
    instance_type: str | None = None
    # The AMI it was launched from (a rotation may select nodes by AMI).
    image_id: str | None = None
    # EC2's state name (running, stopping, ...): None when not known.
    state: str | None = None
    # False where the group is not known (the local tools: a cluster file's node-group node
    # names its group only as EKS labels it, not as EC2 does): then a hook cannot be checked.
    auto_scaling_group_known: bool = True
    tags: Mapping[str, str] = field(default_factory=dict)
    # The capacity reservation it runs in (a Capacity Block is one): EC2's
    # ``CapacityReservationId``.
    capacity_reservation_id: str | None = None
    # Told by a NodeClaim while EC2 throttled (lifeboat.kube.claim_index), not by EC2: a
    # claim is writable by more than Karpenter, so an answer that leads to no node is
    # checked (lifeboat.flow.claim_check).
    from_nodeclaim: bool = False


class InstanceDirectory(Protocol):
    """Looks instances up in bulk; an id it does not know is simply absent from the answer."""

    def describe(self, instance_ids: Sequence[str]) -> dict[str, InstanceInfo]: ...


@runtime_checkable
class ReservationDirectory(Protocol):
    """Finds the instances of a capacity reservation (an ending Capacity Block's)."""

    def in_reservation(self, reservation_id: str) -> dict[str, InstanceInfo]: ...


def cluster_from_tags(tags: Mapping[str, str]) -> str | None:
    """The EKS cluster an instance belongs to, from the tags EKS, Karpenter and eksctl set."""
    for key in EKS_CLUSTER_TAGS:
        if tags.get(key):
            return tags[key]
    for key, value in tags.items():
        if key.startswith(CLUSTER_TAG_PREFIX) and value in ("owned", "shared"):
            return key.removeprefix(CLUSTER_TAG_PREFIX)
    return None


def info_from_ec2(instance: Mapping[str, Any]) -> InstanceInfo:
    tags = {t["Key"]: t["Value"] for t in instance.get("Tags") or [] if "Key" in t}
    return InstanceInfo(
        instance_id=instance["InstanceId"],
        node_name=instance.get("PrivateDnsName") or None,
        nodeclaim=tags.get("karpenter.sh/nodeclaim"),
        nodepool=tags.get("karpenter.sh/nodepool"),
        cluster=cluster_from_tags(tags),
        auto_scaling_group=tags.get("aws:autoscaling:groupName"),
        zone=(instance.get("Placement") or {}).get("AvailabilityZone"),
        instance_type=instance.get("InstanceType"),
        image_id=instance.get("ImageId"),
        state=(instance.get("State") or {}).get("Name"),
        tags=tags,
        capacity_reservation_id=instance.get("CapacityReservationId") or None,
    )


# The states of an instance a Capacity Block's end still takes away (not shutting-down or
# terminated: gone already).
LIVE_STATES = ("pending", "running", "stopping", "stopped")


class Ec2InstanceDirectory:
    """DescribeInstances, once per batch, filtered by id.

    The ``instance-id`` filter is used rather than ``InstanceIds`` because the latter fails
    the whole call when one id is unknown (``InvalidInstanceID.NotFound``), and a batch can
    well hold an instance of another account's cluster or one long terminated.
    """

    def __init__(self, ec2_client: Any) -> None:
        self._ec2 = ec2_client

    def describe(self, instance_ids: Sequence[str]) -> dict[str, InstanceInfo]:
        wanted = sorted(set(instance_ids))
        found: dict[str, InstanceInfo] = {}
        # DescribeInstances accepts up to 200 filter values per call.
        for start in range(0, len(wanted), 200):
            chunk = wanted[start : start + 200]
            paginator = self._ec2.get_paginator("describe_instances")
            pages = paginator.paginate(Filters=[{"Name": "instance-id", "Values": chunk}])
            for page in pages:
                for reservation in page.get("Reservations", []):
                    for instance in reservation.get("Instances", []):
                        info = info_from_ec2(instance)
                        found[info.instance_id] = info
        return found

    def in_reservation(self, reservation_id: str) -> dict[str, InstanceInfo]:
        """The instances running in a capacity reservation: one DescribeInstances (every
        page of it) filtered by ``capacity-reservation-id``, whatever the fleet's size."""
        filters = [
            {"Name": "capacity-reservation-id", "Values": [reservation_id]},
            {"Name": "instance-state-name", "Values": list(LIVE_STATES)},
        ]
        found: dict[str, InstanceInfo] = {}
        for page in self._ec2.get_paginator("describe_instances").paginate(Filters=filters):
            for reservation in page.get("Reservations", []):
                for instance in reservation.get("Instances", []):
                    info = info_from_ec2(instance)
                    found[info.instance_id] = info
        return found


class StaticInstanceDirectory:
    """A directory built from known facts: the sample cluster in replay, and tests."""

    def __init__(self, infos: Iterable[InstanceInfo] = ()) -> None:
        self._infos = {info.instance_id: info for info in infos}

    def add(self, info: InstanceInfo) -> None:
        self._infos[info.instance_id] = info

    def describe(self, instance_ids: Sequence[str]) -> dict[str, InstanceInfo]:
        return {i: self._infos[i] for i in instance_ids if i in self._infos}

    def in_reservation(self, reservation_id: str) -> dict[str, InstanceInfo]:
        return {
            i: info
            for i, info in self._infos.items()
            if info.capacity_reservation_id == reservation_id
        }


def instance_id_from_provider_id(provider_id: str | None) -> str | None:
    """``aws:///us-east-1a/i-0123`` -> ``i-0123``."""
    if not provider_id or not provider_id.startswith("aws://"):
        return None
    last = provider_id.rsplit("/", 1)[-1]
    return last if last.startswith("i-") else None


def zone_from_provider_id(provider_id: str | None) -> str | None:
    if not provider_id or not provider_id.startswith("aws:///"):
        return None
    parts = provider_id.removeprefix("aws:///").split("/")
    return parts[0] if len(parts) == 2 and parts[0] else None
