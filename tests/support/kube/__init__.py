"""Kubernetes objects shaped like those of a live Karpenter v1 cluster on EKS.

In the manner of Karpenter's ``pkg/test`` (``test.NodePool(...)``, ``test.NodeClaim(...)``,
``test.Node(test.NodeOptions{...})``): each builder takes an options value whose defaults
make a complete object, changed by keyword::

    nodepool(budgets=[{"nodes": "1"}])
    node(name="ip-10-0-9-9.ec2.internal", ready=False)
    node(NODE_GROUP_NODE, name="ip-10-0-3-16.ec2.internal")  # a prepared options value
    nodeclaim(nodepool="batch", overrides={"metadata": {"labels": {"team": "data"}}})

``overrides`` is deep-merged into the built object last (dicts merge, anything else
replaces; ``REMOVE`` deletes a key), for fields the options do not name. Every call returns
a new object: changing it never changes another test's.

The defaults are the sample cluster's (``events/cluster.yaml``) first Karpenter node: NodePool
``general``, NodeClaim ``general-7xkqz`` on instance ``i-0a1b2c3d4e5f60001`` (a Spot
``m5.large`` in ``us-east-1a``), Node ``ip-10-0-1-11.ec2.internal``. What a live object carries
and which Karpenter code puts it there (kubernetes-sigs/karpenter, ``pkg/controllers/
nodeclaim/lifecycle``, ``pkg/apis/v1``):

- NodeClaim: the ``karpenter.sh/termination`` finalizer (``controller.go``, added before
  launch); the NodePool template's labels plus ``karpenter.sh/nodepool`` and
  ``karpenter.k8s.aws/ec2nodeclass`` (at creation) and the instance's labels (at launch;
  not the lifecycle labels, which are the Node's); the NodePool's
  ``karpenter.sh/nodepool-hash`` and ``karpenter.sh/nodepool-hash-version`` (``v3``)
  annotations; an ownerReference to the NodePool (``blockOwnerDeletion``);
  ``status.providerID`` (``launch.go``), ``status.nodeName`` (``registration.go``) and the
  conditions ``Launched``, ``Registered``, ``Initialized`` and ``Ready``.
- Node: its claim's labels and annotations, copied by registration (``registration.go``),
  the labels ``karpenter.sh/registered`` (``registration.go``) and
  ``karpenter.sh/initialized`` (``initialization.go``), the ``karpenter.sh/termination``
  finalizer and an ownerReference to its NodeClaim (``registration.go``,
  ``UpdateNodeOwnerReferences``); the well-known labels the kubelet and the AWS cloud
  provider set (arch, os, hostname, instance type, zone, region).
- A managed node group's Node (``NODE_GROUP_NODE``): ``eks.amazonaws.com/nodegroup`` and
  ``eks.amazonaws.com/capacityType`` labels, no NodeClaim, no Karpenter finalizer.

The hash annotation is a fixed stand-in (the sample cluster's), not computed from the
template: Lifeboat copies it onto replacements and never checks it.
"""

from .core import NODE_GROUP_NODE, NodeOptions, PdbOptions, PodOptions, node, pdb, pod
from .karpenter import NodeClaimOptions, NodePoolOptions, nodeclaim, nodeclaim_and_node, nodepool
from .meta import (
    CAPACITY_TYPE_LABEL,
    CREATED,
    DEFAULT_BUDGETS,
    HASH_ANNOTATION,
    HASH_VERSION,
    HASH_VERSION_ANNOTATION,
    INITIALIZED_LABEL,
    INSTANCE,
    INSTANCE_TYPE,
    KARPENTER_API,
    NODE,
    NODE_CLASS_REF,
    NODE_UID,
    NODECLAIM,
    NODECLAIM_UID,
    NODEGROUP_CAPACITY_LABEL,
    NODEGROUP_LABEL,
    NODEPOOL,
    NODEPOOL_HASH,
    NODEPOOL_LABEL,
    NODEPOOL_UID,
    REGISTERED_LABEL,
    REMOVE,
    REQUIREMENTS,
    TERMINATION_FINALIZER,
    ZONE,
    InstanceOptions,
    Obj,
    merge,
    owner_reference,
    provider_id,
)

__all__ = [
    "CAPACITY_TYPE_LABEL",
    "CREATED",
    "DEFAULT_BUDGETS",
    "HASH_ANNOTATION",
    "HASH_VERSION",
    "HASH_VERSION_ANNOTATION",
    "INITIALIZED_LABEL",
    "INSTANCE",
    "INSTANCE_TYPE",
    "KARPENTER_API",
    "NODE",
    "NODECLAIM",
    "NODECLAIM_UID",
    "NODEGROUP_CAPACITY_LABEL",
    "NODEGROUP_LABEL",
    "NODEPOOL",
    "NODEPOOL_HASH",
    "NODEPOOL_LABEL",
    "NODEPOOL_UID",
    "NODE_CLASS_REF",
    "NODE_GROUP_NODE",
    "NODE_UID",
    "REGISTERED_LABEL",
    "REMOVE",
    "REQUIREMENTS",
    "TERMINATION_FINALIZER",
    "ZONE",
    "InstanceOptions",
    "NodeClaimOptions",
    "NodeOptions",
    "NodePoolOptions",
    "Obj",
    "PdbOptions",
    "PodOptions",
    "merge",
    "node",
    "nodeclaim",
    "nodeclaim_and_node",
    "nodepool",
    "owner_reference",
    "pdb",
    "pod",
    "provider_id",
]
