"""What EC2 would answer about the sample cluster's instances, derived from the cluster file.

Replay has no AWS account: DescribeInstances is simulated from what the cluster objects
say (a Node's ``spec.providerID`` and labels, a NodeClaim's ``status.providerID``), which is
what EC2's private DNS name and Karpenter's instance tags tell in a real account. The AMI
comes from the label EKS puts on a managed node group's nodes, or the NodeClaim's
``status.imageID``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from lifeboat.karpenter.replacement import CAPACITY_RESERVATION_ID_LABEL
from lifeboat.kube import nodes
from lifeboat.model.instances import (
    InstanceInfo,
    StaticInstanceDirectory,
    instance_id_from_provider_id,
    zone_from_provider_id,
)

# EKS labels every node of a managed node group with the AMI it runs.
NODEGROUP_IMAGE_LABEL = "eks.amazonaws.com/nodegroup-image"


def directory_from_objects(
    objects: Iterable[Mapping[str, Any]],
    cluster: str | None = None,
    tags: Mapping[str, str] | None = None,
) -> StaticInstanceDirectory:
    """Every instance the objects name, as EC2 would describe it: in ``cluster`` (EC2's
    cluster tags, which a cluster file does not carry) and with ``tags``."""
    tags = dict(tags or {})
    infos: dict[str, InstanceInfo] = {}
    claims_by_instance: dict[str, Mapping[str, Any]] = {}
    for obj in objects:
        if obj.get("kind") == "NodeClaim":
            instance = instance_id_from_provider_id(obj.get("status", {}).get("providerID"))
            if instance:
                claims_by_instance[instance] = obj
    for obj in objects:
        if obj.get("kind") != "Node":
            continue
        provider = nodes.provider_id(obj)
        instance = instance_id_from_provider_id(provider)
        if not instance:
            continue
        node_labels = nodes.labels_of(obj)
        owner = nodes.nodeclaim_owner(obj)
        claim = claims_by_instance.get(instance)
        infos[instance] = InstanceInfo(
            instance_id=instance,
            node_name=nodes.name_of(obj),
            nodeclaim=owner[0] if owner else (nodes.name_of(claim) if claim else None),
            nodepool=node_labels.get(nodes.NODEPOOL_LABEL),
            cluster=cluster,
            # A node group's label is not its Auto Scaling group's name (eks-<group>-<id>),
            # which only EC2 knows: left unknown rather than wrong. A Karpenter node is in
            # no group at all: a lifecycle hook naming one is refused, as by EC2's answer.
            auto_scaling_group=None,
            auto_scaling_group_known=owner is not None or claim is not None,
            zone=node_labels.get(nodes.ZONE_LABEL) or zone_from_provider_id(provider),
            instance_type=node_labels.get(nodes.INSTANCE_TYPE_LABEL),
            tags=tags,
            image_id=node_labels.get(NODEGROUP_IMAGE_LABEL)
            or (claim or {}).get("status", {}).get("imageID"),
            # EC2's CapacityReservationId, as Karpenter labels its nodes with it (a cluster
            # file's node-group node may carry the same label to say it runs in a block).
            capacity_reservation_id=node_labels.get(CAPACITY_RESERVATION_ID_LABEL),
        )
    for instance, claim in claims_by_instance.items():
        if instance not in infos:
            infos[instance] = InstanceInfo(
                instance_id=instance,
                node_name=claim.get("status", {}).get("nodeName"),
                nodeclaim=nodes.name_of(claim),
                nodepool=nodes.labels_of(claim).get(nodes.NODEPOOL_LABEL),
                cluster=cluster,
                tags=tags,
                image_id=claim.get("status", {}).get("imageID"),
                capacity_reservation_id=nodes.labels_of(claim).get(CAPACITY_RESERVATION_ID_LABEL),
            )
    return StaticInstanceDirectory(infos.values())
