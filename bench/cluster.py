"""Synthetic EKS clusters: EC2 instances, and the Nodes, NodeClaims, NodePools and Pods that
Karpenter and a managed node group would have made of them.

With ``source="moto"`` the instances are created in moto's EC2 (tagged as Karpenter and EKS
tag them) and the cluster is generated from what moto returned (ids, private DNS names,
zones); with ``source="static"`` ids and names are made up and a ``StaticInstanceDirectory``
answers for EC2.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lifeboat.model.instances import InstanceInfo, StaticInstanceDirectory

CLUSTER = "bench"
REGION = "us-east-1"
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
INSTANCE_TYPES = ("m5.large", "m5.xlarge", "c5.xlarge", "r5.large")
ASG_NAME = "eks-system-bench"
NODEGROUP = "system"
POD_NAMESPACE = "apps"
AMI = "ami-12c6146b"  # one of moto's default AMIs

Obj = dict[str, Any]


@dataclass(frozen=True)
class Machine:
    """One EC2 instance and the Kubernetes names it goes by."""

    instance_id: str
    node_name: str
    zone: str
    instance_type: str
    nodepool: str | None = None
    nodeclaim: str | None = None
    auto_scaling_group: str | None = None

    @property
    def tags(self) -> dict[str, str]:
        tags = {"eks:cluster-name": CLUSTER, f"kubernetes.io/cluster/{CLUSTER}": "owned"}
        if self.nodepool:
            tags["karpenter.sh/nodepool"] = self.nodepool
        if self.nodeclaim:
            tags["karpenter.sh/nodeclaim"] = self.nodeclaim
        if self.auto_scaling_group:
            tags["aws:autoscaling:groupName"] = self.auto_scaling_group
            tags["eks:nodegroup-name"] = NODEGROUP
        return tags

    def info(self) -> InstanceInfo:
        return InstanceInfo(
            instance_id=self.instance_id,
            node_name=self.node_name,
            nodeclaim=self.nodeclaim,
            nodepool=self.nodepool,
            cluster=CLUSTER,
            auto_scaling_group=self.auto_scaling_group,
            zone=self.zone,
            instance_type=self.instance_type,
            tags=self.tags,
        )


@dataclass
class Cluster:
    machines: list[Machine]
    objects: list[Obj]
    source: str  # "moto" or "static"
    pools: list[str] = field(default_factory=list)

    @property
    def karpenter(self) -> list[Machine]:
        return [m for m in self.machines if m.nodeclaim]

    @property
    def node_group(self) -> list[Machine]:
        return [m for m in self.machines if m.auto_scaling_group]

    def directory(self) -> StaticInstanceDirectory:
        return StaticInstanceDirectory(m.info() for m in self.machines)

    def count(self, kind: str) -> int:
        return sum(1 for o in self.objects if o["kind"] == kind)


@dataclass(frozen=True)
class Pool:
    """A NodePool to generate: its name, disruption budgets and annotations."""

    name: str
    budgets: tuple[Mapping[str, Any], ...] = ({"nodes": "20%"},)
    annotations: Mapping[str, str] = field(default_factory=dict)


def pool_names(pools: int) -> list[str]:
    return [f"pool-{i:02d}" for i in range(pools)]


def _layout(nodes: int, names: Sequence[str], asg_nodes: int) -> Iterator[tuple[str | None, int]]:
    """(nodepool or None for the node group, index) for every machine, pools round-robin."""
    for i in range(nodes - asg_nodes):
        yield names[i % len(names)], i
    for i in range(asg_nodes):
        yield None, nodes - asg_nodes + i


def static_machines(
    nodes: int, names: Sequence[str], asg_nodes: int, seed: int = 7
) -> list[Machine]:
    rng = random.Random(seed)
    machines = []
    for pool, i in _layout(nodes, names, asg_nodes):
        zone = ZONES[i % len(ZONES)]
        node_name = f"ip-10-{(i >> 16) & 255}-{(i >> 8) & 255}-{i & 255}.ec2.internal"
        machines.append(
            Machine(
                instance_id=f"i-{rng.getrandbits(68):017x}",
                node_name=node_name,
                zone=zone,
                instance_type=INSTANCE_TYPES[i % len(INSTANCE_TYPES)],
                nodepool=pool,
                nodeclaim=f"{pool}-{i:05d}" if pool else None,
                auto_scaling_group=None if pool else ASG_NAME,
            )
        )
    return machines


def moto_machines(ec2: Any, nodes: int, names: Sequence[str], asg_nodes: int) -> list[Machine]:
    """Launch the instances in moto (one RunInstances per NodePool and zone), tag each with
    its NodeClaim, and read back what moto made of them."""
    groups: dict[tuple[str | None, str, str], list[int]] = {}
    for pool, i in _layout(nodes, names, asg_nodes):
        key = (pool, ZONES[i % len(ZONES)], INSTANCE_TYPES[i % len(INSTANCE_TYPES)])
        groups.setdefault(key, []).append(i)
    machines: dict[int, Machine] = {}
    for (pool, zone, instance_type), indexes in groups.items():
        template = Machine("", "", zone, instance_type, pool, None, None if pool else ASG_NAME)
        reply = ec2.run_instances(
            ImageId=AMI,
            MinCount=len(indexes),
            MaxCount=len(indexes),
            InstanceType=instance_type,
            Placement={"AvailabilityZone": zone},
            TagSpecifications=[
                {
                    "ResourceType": "instance",
                    "Tags": [{"Key": k, "Value": v} for k, v in template.tags.items()],
                }
            ],
        )
        for index, instance in zip(indexes, reply["Instances"], strict=True):
            claim = f"{pool}-{index:05d}" if pool else None
            if claim:
                ec2.create_tags(
                    Resources=[instance["InstanceId"]],
                    Tags=[{"Key": "karpenter.sh/nodeclaim", "Value": claim}],
                )
            machines[index] = Machine(
                instance_id=instance["InstanceId"],
                node_name=instance["PrivateDnsName"],
                zone=instance["Placement"]["AvailabilityZone"],
                instance_type=instance["InstanceType"],
                nodepool=pool,
                nodeclaim=claim,
                auto_scaling_group=template.auto_scaling_group,
            )
    # In layout order, so consecutive Karpenter machines are in different NodePools.
    return [machines[i] for i in sorted(machines)]


# --- Kubernetes objects -------------------------------------------------------------------

REQUIREMENTS = [
    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]},
    {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m", "r"]},
    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
]
NODE_CLASS = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
CREATED = "2026-11-20T08:00:00Z"


def _uid(kind: int, index: int) -> str:
    return f"00000000-0000-4000-8{kind:03x}-{index:012x}"


def nodepool(
    name: str,
    index: int,
    budgets: Sequence[Mapping[str, Any]] = ({"nodes": "20%"},),
    annotations: Mapping[str, str] | None = None,
) -> Obj:
    metadata: Obj = {"name": name, "uid": _uid(1, index)}
    if annotations:
        metadata["annotations"] = dict(annotations)
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": metadata,
        "spec": {
            "template": {
                "metadata": {"labels": {"team": f"team-{index % 5}"}},
                "spec": {
                    "nodeClassRef": NODE_CLASS,
                    "requirements": REQUIREMENTS,
                    "expireAfter": "720h",
                    "terminationGracePeriod": "48h",
                },
            },
            "disruption": {
                "consolidationPolicy": "WhenEmptyOrUnderutilized",
                "budgets": [dict(budget) for budget in budgets],
            },
        },
    }


def _labels(machine: Machine) -> dict[str, str]:
    labels = {
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": machine.instance_type,
        "topology.kubernetes.io/zone": machine.zone,
        "topology.kubernetes.io/region": REGION,
    }
    if machine.nodepool:
        labels["karpenter.sh/nodepool"] = machine.nodepool
        labels["karpenter.sh/capacity-type"] = "spot"
        labels["karpenter.sh/registered"] = "true"
        labels["karpenter.sh/initialized"] = "true"
    else:
        labels["eks.amazonaws.com/nodegroup"] = NODEGROUP
        labels["eks.amazonaws.com/capacityType"] = "ON_DEMAND"
    return labels


def node_objects(machine: Machine, index: int, pool_uids: dict[str, str]) -> list[Obj]:
    provider_id = f"aws:///{machine.zone}/{machine.instance_id}"
    ready = [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]
    labels = _labels(machine)
    node: Obj = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": machine.node_name,
            "uid": _uid(2, index),
            "creationTimestamp": CREATED,
            "labels": {**labels, "kubernetes.io/hostname": machine.node_name},
            # What the kubelet and the attach-detach controller put on every Node.
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        "spec": {"providerID": provider_id},
        "status": {
            "allocatable": {"cpu": "1930m", "memory": "7220Mi", "pods": "29"},
            "conditions": ready,
        },
    }
    objects = [node]
    if machine.nodeclaim and machine.nodepool:
        claim_uid = _uid(3, index)
        node["metadata"]["ownerReferences"] = [
            {
                "apiVersion": "karpenter.sh/v1",
                "kind": "NodeClaim",
                "name": machine.nodeclaim,
                "uid": claim_uid,
                "blockOwnerDeletion": True,
            }
        ]
        objects.append(
            {
                "apiVersion": "karpenter.sh/v1",
                "kind": "NodeClaim",
                "metadata": {
                    "name": machine.nodeclaim,
                    "uid": claim_uid,
                    "creationTimestamp": CREATED,
                    # As on a live cluster: the Node outlives its claim's deletion while
                    # Karpenter drains it (without it the garbage collector takes the Node).
                    "finalizers": ["karpenter.sh/termination"],
                    "labels": labels,
                    "ownerReferences": [
                        {
                            "apiVersion": "karpenter.sh/v1",
                            "kind": "NodePool",
                            "name": machine.nodepool,
                            "uid": pool_uids[machine.nodepool],
                            "blockOwnerDeletion": True,
                        }
                    ],
                },
                "spec": {
                    "nodeClassRef": NODE_CLASS,
                    "requirements": REQUIREMENTS,
                    "expireAfter": "720h",
                },
                "status": {
                    "providerID": provider_id,
                    "nodeName": machine.node_name,
                    "capacity": {"cpu": "2", "memory": "8Gi"},
                    "conditions": ready,
                },
            }
        )
    return objects


def pod_objects(machine: Machine, index: int, per_node: int) -> list[Obj]:
    pods = []
    for k in range(per_node):
        app = f"app-{(index + k) % 50}"
        pods.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"{app}-{index:05d}-{k}",
                    "namespace": POD_NAMESPACE,
                    "uid": _uid(4, index * per_node + k),
                    "creationTimestamp": CREATED,
                    "labels": {"app": app},
                    "ownerReferences": [
                        {
                            "apiVersion": "apps/v1",
                            "kind": "ReplicaSet",
                            "name": f"{app}-5d8f7c",
                            "uid": _uid(5, (index + k) % 50),
                            "controller": True,
                        }
                    ],
                },
                "spec": {
                    "nodeName": machine.node_name,
                    "containers": [{"name": "app", "image": "public.ecr.aws/nginx/nginx"}],
                },
                "status": {
                    "phase": "Running",
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            }
        )
    return pods


def build_cluster(
    nodes: int,
    *,
    pools: int | Sequence[Pool] = 20,
    pods_per_node: int = 3,
    asg_nodes: int = 10,
    ec2: Any = None,
    seed: int = 7,
) -> Cluster:
    """``nodes`` machines in total: ``asg_nodes`` in a managed node group, the rest spread
    round-robin over the NodePools (``pools`` of them with a 20 % budget, or those given).
    ``ec2``: a (moto) EC2 client to launch them in; ``seed``: of the static instance ids
    (clusters of one fleet need distinct ones)."""
    specs = [Pool(name) for name in pool_names(pools)] if isinstance(pools, int) else list(pools)
    names = [spec.name for spec in specs]
    asg_nodes = min(asg_nodes, max(0, nodes - len(names)))
    if ec2 is not None:
        machines = moto_machines(ec2, nodes, names, asg_nodes)
        source = "moto"
    else:
        machines = static_machines(nodes, names, asg_nodes, seed)
        source = "static"
    objects: list[Obj] = [
        nodepool(spec.name, i, spec.budgets, spec.annotations) for i, spec in enumerate(specs)
    ]
    pool_uids = {o["metadata"]["name"]: o["metadata"]["uid"] for o in objects}
    # Lifeboat's Leases live in the namespace deploy/rbac.yaml creates.
    objects.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "lifeboat"}})
    for index, machine in enumerate(machines):
        objects += node_objects(machine, index, pool_uids)
        objects += pod_objects(machine, index, pods_per_node)
    return Cluster(machines, objects, source, names)
