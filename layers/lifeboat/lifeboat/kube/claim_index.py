"""Instances found from the cluster's side: Karpenter's NodeClaims by the instance they run on.

Karpenter's own interruption controller never asks EC2 which node a Spot warning's instance
is: it lists NodeClaims by an index of ``status.providerID``'s instance id (``status.instanceID``,
aws/karpenter-provider-aws ``pkg/operator/operator.go``) and acts on the claim it finds
(``pkg/controllers/interruption/utils.go``, ``InterruptionHandler.handleMessage``). A NodeClaim
knows what Lifeboat asks EC2 for on a Karpenter node: the node's name (``status.nodeName``),
the claim itself, its NodePool (its ``karpenter.sh/nodepool`` label), the zone and instance
(``status.providerID``, the very string the Node carries, which guards the taint's patch),
the instance type and AMI.

Pure: from the claims as listed to what each says about its instance. A claim that names
no instance yet (not launched) or no node yet (not registered) answers nothing: EC2 is asked.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from lifeboat.kube import nodes
from lifeboat.model.instances import (
    InstanceInfo,
    instance_id_from_provider_id,
    zone_from_provider_id,
)

# The capacity reservation a claim was launched into (karpenter.k8s.aws/v1's
# LabelCapacityReservationID).
CAPACITY_RESERVATION_LABEL = "karpenter.k8s.aws/capacity-reservation-id"


def info_from_claim(claim: Mapping[str, Any], cluster: str | None) -> InstanceInfo | None:
    """What a NodeClaim says of its instance, or None when it names no instance or node.

    EC2's state and tags are not known from here (``state`` None, no tags): only notices
    whose handling needs neither are answered this way (``lifeboat.flow.lookup``)."""
    status = claim.get("status") or {}
    provider = status.get("providerID")
    instance_id = instance_id_from_provider_id(provider)
    node_name = status.get("nodeName")
    zone = zone_from_provider_id(provider)
    if not instance_id or not node_name or not zone:
        return None
    labels = nodes.labels_of(claim)
    return InstanceInfo(
        instance_id=instance_id,
        node_name=node_name,
        nodeclaim=nodes.name_of(claim),
        nodepool=labels.get(nodes.NODEPOOL_LABEL) or None,
        cluster=cluster,
        zone=zone,
        instance_type=labels.get(nodes.INSTANCE_TYPE_LABEL) or None,
        image_id=status.get("imageID") or None,
        capacity_reservation_id=labels.get(CAPACITY_RESERVATION_LABEL) or None,
        from_nodeclaim=True,
    )


def index_claims(
    claims: Iterable[Mapping[str, Any]], cluster: str | None
) -> dict[str, InstanceInfo]:
    """Instance id -> what its NodeClaim says. Two claims naming one instance (a forged or
    left-over claim beside Karpenter's) answer nothing for it: EC2 decides."""
    index: dict[str, InstanceInfo] = {}
    doubled: set[str] = set()
    for claim in claims:
        info = info_from_claim(claim, cluster)
        if info is None:
            continue
        if info.instance_id in index:
            doubled.add(info.instance_id)
        index[info.instance_id] = info
    for instance_id in doubled:
        del index[instance_id]
    return index
