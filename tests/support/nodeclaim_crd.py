"""The NodeClaim CRD's validation rules, as the API server applies them on create (422).

Written from Karpenter v1's CRD (pkg/apis/crds/karpenter.sh_nodeclaims.yaml, with the AWS
provider's allow-list for the karpenter.k8s.aws domain), to check every claim a scenario
creates: a claim breaking one of these would be refused by a live API server. Kept apart
from Lifeboat's own code on purpose: this is the server's side.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\/))?"
    r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$"
)
_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_OPERATORS = {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"}
_EFFECTS = {"NoSchedule", "PreferNoSchedule", "NoExecute"}
_EXPIRE_AFTER = re.compile(r"^(([0-9]+(s|m|h))+|Never)$")
_GRACE = re.compile(r"^([0-9]+(s|m|h))+$")
_AWS_ALLOWED = {
    f"karpenter.k8s.aws/{name}"
    for name in (
        "instance-tenancy",
        "capacity-reservation-type",
        "capacity-reservation-id",
        "capacity-reservation-interruptible",
        "ec2nodeclass",
        "instance-encryption-in-transit-supported",
        "nitro-sandbox",
        "instance-category",
        "instance-hypervisor",
        "instance-family",
        "instance-generation",
        "instance-local-nvme",
        "instance-size",
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
        "instance-capability-flex",
        "placement-group-id",
        "placement-group-partition",
    )
}


def _domain(key: str) -> str:
    return key.split("/", 1)[0] if "/" in key else key


def _key_problems(key: str) -> list[str]:
    problems = []
    if len(key) > 316 or not _KEY.match(key):
        problems.append(f"key {key!r}: not a qualified name")
    if key not in ("karpenter.sh/capacity-type", "karpenter.sh/nodepool") and _domain(key).endswith(
        "karpenter.sh"
    ):
        problems.append(f'key {key!r}: label domain "karpenter.sh" is restricted')
    if key == "kubernetes.io/hostname":
        problems.append('label "kubernetes.io/hostname" is restricted')
    if key not in _AWS_ALLOWED and _domain(key).endswith("karpenter.k8s.aws"):
        problems.append(f'key {key!r}: label domain "karpenter.k8s.aws" is restricted')
    return problems


def _requirement_problems(requirement: Mapping[str, Any]) -> list[str]:
    key, operator = requirement.get("key"), requirement.get("operator")
    values = requirement.get("values") or []
    problems = _key_problems(str(key)) if key else ["requirement without key"]
    if operator not in _OPERATORS:
        problems.append(f"{key}: operator {operator!r} not allowed")
    if operator == "In" and not values:
        problems.append(f"{key}: requirements with operator 'In' must have a value defined")
    if operator in ("Gt", "Lt", "Gte", "Lte") and not (
        len(values) == 1 and str(values[0]).isdigit()
    ):
        problems.append(f"{key}: operator {operator} must have a single positive integer value")
    minimum = requirement.get("minValues")
    if minimum is not None:
        if not 1 <= int(minimum) <= 50:
            problems.append(f"{key}: minValues {minimum} not within 1..50")
        if operator == "In" and len(values) < int(minimum):
            problems.append(
                f"{key}: requirements with 'minValues' must have at least that many values "
                "specified in the 'values' field"
            )
    problems += [
        f"{key}: value {v!r} invalid" for v in values if len(v) > 63 or not _VALUE.match(v)
    ]
    return problems


def _taint_problems(taint: Mapping[str, Any]) -> list[str]:
    problems = []
    if not taint.get("key") or not _KEY.match(str(taint["key"])):
        problems.append(f"taint key {taint.get('key')!r} invalid")
    if taint.get("effect") not in _EFFECTS:
        problems.append(f"taint effect {taint.get('effect')!r} not allowed")
    if "value" in taint and not (taint["value"] and _VALUE.match(str(taint["value"]))):
        problems.append(f"taint value {taint['value']!r} invalid")
    return problems


def crd_problems(claim: Mapping[str, Any]) -> list[str]:
    """Why the API server would refuse to create ``claim`` ([] when it would accept it)."""
    spec = claim.get("spec")
    if not isinstance(spec, Mapping):
        return ["spec: Required value"]
    problems: list[str] = []
    reference = spec.get("nodeClassRef") or {}
    for field in ("group", "kind", "name"):
        if not reference.get(field):
            problems.append(f"nodeClassRef.{field}: may not be empty")
    if "/" in str(reference.get("group", "")):
        problems.append("nodeClassRef.group: must not contain '/'")
    requirements = spec.get("requirements")
    if requirements is None:
        problems.append("spec.requirements: Required value")
        requirements = []
    if len(requirements) > 100:
        problems.append(f"spec.requirements: {len(requirements)} items, must have at most 100")
    for requirement in requirements:
        problems += _requirement_problems(requirement)
    for field in ("taints", "startupTaints"):
        for taint in spec.get(field) or []:
            problems += _taint_problems(taint)
    if "expireAfter" in spec and not _EXPIRE_AFTER.match(str(spec["expireAfter"])):
        problems.append(f"expireAfter {spec['expireAfter']!r} invalid")
    grace = spec.get("terminationGracePeriod")
    if grace is not None and not _GRACE.match(str(grace)):
        problems.append(f"terminationGracePeriod {grace!r} invalid")
    for owner in claim.get("metadata", {}).get("ownerReferences") or []:
        if not owner.get("uid"):
            problems.append("metadata.ownerReferences.uid: Required value")
    return problems
