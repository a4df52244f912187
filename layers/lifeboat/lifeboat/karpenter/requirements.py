"""NodeClaim requirements and labels, as Karpenter's provisioner derives them from a NodePool.

Karpenter (``scheduling.NewNodeClaimTemplate`` and ``NodeClaimTemplate.ToNodeClaim``,
pkg/controllers/provisioning/scheduling/nodeclaimtemplate.go; ``scheduling.Requirement``,
pkg/scheduling/requirement.go):

- the template's requirements, one per key, intersected with an ``In [value]`` requirement
  for every label the claim gets (template labels, ``karpenter.sh/nodepool``, the node class
  label); keys normalised (``beta.kubernetes.io/arch`` is ``kubernetes.io/arch``...);
  ``minValues`` the larger of the two sides;
- labels for custom keys resolved from the requirements (``resolveCustomLabelsFromRequirements``):
  every key that is not well known (those the cloud provider labels at launch) nor
  ``kubernetes.io/hostname`` gets a value the requirement allows. Without it, the drift
  controller's ``areRequirementsDrifted`` finds the label missing and replaces the claim.

Where Karpenter picks a value at random (``Requirement.Any``), Lifeboat picks the old node's
value when the requirement allows it (its pods select it), else the smallest allowed one.
Bounds are written ``Gt``/``Lt`` (which every v1 CRD accepts) rather than Karpenter's newer
``Gte``/``Lte`` canonical form (v1.9+ CRDs only); they select the same nodes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final

from lifeboat.errors import InvalidInput

#: The NodeClaim CRD's ``maxItems`` for ``spec.requirements``.
MAX_REQUIREMENTS: Final = 100

# karpenter.sh/v1 labels.go WellKnownLabels, with the AWS provider's additions (its
# pkg/apis/v1/labels.go init()): these arrive from the instance at launch, never at creation.
WELL_KNOWN_LABELS: Final = frozenset(
    {
        "karpenter.sh/nodepool",
        "topology.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        "node.kubernetes.io/instance-type",
        "kubernetes.io/arch",
        "kubernetes.io/os",
        "karpenter.sh/capacity-type",
        "node.kubernetes.io/windows-build",
        "topology.k8s.aws/zone-id",
        *(
            f"karpenter.k8s.aws/{name}"
            for name in (
                "capacity-reservation-id",
                "capacity-reservation-type",
                "capacity-reservation-interruptible",
                "instance-hypervisor",
                "instance-encryption-in-transit-supported",
                "nitro-sandbox",
                "instance-category",
                "instance-capability-flex",
                "instance-family",
                "instance-generation",
                "instance-size",
                "instance-local-nvme",
                "instance-cpu",
                "instance-cpu-manufacturer",
                "instance-cpu-sustained-clock-speed-mhz",
                "instance-memory",
                "instance-ebs-bandwidth",
                "instance-network-bandwidth",
                "instance-gpu-name",
                "instance-gpu-manufacturer",
                "instance-gpu-count",
                "instance-gpu-memory",
                "instance-accelerator-name",
                "instance-accelerator-manufacturer",
                "instance-accelerator-count",
                "instance-tenancy",
                "placement-group-id",
                "placement-group-partition",
            )
        ),
    }
)
RESTRICTED_LABELS: Final = frozenset({"kubernetes.io/hostname"})
# labels.go NormalizedLabels.
NORMALIZED_LABELS: Final = {
    "failure-domain.beta.kubernetes.io/zone": "topology.kubernetes.io/zone",
    "beta.kubernetes.io/arch": "kubernetes.io/arch",
    "beta.kubernetes.io/os": "kubernetes.io/os",
    "beta.kubernetes.io/instance-type": "node.kubernetes.io/instance-type",
    "failure-domain.beta.kubernetes.io/region": "topology.kubernetes.io/region",
}


class Unsatisfiable(InvalidInput):
    """The pool's template cannot yield a valid claim (the message says which key and why)."""


@dataclass(frozen=True)
class Requirement:
    """One key's constraint, as Karpenter holds it: a value set or its complement, optional
    integer bounds, and ``minValues``."""

    key: str
    values: frozenset[str] = frozenset()
    complement: bool = False  # True: every value except ``values``
    gte: int | None = None
    lte: int | None = None
    min_values: int | None = None
    origin: str = field(default="template", compare=False)  # "template" or "label"

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> Requirement:
        key = str(raw.get("key", ""))
        key = NORMALIZED_LABELS.get(key, key)
        operator = raw.get("operator")
        values = [str(v) for v in raw.get("values") or []]
        min_values = raw.get("minValues")
        if operator == "In":
            return cls(key, frozenset(values), False, min_values=min_values)
        if operator == "NotIn":
            return cls(key, frozenset(values), True, min_values=min_values)
        if operator == "Exists":
            return cls(key, frozenset(), True, min_values=min_values)
        if operator == "DoesNotExist":
            return cls(key, frozenset(), False, min_values=min_values)
        try:
            bound = int(values[0])
        except (IndexError, ValueError):
            raise Unsatisfiable(
                f"requirement {key}: {operator} needs one integer value, got {values}"
            ) from None
        bounds: dict[str, tuple[int | None, int | None]] = {
            "Gt": (bound + 1, None),
            "Gte": (bound, None),
            "Lt": (None, bound - 1),
            "Lte": (None, bound),
        }
        if operator not in bounds:
            raise Unsatisfiable(f"requirement {key}: unknown operator {operator!r}")
        gte, lte = bounds[operator]
        return cls(key, frozenset(), True, gte, lte, min_values)

    def allows(self, value: str) -> bool:
        listed = value in self.values
        return (not listed if self.complement else listed) and self._within(value)

    def _within(self, value: str) -> bool:
        if self.gte is None and self.lte is None:
            return True
        try:
            number = int(value)
        except ValueError:
            return False
        return (self.gte is None or number >= self.gte) and (self.lte is None or number <= self.lte)

    def intersect(self, other: Requirement) -> Requirement:
        """Karpenter's ``Requirement.Intersection``."""
        gte = max((b for b in (self.gte, other.gte) if b is not None), default=None)
        lte = min((b for b in (self.lte, other.lte) if b is not None), default=None)
        minimum = max((m for m in (self.min_values, other.min_values) if m), default=None)
        origin = "template" if "template" in (self.origin, other.origin) else "label"
        if gte is not None and lte is not None and gte > lte:
            return Requirement(self.key, min_values=minimum, origin=origin)
        if self.complement and other.complement:
            values = self.values | other.values
        elif self.complement:
            values = other.values - self.values
        elif other.complement:
            values = self.values - other.values
        else:
            values = self.values & other.values
        complement = self.complement and other.complement
        bounded = Requirement(self.key, frozenset(), True, gte, lte)
        values = frozenset(v for v in values if bounded._within(v))
        if not complement:
            gte = lte = None
        return Requirement(self.key, values, complement, gte, lte, minimum, origin)

    def entries(self) -> list[dict[str, Any]]:
        """The ``spec.requirements`` entries for this key (two when both bounds are set)."""
        extra: dict[str, Any] = {"minValues": self.min_values} if self.min_values else {}
        listed = sorted(self.values)
        if not self.complement:
            if listed:
                return [{"key": self.key, "operator": "In", "values": listed, **extra}]
            return [{"key": self.key, "operator": "DoesNotExist", **extra}]
        out: list[dict[str, Any]] = []
        if listed:
            out.append({"key": self.key, "operator": "NotIn", "values": listed, **extra})
        if self.gte is not None:
            out.append({"key": self.key, "operator": "Gt", "values": [str(self.gte - 1)], **extra})
        if self.lte is not None:
            out.append({"key": self.key, "operator": "Lt", "values": [str(self.lte + 1)], **extra})
        return out or [{"key": self.key, "operator": "Exists", **extra}]

    def pick(self, preferred: str | None) -> str | None:
        """A value for the key's label (``Requirement.Any``): ``preferred`` if allowed, else
        the smallest allowed value; None for DoesNotExist."""
        if preferred is not None and self.allows(preferred):
            return preferred
        if not self.complement:
            return min(self.values) if self.values else None
        candidate = max(self.gte or 0, 0)
        while not self.allows(str(candidate)):
            candidate += 1
            if self.lte is not None and candidate > self.lte:
                return None
        return str(candidate)


def merge(
    template: Iterable[Mapping[str, Any]], labels: Mapping[str, str]
) -> dict[str, Requirement]:
    """One Requirement per key: the template's, each intersected with the labels' ``In``."""
    merged: dict[str, Requirement] = {}
    for raw in template:
        requirement = Requirement.parse(raw)
        known = merged.get(requirement.key)
        merged[requirement.key] = requirement if known is None else known.intersect(requirement)
    for key, value in labels.items():
        from_label = Requirement(key, frozenset({value}), origin="label")
        known = merged.get(key)
        merged[key] = from_label if known is None else known.intersect(from_label)
        if not merged[key].values:
            raise Unsatisfiable(f"requirement {key}: does not allow the label's value {value!r}")
    for requirement in merged.values():
        short = not requirement.complement and len(requirement.values) < (
            requirement.min_values or 0
        )
        if short:
            raise Unsatisfiable(
                f"requirement {requirement.key}: {len(requirement.values)} value(s) left, "
                f"fewer than its minValues {requirement.min_values}"
            )
    return merged


def exclude(requirements: dict[str, Requirement], key: str, value: str) -> str | None:
    """Keep ``value`` out of ``key`` (the Spot offering being reclaimed), unless that would
    leave fewer values than ``minValues`` (the CRD rejects it) or none at all (a replacement
    that cannot launch helps nobody). None when done, else why not."""
    current = requirements.get(key)
    if current is None:
        requirements[key] = Requirement(key, frozenset({value}), True, origin="exclusion")
        return None
    narrowed = current.intersect(Requirement(key, frozenset({value}), True))
    if not narrowed.complement:
        if not narrowed.values:
            return f"{key} {value} is the only value the NodePool allows"
        if narrowed.min_values and len(narrowed.values) < narrowed.min_values:
            return (
                f"excluding {key} {value} would leave {len(narrowed.values)} value(s), "
                f"fewer than minValues {narrowed.min_values}"
            )
    requirements[key] = replace(narrowed, origin=current.origin)
    return None


def custom_labels(
    requirements: Mapping[str, Requirement], node_labels: Mapping[str, str]
) -> dict[str, str]:
    """``resolveCustomLabelsFromRequirements``: a value for every key that is neither well
    known nor restricted, preferring the old node's value."""
    labels: dict[str, str] = {}
    for key, requirement in requirements.items():
        if key in WELL_KNOWN_LABELS or key in RESTRICTED_LABELS:
            continue
        value = requirement.pick(node_labels.get(key))
        if value is not None:
            labels[key] = value
    return labels


def entries(requirements: Mapping[str, Requirement]) -> tuple[list[dict[str, Any]], list[str]]:
    """``spec.requirements`` within the CRD's 100 entries, and what was left out to fit.

    What can go comes from the claim's own labels (the labels are set anyway, and Karpenter
    picks instance types by the template's requirements), then the Spot exclusion."""
    out = [e for r in requirements.values() for e in r.entries()]
    dropped: list[str] = []
    for origin in ("label", "exclusion"):
        for requirement in reversed(list(requirements.values())):
            if len(out) <= MAX_REQUIREMENTS:
                return out, dropped
            if requirement.origin == origin:
                out = [e for e in out if e["key"] != requirement.key]
                dropped.append(requirement.key)
    if len(out) > MAX_REQUIREMENTS:
        raise Unsatisfiable(f"{len(out)} requirements, more than the CRD's {MAX_REQUIREMENTS}")
    return out, dropped
