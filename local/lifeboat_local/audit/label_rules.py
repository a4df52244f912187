"""Label keys and values as the Kubernetes API server and Karpenter accept them. Pure.

Kubernetes (k8s.io/apimachinery ``pkg/api/validate/content``: ``IsLabelKey``, behind
``validation.IsQualifiedName``, and ``IsLabelValue``, behind ``IsValidLabelValue``):

* a key is ``[prefix/]name``; more than one ``/`` is refused;
* the name is 1-63 bytes of ``[A-Za-z0-9._-]``, starting and ending alphanumeric;
* the prefix is a lowercase RFC 1123 DNS subdomain of at most 253 bytes;
* a value is empty, or 1-63 bytes with the name's alphabet and ends.

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

NAME_MAX: Final = 63
PREFIX_MAX: Final = 253
VALUE_MAX: Final = 63

_NAME: Final = re.compile(r"(?:[A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_VALUE: Final = re.compile(r"(?:(?:[A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_DNS_LABEL: Final = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN: Final = re.compile(rf"{_DNS_LABEL}(?:\.{_DNS_LABEL})*")

_NAME_RULE: Final = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
    "an alphanumeric character"
)

KARPENTER_DOMAIN: Final = "karpenter.sh"
AWS_PROVIDER_DOMAIN: Final = "karpenter.k8s.aws"
NODEPOOL_LABEL: Final = "karpenter.sh/nodepool"
HOSTNAME_LABEL: Final = "kubernetes.io/hostname"
# The karpenter.sh keys a NodePool may use (the CRD rule's allow-list, minus nodepool, which
# another rule refuses).
_KARPENTER_ALLOWED: Final = frozenset({"karpenter.sh/capacity-type"})
# The AWS provider's well-known labels (its CRD rule's allow-list for karpenter.k8s.aws).
_AWS_PROVIDER_ALLOWED: Final = frozenset(
    f"{AWS_PROVIDER_DOMAIN}/{name}"
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
)


_OPERATORS: Final = frozenset({"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"})
_NUMERIC_OPERATORS: Final = frozenset({"Gt", "Lt", "Gte", "Lte"})
_INTEGER: Final = re.compile(r"[0-9]+")
_WELL_KNOWN_VALUES: Final = {
    "karpenter.sh/capacity-type": frozenset({"on-demand", "spot", "reserved"}),
    f"{AWS_PROVIDER_DOMAIN}/instance-tenancy": frozenset({"default", "dedicated"}),
}


def _bytes(text: str) -> int:
    return len(text.encode())


def dns_subdomain_problems(value: str) -> list[str]:
    """IsDNS1123Subdomain."""
    problems = []
    if _bytes(value) > PREFIX_MAX:
        problems.append(f"must be no more than {PREFIX_MAX} bytes")
    if not _DNS_SUBDOMAIN.fullmatch(value):
        problems.append(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
            "characters, '-' or '.', and must start and end with an alphanumeric character"
        )
    return problems


def label_key_problems(key: str) -> list[str]:
    """IsQualifiedName (IsLabelKey): why the API server would refuse ``key`` ([] if valid)."""
    parts = key.split("/")
    if len(parts) > 2:
        return [f"a valid label key {_NAME_RULE}, with an optional DNS subdomain prefix and '/'"]
    problems: list[str] = []
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            problems.append("prefix part must be non-empty")
        else:
            problems += [f"prefix part {problem}" for problem in dns_subdomain_problems(prefix)]
    if not name:
        problems.append("name part must be non-empty")
    elif _bytes(name) > NAME_MAX:
        problems.append(f"name part must be no more than {NAME_MAX} bytes (has {_bytes(name)})")
    if not _NAME.fullmatch(name):
        problems.append(f"name part {_NAME_RULE}")
    return problems


def label_value_problems(value: str) -> list[str]:
    """IsValidLabelValue (IsLabelValue): why the API server would refuse ``value``."""
    problems = []
    if _bytes(value) > VALUE_MAX:
        problems.append(f"must be no more than {VALUE_MAX} bytes (has {_bytes(value)})")
    if not _VALUE.fullmatch(value):
        problems.append(
            f"a valid label must be an empty string or {_NAME_RULE.removeprefix('must ')}"
        )
    return problems


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
