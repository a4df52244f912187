"""Checks on label keys and values the API server or Karpenter would refuse (rules in
``label_rules``).

Where labels live: every object's ``metadata.labels``; workload pod templates and selectors;
PDB selectors; a NodePool's template labels and requirements (where Karpenter's restricted
domains apply too); and two values Karpenter derives from names: the NodePool's name becomes
the value of ``karpenter.sh/nodepool`` on its NodeClaims and Nodes, and the node class's name
the value of ``<group>/<kind>`` (``karpenter.k8s.aws/ec2nodeclass``), so both must be valid
label values although object names may run to 253 characters.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from lifeboat.kube import nodes
from lifeboat.model.objects import Obj
from lifeboat_local.audit.findings import Issue
from lifeboat_local.audit.label_rules import (
    karpenter_key_problems,
    karpenter_requirement_problems,
    label_key_problems,
    label_value_problems,
)
from lifeboat_local.audit.view import ClusterView, ref

Labelled = tuple[str, str, str | None]  # (where, key, value or None for a key alone)

_FIX = (
    "shorten or rename it: name part and value at most 63 characters of [A-Za-z0-9._-], "
    "starting and ending alphanumeric; prefix a lowercase DNS subdomain"
)


def _spec(obj: Obj, *path: str) -> Any:
    value: Any = obj
    for part in path:
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def _mapping(where: str, labels: Any) -> Iterator[Labelled]:
    """Each key, then its value, of a label map."""
    for key, value in (labels or {}).items() if isinstance(labels, Mapping) else ():
        yield where, str(key), None
        yield where, str(key), str(value)


def _selector(where: str, selector: Any) -> Iterator[Labelled]:
    if not isinstance(selector, Mapping):
        return
    yield from _mapping(f"{where}.matchLabels", selector.get("matchLabels"))
    for index, expression in enumerate(selector.get("matchExpressions") or []):
        at = f"{where}.matchExpressions[{index}]"
        yield at, str(expression.get("key")), None
        for value in expression.get("values") or []:
            yield at, str(expression.get("key")), str(value)


def _requirements(where: str, requirements: Any) -> Iterator[Labelled]:
    for index, requirement in enumerate(requirements or []):
        at = f"{where}[{index}]"
        key = str(requirement.get("key"))
        yield at, key, None
        if requirement.get("operator") in ("In", "NotIn"):
            for value in requirement.get("values") or []:
                yield at, key, str(value)


def kubernetes_labels(obj: Obj) -> Iterator[Labelled]:
    """Every label key and value of ``obj`` the API server validates."""
    yield from _mapping("metadata.labels", nodes.labels_of(obj))
    kind = obj.get("kind")
    if kind in ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "ReplicationController"):
        yield from _mapping(
            "spec.template.metadata.labels", _spec(obj, "spec", "template", "metadata", "labels")
        )
        selector = _spec(obj, "spec", "selector")
        if kind == "ReplicationController":  # a plain map there
            yield from _mapping("spec.selector", selector)
        else:
            yield from _selector("spec.selector", selector)
    elif kind == "PodDisruptionBudget":
        yield from _selector("spec.selector", _spec(obj, "spec", "selector"))
    elif kind == "NodePool":
        yield from karpenter_labels(obj)


def karpenter_labels(pool: Obj) -> Iterator[Labelled]:
    """What a NodePool turns into node labels: template labels, requirements, derived values."""
    yield from _mapping(
        "spec.template.metadata.labels", _spec(pool, "spec", "template", "metadata", "labels")
    )
    yield from _requirements(
        "spec.template.spec.requirements", _spec(pool, "spec", "template", "spec", "requirements")
    )
    yield (
        "metadata.name (label karpenter.sh/nodepool on its nodes)",
        "karpenter.sh/nodepool",
        nodes.name_of(pool),
    )
    node_class = _spec(pool, "spec", "template", "spec", "nodeClassRef")
    if isinstance(node_class, Mapping) and node_class.get("name"):
        label = f"{node_class.get('group')}/{str(node_class.get('kind', '')).lower()}"
        yield (
            f"spec.template.spec.nodeClassRef.name (label {label} on its nodes)",
            label,
            str(node_class["name"]),
        )


def _problems(key: str, value: str | None) -> list[str]:
    if value is None:
        return label_key_problems(key)
    return label_value_problems(value)


def _describe(where: str, key: str, value: str | None, problems: Iterable[str]) -> str:
    what = f'key "{key}"' if value is None else f'value "{value}" of "{key}"'
    return f"{where}: {what}: {'; '.join(problems)}"


def invalid_labels(view: ClusterView) -> Iterator[Issue]:
    """Keys and values the API server refuses (IsQualifiedName, IsValidLabelValue)."""
    for obj in view.inventory.objects:
        seen: set[tuple[str, str, str | None]] = set()
        for where, key, value in kubernetes_labels(obj):
            if (where, key, value) in seen:
                continue
            seen.add((where, key, value))
            problems = _problems(key, value)
            if problems:
                yield Issue(ref(obj), _describe(where, key, value, problems), _FIX)


def karpenter_invalid_labels(view: ClusterView) -> Iterator[Issue]:
    """NodePool template labels and requirements Karpenter refuses: restricted domains, and
    requirements its validation fails (the NodePool is then not Ready)."""
    for pool in view.inventory.nodepools:
        labels = _spec(pool, "spec", "template", "metadata", "labels")
        for key in labels if isinstance(labels, Mapping) else ():
            yield from _karpenter_issue(pool, "spec.template.metadata.labels", str(key), [])
        requirements = _spec(pool, "spec", "template", "spec", "requirements") or []
        for index, requirement in enumerate(requirements):
            where = f"spec.template.spec.requirements[{index}]"
            more = karpenter_requirement_problems(requirement)
            yield from _karpenter_issue(pool, where, str(requirement.get("key")), more)


def _karpenter_issue(pool: Obj, where: str, key: str, more: list[str]) -> Iterator[Issue]:
    problems = karpenter_key_problems(key) + more
    if problems:
        yield Issue(
            ref(pool),
            f'{where}: key "{key}": {"; ".join(problems)}',
            "use a label of your own domain (Karpenter sets its own) and values it knows",
        )
