"""Node labels and taints of a group, against Kubernetes' limits (``IsQualifiedName``,
``IsValidLabelValue`` of apimachinery's ``validation``) and Karpenter's restricted domains
(``RestrictedLabelDomains`` of ``pkg/apis/v1/labels.go``), each refusal with its fix."""

from __future__ import annotations

import re

from lifeboat_local.convert.model import ConversionError

_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_PREFIX = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
# Karpenter refuses template labels in these domains (and their subdomains) but for the
# exceptions; kubernetes.io/hostname and karpenter.sh/nodepool are its own to set.
RESTRICTED_DOMAINS = ("kubernetes.io", "k8s.io", "karpenter.sh", "karpenter.k8s.aws")
DOMAIN_EXCEPTIONS = ("kops.k8s.io", "node.kubernetes.io", "node-restriction.kubernetes.io")
# Well-known labels Karpenter sets itself from the instance (allowed as requirements).
WELL_KNOWN = (
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "node.kubernetes.io/instance-type",
    "kubernetes.io/arch",
    "kubernetes.io/os",
    "karpenter.sh/capacity-type",
)


def _sanitised(text: str, limit: int) -> str:
    fixed = re.sub(r"[^-A-Za-z0-9_.]", "-", text)[:limit]
    return re.sub(r"^[^A-Za-z0-9]+|[^A-Za-z0-9]+$", "", fixed)


def check_key(key: str, where: str) -> None:
    prefix, _, name = key.rpartition("/")
    problems = []
    if not name or len(name) > 63 or not _NAME.match(name):
        problems.append(
            "the name part must be 1-63 characters of [A-Za-z0-9-_.], alphanumeric at both ends"
        )
    if prefix and (len(prefix) > 253 or not _PREFIX.match(prefix)):
        problems.append("the prefix must be a DNS subdomain (lower case, at most 253)")
    if problems:
        fixed_prefix = _sanitised(prefix.lower(), 253).replace("_", "-") if prefix else ""
        fixed = f"{fixed_prefix}/" if fixed_prefix else ""
        raise ConversionError(
            f"{where}: label key {key!r}: {'; '.join(problems)}: use "
            f"{fixed + _sanitised(name, 63)!r}"
        )
    domain = prefix
    if domain and key not in WELL_KNOWN:
        restricted = any(domain == d or domain.endswith(f".{d}") for d in RESTRICTED_DOMAINS)
        excepted = any(domain == d or domain.endswith(f".{d}") for d in DOMAIN_EXCEPTIONS)
        if restricted and not excepted:
            raise ConversionError(
                f"{where}: label key {key!r} is in a domain Karpenter reserves "
                f"({', '.join(RESTRICTED_DOMAINS)}): rename it, e.g. "
                f"{'example.com/' + name!r}, or drop it if Karpenter sets it"
            )


def check_value(key: str, value: str, where: str) -> None:
    if len(value) > 63 or not _VALUE.match(value):
        raise ConversionError(
            f"{where}: label {key}={value!r}: a value must be at most 63 characters of "
            f"[A-Za-z0-9-_.], alphanumeric at both ends: use {_sanitised(value, 63)!r}"
        )
