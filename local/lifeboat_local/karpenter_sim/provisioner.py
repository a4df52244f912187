"""Karpenter's provisioner for the pods that fit no node: new NodeClaims from the cluster's
NodePools, as ``Scheduler.Solve`` makes them (kubernetes-sigs/karpenter,
pkg/controllers/provisioning/scheduling/scheduler.go), converted pools included:

- the pools: those not static, not being deleted and ``Ready`` (``Provisioner.NewScheduler``),
  by weight, heaviest first, then by name (``OrderByWeight``);
- the pods: largest cpu and memory requests first (the scheduling ``Queue``);
- each pod goes to a claim this pass already makes if one can still hold it (the fewest
  pods first: ``addToInflightNode``), else to a new claim of the first pool that takes it
  (``addToNewNodeClaim``): the pool's taints tolerated, its requirements and labels
  compatible with the pod's node selector and required node affinity, an instance type of
  the pool (its ``node.kubernetes.io/instance-type`` and other requirements, over the
  shipped table: ``instances.table``) holding the pod and the DaemonSets' pods, within the
  pool's ``limits`` (``filterByRemainingResources``: a type whose capacity exceeds what is
  left is no option; each claim takes the largest capacity of its options off what is left);
- a claim asks for the types that hold all its pods (its instance-type requirement
  narrowed to them, the cheapest launched) and the pods' requests (``spec.resources``).

A pod no pool takes is said, once per reason, with the reason per pool (what the
provisioner logs as "could not schedule pod"), and written on the pod's ``PodScheduled``
condition, as ``kubectl describe pod`` shows it.

:func:`pool_status` stands in for Karpenter's NodePool status controllers for a pool no
controller has seen yet (a cluster file, a pool made by ``lifeboat convert``): ``Ready``
when its EC2NodeClass is in the cluster, not Ready naming it otherwise (a file holding no
EC2NodeClass at all leaves its pools unjudged).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from lifeboat.karpenter.quantities import parse_resources
from lifeboat.karpenter.replacement import nodepool_not_ready
from lifeboat.karpenter.requirements import Requirement
from lifeboat.kube import nodes
from lifeboat.model.objects import MutableObj as Obj

from . import instances
from .fit import queue_order, selects, template_claim
from .state import SimState, editable, pod_key, requests_of, set_condition

# Requirement keys Karpenter fills in at launch (the instance's), not the template's labels.
_LAUNCH_KEYS = frozenset({nodes.ZONE_LABEL, nodes.CAPACITY_TYPE_LABEL})


@dataclass
class PoolOption:
    """A pool as the provisioner weighs it this pass."""

    pool: Obj
    template: Obj  # the claim its template yields (labels, taints, requirements)
    types: list[str]  # instance types its requirements allow, smallest first
    remaining: dict[str, float] | None  # what its limits leave (None: no limits)

    @property
    def name(self) -> str:
        return nodes.name_of(self.pool)


@dataclass
class NewClaim:
    option: PoolOption
    types: list[str]  # the types that still hold every pod packed in it
    cpu: float
    memory: float
    pods: list[Obj] = field(default_factory=list)


def pool_status(state: SimState) -> None:
    """Karpenter's NodePool readiness and validation controllers, for a pool with no
    conditions yet: Ready when its node class (an EC2NodeClass) is in the cluster."""
    classes = {nodes.name_of(c) for c in state.view("EC2NodeClass")}
    if not classes:
        # A file without node classes (hand-written, or dumped without them): its pools are
        # not judged, as Lifeboat does not judge a pool with no conditions.
        return
    for pool in state.view("NodePool"):
        if (pool.get("status") or {}).get("conditions"):
            continue
        ref = ((pool.get("spec") or {}).get("template") or {}).get("spec", {}).get("nodeClassRef")
        wanted = str((ref or {}).get("name", ""))
        pool = editable(pool)
        stamp = state.stamp()
        set_condition(pool, "ValidationSucceeded", "True", "ValidationSucceeded", stamp)
        if wanted in classes:
            set_condition(pool, "NodeClassReady", "True", "NodeClassReady", stamp)
            set_condition(pool, "Ready", "True", "Ready", stamp)
        else:
            set_condition(pool, "NodeClassReady", "False", "NodeClassNotFound", stamp)
            pool["status"]["conditions"][-1]["message"] = f"EC2NodeClass {wanted!r} not found"
            set_condition(pool, "Ready", "False", "NodeClassReady", stamp)
        state.put(pool)
        state.step("nodepool-status", pool, _readiness(pool), nodepool=nodes.name_of(pool))


def _readiness(pool: Obj) -> str:
    return nodepool_not_ready(pool) or "Ready (its EC2NodeClass is in the cluster)"


def options(pools: list[Obj], claims: list[Obj]) -> tuple[list[PoolOption], dict[str, str]]:
    """The pools new claims may come from, heaviest first; and why each other pool is not."""
    usable, left_out = [], {}
    for pool in pools:
        template = template_claim(pool)
        why = _left_out(pool, template)
        if why is not None or template is None:
            left_out[nodes.name_of(pool)] = why or "its template yields no valid NodeClaim"
            continue
        types = _types(template)
        if not types:
            left_out[nodes.name_of(pool)] = "no instance type meets its requirements"
            continue
        usable.append(PoolOption(pool, template, types, _remaining(pool, claims)))
    usable.sort(key=lambda o: (-int((o.pool.get("spec") or {}).get("weight") or 0), o.name))
    return usable, left_out


def _left_out(pool: Obj, template: Obj | None) -> str | None:
    """Why ``Provisioner.NewScheduler`` leaves the pool out (None: it does not)."""
    if (pool.get("spec") or {}).get("replicas") is not None:
        return "static (spec.replicas): its count is kept, not grown for pods"
    if nodes.is_deleting(pool):
        return "being deleted"
    not_ready = nodepool_not_ready(pool)
    if not_ready is not None:
        return not_ready.removeprefix(f"NodePool {nodes.name_of(pool)} ")
    return None if template is not None else "its template yields no valid NodeClaim"


def _requirements(claim: Obj) -> dict[str, Requirement]:
    merged: dict[str, Requirement] = {}
    for raw in (claim.get("spec") or {}).get("requirements") or []:
        requirement = Requirement.parse(raw)
        known = merged.get(requirement.key)
        merged[requirement.key] = known.intersect(requirement) if known else requirement
    return merged


def _types(template: Obj) -> list[str]:
    """The table's instance types the template's requirements allow, smallest first."""
    requirements = _requirements(template)
    allowed = [
        name
        for name in instances.table()
        if all(
            r.allows(value)
            for key, r in requirements.items()
            if (value := instances.type_labels(name).get(key)) is not None
        )
    ]
    return sorted(allowed, key=lambda t: (instances.size_of(t), t))


def _remaining(pool: Obj, claims: list[Obj]) -> dict[str, float] | None:
    """What the pool's ``limits`` leave, after the capacity of its claims (Karpenter's
    cluster state counts every claim of the pool until it is gone)."""
    limits = parse_resources((pool.get("spec") or {}).get("limits"))
    if not limits:
        return None
    left = {key: float(value) for key, value in limits.items()}
    for claim in claims:
        if nodes.labels_of(claim).get(nodes.NODEPOOL_LABEL) != nodes.name_of(pool):
            continue
        used = parse_resources((claim.get("status") or {}).get("capacity"))
        if not used:  # not launched yet: what it asked for
            used = parse_resources((claim.get("spec") or {}).get("resources", {}).get("requests"))
        for key in left:
            left[key] -= float(used.get(key, 0))
        if "nodes" in left:
            left["nodes"] -= 1
    return left


def daemon_overhead(pods: list[Obj]) -> tuple[float, float]:
    """The requests of one pod of each DaemonSet: what every new node runs besides
    (``daemonOverheadGroups``)."""
    seen: dict[str, tuple[float, float]] = {}
    for pod in pods:
        for ref in pod["metadata"].get("ownerReferences") or []:
            if ref.get("kind") == "DaemonSet" and ref.get("uid") not in seen:
                seen[str(ref.get("uid"))] = requests_of(pod)
    return sum(c for c, _ in seen.values()), sum(m for _, m in seen.values())


def solve(
    option_list: list[PoolOption],
    left_out: Mapping[str, str],
    homeless: list[Obj],
    overhead: tuple[float, float],
) -> tuple[list[NewClaim], dict[str, str]]:
    """The new claims for ``homeless`` pods, and why each pod left over fits no pool."""
    made: list[NewClaim] = []
    unplaced: dict[str, str] = {}
    for pod in sorted(homeless, key=queue_order):
        made.sort(key=lambda c: len(c.pods))
        if any(_add(claim, pod) for claim in made):
            continue
        reasons = []
        for option in option_list:
            claim, why = _new_claim(option, pod, overhead)
            if claim is not None:
                made.append(claim)
                break
            reasons.append(f"NodePool {option.name}: {why}")
        else:
            reasons += [f"NodePool {name}: {why}" for name, why in sorted(left_out.items())]
            unplaced[pod_key(pod)] = "; ".join(reasons) or "the cluster has no NodePool"
    return made, unplaced


def _add(claim: NewClaim, pod: Obj) -> bool:
    """Pack ``pod`` into ``claim`` if it may run there and some option still holds all."""
    if _incompatible(claim.option, pod) is not None:
        return False
    cpu, memory = requests_of(pod)
    holding = _holding(claim.types, claim.cpu + cpu, claim.memory + memory, pod, claim.option)
    if not holding:
        return False
    claim.types, claim.cpu, claim.memory = holding, claim.cpu + cpu, claim.memory + memory
    claim.pods.append(pod)
    return True


def _new_claim(
    option: PoolOption, pod: Obj, overhead: tuple[float, float]
) -> tuple[NewClaim | None, str]:
    why = _incompatible(option, pod)
    if why is not None:
        return None, why
    left = option.remaining
    if left is not None and left.get("nodes", 1) < 1:
        return None, "node limits have been exhausted"
    types = [t for t in option.types if _within(t, left)]
    if not types:
        return None, "all available instance types exceed its limits"
    cpu, memory = requests_of(pod)
    need = (overhead[0] + cpu, overhead[1] + memory)
    holding = _holding(types, need[0], need[1], pod, option)
    if not holding:
        return None, f"no instance type of it holds the pod ({cpu:g} cpu, {memory / 2**30:.1f}Gi)"
    if left is not None:  # the largest option's capacity is taken off what is left
        vcpus, memory_mib = max(instances.size_of(t) for t in holding)
        left["cpu"] = left.get("cpu", float("inf")) - vcpus
        left["memory"] = left.get("memory", float("inf")) - memory_mib * 2**20
        left["nodes"] = left.get("nodes", float("inf")) - 1
    return NewClaim(option, holding, need[0], need[1], [pod]), ""


def _within(instance_type: str, left: Mapping[str, float] | None) -> bool:
    if left is None:
        return True
    vcpus, memory_mib = instances.size_of(instance_type)
    return vcpus <= left.get("cpu", float("inf")) and memory_mib * 2**20 <= left.get(
        "memory", float("inf")
    )


def _holding(
    types: list[str], cpu: float, memory: float, pod: Obj, option: PoolOption
) -> list[str]:
    base = nodes.labels_of(option.template)
    return [
        t
        for t in types
        if instances.allocatable(t)[0] >= cpu - 1e-9
        and instances.allocatable(t)[1] >= memory - 1e-9
        and selects(pod, {**base, **instances.type_labels(t), **_launch_labels(option, pod)})
    ]


def _launch_labels(option: PoolOption, pod: Obj) -> dict[str, str]:
    """The zone and capacity type the instance would get: the pod's choice if the pool
    allows it, else the pool's first allowed (what ``instances.choose`` picks)."""
    requirements = _requirements(option.template)
    wanted = (pod.get("spec") or {}).get("nodeSelector") or {}
    labels = {}
    for key, default in (
        (nodes.ZONE_LABEL, "us-east-1a"),
        (nodes.CAPACITY_TYPE_LABEL, "on-demand"),
    ):
        requirement = requirements.get(key)
        choice = wanted.get(key, default)
        if requirement is None or requirement.allows(choice):
            labels[key] = choice
        else:
            labels[key] = requirement.pick(default) or default
    return labels


def _incompatible(option: PoolOption, pod: Obj) -> str | None:
    """Why ``pod`` can never run on a node of ``option`` (its taints, a label it needs that
    the pool does not give); None when it may."""
    for taint in (option.template.get("spec") or {}).get("taints") or []:
        effect = str(taint.get("effect"))
        if effect in ("NoSchedule", "NoExecute") and not nodes.tolerates(
            pod, str(taint.get("key")), effect, str(taint.get("value") or "")
        ):
            return (
                f"its taint {taint.get('key')}={taint.get('value', '')}:{effect} is not tolerated"
            )
    labels = nodes.labels_of(option.template)
    requirements = _requirements(option.template)
    for key, value in ((pod.get("spec") or {}).get("nodeSelector") or {}).items():
        requirement = requirements.get(key)
        if requirement is not None and not requirement.allows(str(value)):
            return f"it requires {key} {_shown(requirement)}, the pod selects {key}={value}"
        known = key in labels or key in _LAUNCH_KEYS or key.startswith("karpenter.k8s.aws/")
        if requirement is None and not known and key not in instances.type_labels("m5.large"):
            return f"its nodes have no label {key} (the pod selects {key}={value})"
        if key in labels and labels[key] != value:
            return f"its nodes are labelled {key}={labels[key]}, the pod selects {key}={value}"
    return None


def _shown(requirement: Requirement) -> str:
    entry = requirement.entries()[0]
    return f"{entry['operator']} {','.join(entry.get('values', []))}".strip()


def claim_for(new: NewClaim) -> Obj:
    """The NodeClaim to create: the template's, asking for the types that hold its pods
    (the cheapest is launched) and for their requests."""
    claim = editable(new.option.template)
    spec = claim["spec"]
    kept = [r for r in spec.get("requirements") or [] if r.get("key") != nodes.INSTANCE_TYPE_LABEL]
    listed = sorted(new.types, key=lambda t: (instances.size_of(t), t))[:60]
    kept.append({"key": nodes.INSTANCE_TYPE_LABEL, "operator": "In", "values": listed})
    spec["requirements"] = kept
    spec["resources"] = {
        "requests": {"cpu": f"{round(new.cpu * 1000)}m", "memory": f"{int(new.memory)}"}
    }
    return claim
