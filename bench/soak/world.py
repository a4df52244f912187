"""The soak's cluster: bench's generated cluster with NodePools that disagree about
disruption, and what a real cluster adds that the soak must meet.

- NodePools: ``general`` (20 %, and nothing during business hours: voluntary work waits),
  ``batch`` (2 nodes), ``gpu`` (10 %), ``burst`` (100 %), ``legacy`` (opted out of Lifeboat).
- A managed node group (one node in seven, no NodeClaim): drained through the Eviction API.
- ``karpenter.sh/do-not-disrupt`` on some nodes; PodDisruptionBudgets on some apps (some
  evictions answer 429); a DaemonSet pod on every node (never evicted).
- A few "poison" nodes whose every request answers 500: their messages must reach the
  dead-letter queue, not vanish.
- Instances of another cluster, which EC2 describes but this stack does not manage.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from bench.cluster import POD_NAMESPACE, Cluster, Machine, Pool, build_cluster
from lifeboat.kube import nodes
from lifeboat.marks import node_marks
from lifeboat.model.instances import InstanceInfo, StaticInstanceDirectory

from .config import SoakConfig

POOLS = (
    Pool(
        "general",
        (
            {"nodes": "20%"},
            {"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "8h"},
        ),
    ),
    Pool("batch", ({"nodes": "2"},)),
    Pool("gpu", ({"nodes": "10%"},)),
    Pool("burst", ({"nodes": "100%"},)),
    Pool("legacy", ({"nodes": "100%"},), {node_marks.OPT_OUT_ANNOTATION: "true"}),
)
OTHER_CLUSTER = "other"
# Apps whose pods a PodDisruptionBudget of maxUnavailable 1 covers.
PDB_APPS = tuple(f"app-{n}" for n in range(0, 20, 4))

Obj = dict[str, Any]


@dataclass
class World:
    cluster: Cluster
    poison: set[str] = field(default_factory=set)  # instance ids whose node requests all fail
    others: list[str] = field(default_factory=list)  # instances of another cluster

    @property
    def objects(self) -> list[Obj]:
        return self.cluster.objects

    @property
    def machines(self) -> list[Machine]:
        return self.cluster.machines

    def directory(self) -> StaticInstanceDirectory:
        """What DescribeInstances says: this cluster's instances and the other cluster's."""
        infos = [m.info() for m in self.machines]
        infos += [
            InstanceInfo(
                instance_id=i,
                node_name=f"{i}.other",
                cluster=OTHER_CLUSTER,
                tags={"eks:cluster-name": OTHER_CLUSTER},
            )
            for i in self.others
        ]
        return StaticInstanceDirectory(infos)


def build_world(config: SoakConfig, rng: random.Random) -> World:
    cluster = build_cluster(
        config.nodes,
        pools=POOLS,
        pods_per_node=2,
        asg_nodes=config.nodes // 7,
        seed=rng.getrandbits(32),
    )
    # Nothing plays Karpenter in the soak: a claim keeping its termination finalizer would
    # stay "being deleted" forever, and every later notice about its instance would meet it.
    # Deleted here means gone, as once Karpenter has terminated the instance.
    for claim in (o for o in cluster.objects if o["kind"] == "NodeClaim"):
        claim["metadata"].pop("finalizers", None)
    node_objects = [o for o in cluster.objects if o["kind"] == "Node"]
    for index, node in enumerate(node_objects):
        if index % 23 == 5:
            node["metadata"].setdefault("annotations", {})[nodes.DO_NOT_DISRUPT] = "true"
        cluster.objects.append(_daemonset_pod(index, nodes.name_of(node)))
    cluster.objects.extend(_pdb(app) for app in PDB_APPS)
    poison = {m.instance_id for m in rng.sample(cluster.machines, config.poison_nodes)}
    others = [f"i-{rng.getrandbits(68):017x}" for _ in range(10)]
    return World(cluster, poison, others)


def _daemonset_pod(index: int, node_name: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"node-exporter-{index:05d}",
            "namespace": "kube-system",
            "labels": {"app": "node-exporter"},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "DaemonSet",
                    "name": "node-exporter",
                    "uid": "00000000-0000-4000-8006-000000000001",
                    "controller": True,
                }
            ],
        },
        "spec": {
            "nodeName": node_name,
            "containers": [{"name": "exporter", "image": "quay.io/prometheus/node-exporter"}],
        },
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }


def _pdb(app: str) -> Obj:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": app, "namespace": POD_NAMESPACE},
        "spec": {"selector": {"matchLabels": {"app": app}}, "maxUnavailable": 1},
    }
