"""What a mixed-instances Auto Scaling group says beyond its instance types: the Spot share
of its ``InstancesDistribution``, and the launch templates its overrides bring for some types
(e.g. an arm64 AMI for c6g.large), which one EC2NodeClass can hold only as one AMI per
architecture (Karpenter boots each instance type from the newest AMI of its architecture
among the class's ``amiSelectorTerms``: karpenter-provider-aws ``amifamily``
``MapToInstanceTypes``).
"""

from __future__ import annotations

from typing import Any

from lifeboat_local.convert.model import ConversionError, NodeGroup

# Karpenter's docs, concepts/scheduling "On-Demand/Spot Ratio Split": the way to keep a ratio.
RATIO_RECIPE = (
    "to keep a ratio, split the pool as Karpenter's docs show ('On-Demand/Spot Ratio "
    "Split': a Spot and an on-demand pool told apart by a capacity-spread label, and "
    "topologySpreadConstraints on that label in the workloads)"
)
# Launch template fields an override's own template may change and one class still holds.
PER_TYPE = ("ImageId", "InstanceType")


def capacity_type(group: NodeGroup, mixed: dict[str, Any]) -> None:
    """The pool's capacity type from the group's distribution: all on-demand (no mixed
    policy, or 100 % above the base) or all Spot (0 % and no base) convert exactly; a share
    of each is kept on-demand, the safe side, and said on stderr and in the annotation."""
    if not mixed:
        return
    distribution = mixed.get("InstancesDistribution") or {}
    base = int(distribution.get("OnDemandBaseCapacity") or 0)
    above = int(distribution.get("OnDemandPercentageAboveBaseCapacity", 100))
    if above == 100:
        return
    if above == 0 and base == 0:
        group.capacity_type = "spot"
        return
    share = f"{base} on-demand, then {100 - above}% Spot above them"
    group.choices.append(f"Spot share ({share}) not kept: on-demand only (Karpenter has no ratio)")
    group.notes.append(
        f"{group.source}: the group runs {share}; Karpenter has no ratio, so the pool is "
        f"on-demand only (the safe side: no interruptions, a higher bill); {RATIO_RECIPE}"
    )


def differences(base: dict[str, Any], other: dict[str, Any]) -> list[str]:
    """The launch template fields (but the AMI and instance type) that differ."""
    keys = (set(base) | set(other)) - set(PER_TYPE)
    return sorted(key for key in keys if base.get(key) != other.get(key))


def one_ami_per_arch(
    group: NodeGroup, amis: dict[str, list[str]], images: dict[str, dict[str, Any]]
) -> dict[str, str]:
    """Architecture -> AMI id, from AMI id -> the types launched with it; a refusal naming
    the types when two AMIs share an architecture (one class would boot both kinds of type
    from either) or when an AMI's architecture is not one Karpenter launches."""
    by_arch: dict[str, str] = {}
    for ami, types in amis.items():
        arch = KUBE_ARCH.get(str(images.get(ami, {}).get("Architecture")))
        if arch is None:
            raise ConversionError(
                f"{group.source}: AMI {ami} (for {', '.join(types)}): its architecture "
                f"{images.get(ami, {}).get('Architecture')!r} is not x86_64 or arm64"
            )
        if arch in by_arch and by_arch[arch] != ami:
            others = [t for a, ts in amis.items() if a == by_arch[arch] for t in ts]
            raise ConversionError(
                f"{group.source}: two {arch} AMIs: {by_arch[arch]} for {', '.join(others)} "
                f"and {ami} for {', '.join(types)}; from one EC2NodeClass Karpenter boots the "
                "newest on all of them: convert these types as separate pools, or use one AMI"
            )
        by_arch[arch] = ami
    return by_arch


def check_bootable(group: NodeGroup, arches: dict[str, str]) -> None:
    """Refuse a pool allowing instance types its class has no AMI for (Karpenter could
    never launch them); ``arches`` is each type's ``kubernetes.io/arch``."""
    if not group.ami_arches:
        return
    stranded = sorted(t for t, arch in arches.items() if arch not in group.ami_arches)
    if stranded:
        have = ", ".join(f"{a} ({ami})" for a, ami in sorted(group.ami_arches.items()))
        raise ConversionError(
            f"{group.source}: no AMI for {', '.join(stranded)}: the group's launch templates "
            f"give AMIs for {have} only; give those types an override launch template with "
            "an AMI of their architecture, or leave them out"
        )


# DescribeImages Architecture -> kubernetes.io/arch (an AMI has one).
KUBE_ARCH = {"x86_64": "amd64", "arm64": "arm64"}
