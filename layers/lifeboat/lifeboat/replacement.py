"""Build a replacement NodeClaim from a NodePool's template. Pure.

What Karpenter itself puts on a NodeClaim it launches for a NodePool: the template's labels,
annotations, requirements, taints, startup taints, ``nodeClassRef``, ``expireAfter`` and
``terminationGracePeriod``; the ``karpenter.sh/nodepool``
label; an ownerReference to the NodePool; and the pool's hash annotations, so Karpenter's
drift detection sees the claim as current rather than drifted.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping
from typing import Any

from lifeboat import nodes
from lifeboat.objects import Obj

# Karpenter's drift detection compares these between a NodePool and its claims.
HASH_ANNOTATIONS = ("karpenter.sh/nodepool-hash", "karpenter.sh/nodepool-hash-version")
# A replacement should hold what the old node held: ask for most of its allocatable cpu and
# memory (not all: Karpenter's estimate of an instance type's allocatable is conservative,
# and asking for 100 % could rule out the very instance type being replaced).
REQUEST_FRACTION = 0.9


def replacement_name(pool_name: str, old_claim: str) -> str:
    """The replacement's name, derived from the claim it replaces: one old claim gets at most
    one replacement, whichever notices, deliveries, batches or invocations ask for it (the
    second create is answered 409 AlreadyExists). Shaped like Karpenter's own
    ``<nodepool>-<suffix>`` names."""
    digest = hashlib.sha256(old_claim.encode()).hexdigest()[:10]
    return f"{pool_name}-{digest}"


def replacement_nodeclaim(nodepool: Obj, node: Obj, old_claim: str, notice_key: str) -> Obj:
    """A NodeClaim to create in place of ``old_claim`` (which runs on ``node``)."""
    pool_name = nodes.name_of(nodepool)
    template = nodepool.get("spec", {}).get("template", {})
    template_meta = template.get("metadata", {})
    template_spec = template.get("spec", {})

    labels = dict(template_meta.get("labels") or {})
    labels[nodes.NODEPOOL_LABEL] = pool_name
    labels[nodes.REPLACES_LABEL] = old_claim
    annotations = dict(template_meta.get("annotations") or {})
    pool_annotations = nodes.annotations_of(nodepool)
    for key in HASH_ANNOTATIONS:
        if key in pool_annotations:
            annotations[key] = pool_annotations[key]
    annotations[nodes.NOTICE_ANNOTATION] = notice_key

    spec: dict[str, Any] = {
        "nodeClassRef": copy.deepcopy(template_spec.get("nodeClassRef")),
        "requirements": _requirements(template_spec.get("requirements") or [], node),
    }
    for field in ("taints", "startupTaints", "expireAfter", "terminationGracePeriod"):
        if field in template_spec:
            spec[field] = copy.deepcopy(template_spec[field])
    requests = _requests(node)
    if requests:
        spec["resources"] = {"requests": requests}

    owner: dict[str, Any] = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "name": pool_name,
        "blockOwnerDeletion": True,
    }
    uid = nodepool.get("metadata", {}).get("uid")
    if uid:
        owner["uid"] = uid
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {
            "name": replacement_name(pool_name, old_claim),
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [owner],
        },
        "spec": spec,
    }


def _requirements(template: list[Mapping[str, Any]], node: Obj) -> list[dict[str, Any]]:
    """The pool's requirements, minus the Spot offering being reclaimed.

    NodeClaim requirements are ANDed per key, so "not this type in this zone" cannot be said;
    Lifeboat excludes the instance type (in every zone) for a Spot node, which still leaves
    a flexible pool plenty of offerings and never re-launches into the capacity AWS is
    taking back. A pool pinned to that single type keeps it: a replacement that cannot
    launch helps nobody.
    """
    requirements = [copy.deepcopy(dict(r)) for r in template]
    node_labels = nodes.labels_of(node)
    instance_type = node_labels.get(nodes.INSTANCE_TYPE_LABEL)
    if node_labels.get(nodes.CAPACITY_TYPE_LABEL) != "spot" or not instance_type:
        return requirements
    key = nodes.INSTANCE_TYPE_LABEL
    for requirement in requirements:
        if requirement.get("key") != key:
            continue
        values = list(requirement.get("values") or [])
        if requirement.get("operator") == "In":
            remaining = [v for v in values if v != instance_type]
            if not remaining:
                return requirements
            requirement["values"] = remaining
            return requirements
        if requirement.get("operator") == "NotIn":
            if instance_type not in values:
                requirement["values"] = [*values, instance_type]
            return requirements
    requirements.append({"key": key, "operator": "NotIn", "values": [instance_type]})
    return requirements


def _requests(node: Obj) -> dict[str, str]:
    allocatable = node.get("status", {}).get("allocatable") or {}
    requests: dict[str, str] = {}
    cpu = _cpu_millis(allocatable.get("cpu"))
    if cpu:
        requests["cpu"] = f"{int(cpu * REQUEST_FRACTION)}m"
    memory = _bytes(allocatable.get("memory"))
    if memory:
        requests["memory"] = f"{int(memory * REQUEST_FRACTION) // 2**20}Mi"
    return requests


def _cpu_millis(value: Any) -> int | None:
    if value is None:
        return None
    text = str(value)
    try:
        return int(text[:-1]) if text.endswith("m") else int(float(text) * 1000)
    except ValueError:
        return None


_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
_DECIMAL = {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}


def _bytes(value: Any) -> int | None:
    if value is None:
        return None
    text = str(value)
    try:
        for suffix, factor in (*_BINARY.items(), *_DECIMAL.items()):
            if text.endswith(suffix):
                return int(float(text[: -len(suffix)]) * factor)
        return int(float(text))
    except ValueError:
        return None
