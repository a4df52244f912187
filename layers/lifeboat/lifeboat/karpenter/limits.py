"""Which instance types a replacement may launch within its NodePool's ``spec.limits``. Pure.

Karpenter's scheduler (``Scheduler.addToNewNodeClaim``, kubernetes-sigs/karpenter
pkg/controllers/provisioning/scheduling/scheduler.go) keeps, per pool with limits, the
remaining resources (``limits - usage``) and offers a new claim only the instance types whose
capacity fits them (``filterByRemainingResources``: every limited resource, capacity <=
remaining); none left: "all available instance types exceed limits for nodepool". A claim
created by anyone else is launched without that check, so Lifeboat narrows its replacement's
requirements itself.

Without a catalogue of instance types, the narrowing is said in the labels every AWS instance
type carries (karpenter-provider-aws ``pkg/providers/instancetype/types.go``):

- ``cpu``: the capacity is the vCPU count, ``karpenter.k8s.aws/instance-cpu``: at most the
  remaining cpu, exactly Karpenter's filter;
- ``memory``: the capacity is the instance's memory (``karpenter.k8s.aws/instance-memory``,
  MiB) less ``ceil(memory x VM_MEMORY_OVERHEAD_PERCENT)`` (``memory()``; Karpenter's default
  0.075, assumed here; arm64 loses 64 MiB more, so the bound never admits a type over the limit);
- other limited resources (pods, ephemeral-storage, GPUs...) have no label that every type
  carries: they are not narrowed per type; the replacement is refused only when a node like
  the old one would not fit (:func:`lifeboat.karpenter.replacement.replacement_blocker`), and
  the claim's note says which were not narrowed.

The old node leaves with its replacement, so its capacity is added back to what remains.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from fractions import Fraction
from typing import Final

from lifeboat.karpenter.quantities import parse_resources
from lifeboat.karpenter.requirements import Requirement, Unsatisfiable
from lifeboat.model.objects import Obj

INSTANCE_CPU: Final = "karpenter.k8s.aws/instance-cpu"
INSTANCE_MEMORY: Final = "karpenter.k8s.aws/instance-memory"
# Karpenter's --vm-memory-overhead-percent default (VM_MEMORY_OVERHEAD_PERCENT).
VM_MEMORY_OVERHEAD: Final = 0.075
MIB: Final = 2**20
NODES: Final = "nodes"  # limited by the budget of nodes, checked before (one node: one)
# The largest EC2 instance types today (u7in-32tb.224xlarge: 896 vCPUs, 32 TiB): a bound at
# or above them excludes nothing and is left out of the claim (no noise in every replacement
# of a pool whose limits are far away).
LARGEST: Final = {"karpenter.k8s.aws/instance-cpu": 896, "karpenter.k8s.aws/instance-memory": 2**25}


def remaining(
    nodepool: Obj, node: Obj, usage: Mapping[str, Fraction] | None
) -> dict[str, Fraction] | None:
    """``limits - usage``, the leaving node's capacity added back; None when the pool has no
    limits, or its usage is known neither from cluster state nor from ``status.resources``."""
    limits = parse_resources((nodepool.get("spec") or {}).get("limits"))
    if not limits:
        return None
    if usage is None:
        status = nodepool.get("status") or {}
        if "resources" not in status:
            return None
        usage = parse_resources(status.get("resources"))
    leaving = parse_resources((node.get("status") or {}).get("capacity"))
    return {
        name: limit - usage.get(name, Fraction(0)) + leaving.get(name, Fraction(0))
        for name, limit in limits.items()
    }


def max_instance_memory_mib(remaining_bytes: Fraction) -> int:
    """The largest ``instance-memory`` (MiB) whose Karpenter capacity,
    ``S - ceil(S x 0.075)`` MiB (``memory()``, float arithmetic as Go's), is within
    ``remaining_bytes``; -1 when none is."""
    allowed = math.floor(remaining_bytes / MIB)
    if allowed < 0:
        return -1
    size = math.floor(allowed / (1 - VM_MEMORY_OVERHEAD)) + 2
    while size >= 0 and size - math.ceil(size * MIB * VM_MEMORY_OVERHEAD / MIB) > allowed:
        size -= 1
    return size


def narrow(requirements: dict[str, Requirement], left: Mapping[str, Fraction]) -> list[str]:
    """Narrow ``requirements`` to the instance types whose cpu and memory fit ``left``; the
    limited resources that could not be narrowed per type. Raises :class:`Unsatisfiable`
    when no instance type fits, or too few for a ``minValues``."""
    caps: dict[str, int] = {}
    if "cpu" in left:
        caps[INSTANCE_CPU] = math.floor(left["cpu"])
    if "memory" in left:
        caps[INSTANCE_MEMORY] = max_instance_memory_mib(left["memory"])
    for key, most in caps.items():
        if most < LARGEST[key]:
            _cap(requirements, key, most)
    return sorted(name for name in left if name not in ("cpu", "memory", NODES))


def _cap(requirements: dict[str, Requirement], key: str, most: int) -> None:
    cap = Requirement(key, frozenset(), True, None, most, origin="limit")
    current = requirements.get(key)
    narrowed = cap if current is None else replace(current.intersect(cap), origin=current.origin)
    empty = not narrowed.complement and not narrowed.values
    if most < 1 or empty or (narrowed.gte is not None and narrowed.gte > most):
        raise Unsatisfiable(
            f"all available instance types exceed its limits ({key} at most {max(most, 0)} "
            "fits what remains)"
        )
    if not narrowed.complement and len(narrowed.values) < (narrowed.min_values or 0):
        raise Unsatisfiable(
            f"within its limits {key} keeps {len(narrowed.values)} value(s), fewer than "
            f"minValues {narrowed.min_values}"
        )
    requirements[key] = narrowed
