"""Label keys and values as the Kubernetes API server and Karpenter accept them. Pure.

Kubernetes' own rules (``IsQualifiedName``, ``IsValidLabelValue``) live in
:mod:`lifeboat.kube.labels`, which Lifeboat also applies to the labels a message names; they are
re-exported here so the audit's checks have one home.

Karpenter (karpenter.sh/v1 NodePool CRD rules on ``spec.template.metadata.labels`` and
requirement keys, ``NodeClaimTemplate.validateLabels`` and ``IsRestrictedLabel``; with the AWS
provider's extra rule for its own domain):

* no key whose domain ends in ``karpenter.sh`` except ``karpenter.sh/capacity-type`` (the CRD
  rule tests ``endsWith``, so ``notkarpenter.sh/x`` is refused too);
* never ``karpenter.sh/nodepool`` (Karpenter sets it) nor ``kubernetes.io/hostname``;
* no key whose domain ends in ``karpenter.k8s.aws`` except the provider's well-known labels;
* a requirement (``ValidateRequirement``, ``validateWellKnownValues`` and the CRD's rules): a
  supported operator; ``In`` with at least one value, and at least ``minValues``; ``Gt``,
  ``Lt``, ``Gte``, ``Lte`` with one non-negative integer; for a key with well-known values
  (``karpenter.sh/capacity-type``, ``karpenter.k8s.aws/instance-tenancy``) at least one of
  them (else the NodePool is not Ready and provisions nothing).

These are Karpenter v1.9 and later; before v1.9 the ``kubernetes.io`` and ``k8s.io`` domains
were restricted too (but ``kops.k8s.io``, ``node.kubernetes.io`` and
``node-restriction.kubernetes.io``). Lengths are in bytes, as Go's ``len`` counts them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from lifeboat.karpenter.requirements import WELL_KNOWN_LABELS
from lifeboat.kube.labels import label_key_problems, label_value_problems

__all__ = [
    "karpenter_key_problems",
    "karpenter_requirement_problems",
    "label_key_problems",
    "label_value_problems",
]

KARPENTER_DOMAIN: Final = "karpenter.sh"
AWS_PROVIDER_DOMAIN: Final = "karpenter.k8s.aws"
NODEPOOL_LABEL: Final = "karpenter.sh/nodepool"
HOSTNAME_LABEL: Final = "kubernetes.io/hostname"
# The karpenter.sh keys a NodePool may use (the CRD rule's allow-list, minus nodepool, which
# another rule refuses).
_KARPENTER_ALLOWED: Final = frozenset({"karpenter.sh/capacity-type"})
# The AWS provider's CRD rule allow-list for karpenter.k8s.aws: its well-known labels (the
# same set Karpenter builds claims with, lifeboat.karpenter.requirements) and the node class label.
_AWS_PROVIDER_ALLOWED: Final = frozenset(
    {key for key in WELL_KNOWN_LABELS if key.startswith(f"{AWS_PROVIDER_DOMAIN}/")}
    | {f"{AWS_PROVIDER_DOMAIN}/ec2nodeclass"}
)


_OPERATORS: Final = frozenset({"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"})
_NUMERIC_OPERATORS: Final = frozenset({"Gt", "Lt", "Gte", "Lte"})
_INTEGER: Final = re.compile(r"[0-9]+")
_WELL_KNOWN_VALUES: Final = {
    "karpenter.sh/capacity-type": frozenset({"on-demand", "spot", "reserved"}),
    f"{AWS_PROVIDER_DOMAIN}/instance-tenancy": frozenset({"default", "dedicated"}),
}


def _domain(key: str) -> str:
    """The CRD rule's ``key.find("^([^/]+)")``: everything before the first '/' (the whole key
    when there is none)."""
    return key.split("/", 1)[0]


def karpenter_key_problems(key: str) -> list[str]:
    """Why Karpenter refuses ``key`` in a NodePool's template labels or requirements."""
    if key == NODEPOOL_LABEL:
        return [f'label "{NODEPOOL_LABEL}" is restricted (Karpenter sets it)']
    if key == HOSTNAME_LABEL:
        return [f'label "{HOSTNAME_LABEL}" is restricted']
    domain = _domain(key)
    if domain.endswith(KARPENTER_DOMAIN) and key not in _KARPENTER_ALLOWED:
        return [f'label domain "{KARPENTER_DOMAIN}" is restricted']
    if domain.endswith(AWS_PROVIDER_DOMAIN) and key not in _AWS_PROVIDER_ALLOWED:
        return [f'label domain "{AWS_PROVIDER_DOMAIN}" is restricted (AWS provider)']
    return []


def karpenter_requirement_problems(requirement: Mapping[str, Any]) -> list[str]:
    """Why Karpenter refuses a NodePool requirement, beyond its key and value formats."""
    key, operator = str(requirement.get("key")), requirement.get("operator")
    values = [str(v) for v in requirement.get("values") or []]
    min_values = requirement.get("minValues")
    if operator not in _OPERATORS:
        return [f"operator {operator!r} is not one of {sorted(_OPERATORS)}"]
    problems = []
    if operator == "In" and not values:
        problems.append("requirements with operator 'In' must have a value defined")
    if operator == "In" and isinstance(min_values, int) and len(values) < min_values:
        problems.append(f"minValues {min_values} but only {len(values)} value(s)")
    if operator in _NUMERIC_OPERATORS and not (len(values) == 1 and _INTEGER.fullmatch(values[0])):
        problems.append(f"operator {operator} must have a single non-negative integer value")
    known = _WELL_KNOWN_VALUES.get(key)
    if known is not None and operator == "In" and values:
        valid = [v for v in values if v in known]
        if not valid:
            problems.append(f"no valid value in {values}, expected one of {sorted(known)}")
        elif isinstance(min_values, int) and len(valid) < min_values:
            problems.append(f"only {len(valid)} valid value(s) for minValues {min_values}")
    return problems
