"""The replacement NodeClaim: built as Karpenter's provisioner builds a claim from a NodePool
template, or not built at all where Karpenter would not add one. Pure.

What a claim of Karpenter's carries (``NewNodeClaimTemplate`` and ``ToNodeClaim``,
pkg/controllers/provisioning/scheduling/nodeclaimtemplate.go), and so does the replacement:

- labels: the template's, ``karpenter.sh/nodepool``, the node class label
  (``karpenter.k8s.aws/ec2nodeclass: <name>``), and a value for every custom requirement key
  (:mod:`lifeboat.karpenter.requirements`); never the well-known ones, which come from the instance;
- annotations: the template's, and the NodePool hash with its version
  (:mod:`lifeboat.karpenter.nodepool_hash`), so the drift controller sees a current claim;
- an ownerReference to the NodePool (its uid, ``blockOwnerDeletion``, no ``controller``);
- spec: ``nodeClassRef``, taints and startup taints, ``expireAfter`` (as written),
  ``terminationGracePeriod`` (as Go prints a duration: ``48h0m0s``), and the requirements
  with their ``minValues``, at most 100 of them;
- no finalizer and no status: Karpenter's lifecycle controller adds both.

Lifeboat adds ``lifeboat.dev/replaces`` (the old claim) and ``lifeboat.dev/notice``, excludes
the Spot instance type being reclaimed (never below ``minValues``) and, for a capacity
reservation interruption or an ending Capacity Block, the reservation being reclaimed, and
asks for most of the old node's cpu and memory so the replacement can hold what it held.

No replacement (:func:`replacement_blocker`) for a static NodePool (``spec.replicas``: Karpenter
keeps the count and replaces the node itself; an extra claim would be deleted by its static
deprovisioning), a NodePool being deleted, a NodePool that is not Ready (its node class not
Ready among the reasons: ``Provisioner.NewScheduler`` leaves such pools out), or a NodePool
past its ``spec.limits`` (``Provisioner.Create``).
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Final

from lifeboat.karpenter import limits
from lifeboat.karpenter.godurations import format_go_duration, parse_go_duration
from lifeboat.karpenter.nodepool_hash import hash_annotations
from lifeboat.karpenter.quantities import parse_quantity, parse_resources
from lifeboat.karpenter.requirements import Unsatisfiable, custom_labels, entries, exclude, merge
from lifeboat.kube import nodes
from lifeboat.marks import node_marks
from lifeboat.model.objects import Obj

# A replacement should hold what the old node held: ask for most of its allocatable cpu and
# memory (not all: Karpenter's estimate of an instance type's allocatable is conservative,
# and asking for 100 % could rule out the very instance type being replaced).
REQUEST_FRACTION: Final = 0.9
# Set by Karpenter's scheduler on every dynamic claim it creates (since v1.6).
MIN_VALUES_RELAXED: Final = "karpenter.sh/nodeclaim-min-values-relaxed"
# v1.LabelCapacityReservationID (karpenter-provider-aws): the reservation a node runs in.
CAPACITY_RESERVATION_ID_LABEL: Final = "karpenter.k8s.aws/capacity-reservation-id"


@dataclass(frozen=True)
class Replacement:
    """The claim to create, or why there is none (``claim`` None)."""

    claim: Obj | None
    note: str = ""  # what was left out, or why there is no claim


def replacement_name(pool_name: str, old_claim: str, old_uid: str | None = None) -> str:
    """The replacement's name, derived from the claim it replaces: one old claim gets at most
    one replacement, whichever notices, deliveries, batches or invocations ask for it (the
    second create is answered 409 AlreadyExists). Shaped like Karpenter's own
    ``<nodepool>-<suffix>`` names.

    From the old claim's uid (the API server's, random) when known, not its name, and 80
    bits of it: a 40-bit hash of a name was found colliding in seconds, and the claim whose
    replacement's name was taken got none. A 409 is still checked (``lifeboat.dev/replaces``)
    before it is taken for this claim's replacement."""
    digest = hashlib.sha256((old_uid or old_claim).encode()).hexdigest()[:20]
    return f"{pool_name}-{digest}"


def node_class_label(nodepool: Obj) -> tuple[str, str] | None:
    """``v1.NodeClassLabelKey``: ``<group>/<lowercased kind>`` = the node class's name."""
    reference = ((nodepool.get("spec") or {}).get("template") or {}).get("spec", {})
    reference = reference.get("nodeClassRef") or {}
    group, kind, name = reference.get("group"), reference.get("kind"), reference.get("name")
    if not (group and kind and name):
        return None
    return f"{group}/{str(kind).lower()}", str(name)


def replacement_blocker(
    nodepool: Obj, node: Obj, usage: Mapping[str, Fraction] | None = None
) -> str | None:
    """Why Karpenter would not launch a replacement claim in this pool (None: it would).

    ``usage``: the pool's usage as Karpenter's cluster state sums it
    (:func:`lifeboat.karpenter.pool_usage.pool_usage`), when the caller listed the pool; without it,
    ``status.resources`` stands in (involuntary notices, which list nothing)."""
    name = nodes.name_of(nodepool)
    spec = nodepool.get("spec") or {}
    if nodes.is_deleting(nodepool):
        return f"NodePool {name} is being deleted"
    if spec.get("replicas") is not None:
        return (
            f"NodePool {name} is static (spec.replicas {spec['replicas']}): Karpenter keeps "
            "its node count and replaces the node itself"
        )
    not_ready = nodepool_not_ready(nodepool)
    if not_ready is not None:
        return not_ready
    del node  # like-for-like: the old node's capacity is in the usage and leaves with it
    return _limits_blocker(name, spec.get("limits"), nodepool.get("status") or {}, usage)


def nodepool_not_ready(nodepool: Obj) -> str | None:
    """``Provisioner.NewScheduler`` leaves out a NodePool whose ``Ready`` condition is not
    True, and Karpenter's readiness controller sets it False when the node class (an
    EC2NodeClass) is missing, terminating or not Ready (``NodeClassReady``). A NodePool with
    no conditions at all was never seen by Karpenter's status controllers (a cluster file
    written by hand): not judged."""
    conditions = (nodepool.get("status") or {}).get("conditions") or []
    if not conditions:
        return None
    by_type = {str(c.get("type")): c for c in conditions if isinstance(c, Mapping)}
    ready = by_type.get("Ready")
    if ready is not None and ready.get("status") == "True":
        return None
    name = nodes.name_of(nodepool)
    node_class = by_type.get("NodeClassReady")
    if node_class is not None and node_class.get("status") != "True":
        return f"NodePool {name} is not Ready: NodeClassReady {_condition_text(node_class)}"
    if ready is None:
        return f"NodePool {name} is not Ready: no Ready condition"
    return f"NodePool {name} is not Ready: {_condition_text(ready)}"


def _condition_text(condition: Mapping[str, Any]) -> str:
    text = str(condition.get("status") or "Unknown")
    for field in ("reason", "message"):
        if condition.get(field):
            text += f", {condition[field]}"
    return text


def _limits_blocker(
    name: str, limits: Any, status: Obj, usage: Mapping[str, Fraction] | None
) -> str | None:
    """``Provisioner.Create`` refuses a claim once ``Spec.Limits.ExceededBy(usage)``: some
    limit is below the pool's usage. The replacement is taken to be like the old node,
    which leaves with it: it fits exactly when the pool's usage, old node included, is
    within every limit. Usage is Karpenter's cluster state's (``usage``); without it
    ``status.resources`` (the nodepool counter's copy), and with neither, not judged."""
    wanted = parse_resources(limits)
    if not wanted:
        return None
    if usage is None:
        if "resources" not in status:
            return f"NodePool {name} has limits but Karpenter has not counted its usage yet"
        usage = parse_resources(status.get("resources"))
    for resource, limit in sorted(wanted.items()):
        used = usage.get(resource, parse_quantity(0))
        if used > limit:
            shown = f"{_show(used)} used of {_show(limit)}"
            return f"NodePool {name} is past its limit {resource}: {shown}"
    return None


def _show(quantity: Fraction) -> str:
    return str(quantity) if quantity.denominator == 1 else str(float(quantity))


def replacement_nodeclaim(
    nodepool: Obj,
    node: Obj,
    old_claim: str,
    notice_key: str,
    old_uid: str | None = None,
    *,
    reservation_reclaimed: bool = False,
    reservation_id: str | None = None,
    usage: Mapping[str, Fraction] | None = None,
) -> Replacement:
    """The claim to create in place of ``old_claim`` (uid ``old_uid``; it runs on ``node``),
    kept out of the reservation being reclaimed (``reservation_reclaimed``: ``reservation_id``,
    else the node's label) and narrowed to the instance types that fit the pool's remaining
    limits (``usage``, else ``status.resources``; :mod:`lifeboat.karpenter.limits`)."""
    pool_name = nodes.name_of(nodepool)
    template = (nodepool.get("spec") or {}).get("template") or {}
    template_meta = template.get("metadata") or {}
    template_spec = template.get("spec") or {}

    labels = _template_labels(nodepool, template_meta)
    notes: list[str] = []
    try:
        requirements = merge(template_spec.get("requirements") or [], labels)
        skipped = _exclude_reclaimed_spot_type(requirements, node)
        if skipped:
            notes.append(f"the reclaimed instance type stays allowed: {skipped}")
        if reservation_reclaimed:
            unexcludable = _exclude_reclaimed_reservation(requirements, node, reservation_id)
            if unexcludable:
                return Replacement(
                    None,
                    f"NodePool {pool_name} yields no valid NodeClaim without the reclaimed "
                    f"capacity reservation: {unexcludable}",
                )
        left = limits.remaining(nodepool, node, usage)
        if left is not None:
            unnarrowed = limits.narrow(requirements, left)
            if unnarrowed:
                notes.append(f"limits not narrowed per instance type: {', '.join(unnarrowed)}")
        spec_requirements, dropped = entries(requirements)
    except Unsatisfiable as problem:
        return Replacement(None, f"NodePool {pool_name} yields no valid NodeClaim: {problem}")
    if dropped:
        notes.append(f"requirements left out to stay within 100: {', '.join(dropped)}")
    labels.update(custom_labels(requirements, nodes.labels_of(node)))
    labels[node_marks.REPLACES_LABEL] = old_claim

    claim = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {
            "name": replacement_name(pool_name, old_claim, old_uid),
            "labels": labels,
            "annotations": _annotations(nodepool, template_meta, notice_key),
            "ownerReferences": [_owner_reference(nodepool)],
        },
        "spec": _claim_spec(template_spec, spec_requirements, node),
    }
    return Replacement(claim, "; ".join(notes))


def _template_labels(nodepool: Obj, template_meta: Obj) -> dict[str, str]:
    """The template's labels, the pool's own and its node class's, as Karpenter's
    ``NodeClaimTemplate`` labels a claim."""
    labels = {str(k): str(v) for k, v in (template_meta.get("labels") or {}).items()}
    labels[nodes.NODEPOOL_LABEL] = nodes.name_of(nodepool)
    class_label = node_class_label(nodepool)
    if class_label is not None:
        labels[class_label[0]] = class_label[1]
    return labels


def _annotations(nodepool: Obj, template_meta: Obj, notice_key: str) -> dict[str, str]:
    """The template's annotations, the pool's hash (so Karpenter sees no drift), and the
    notice the claim was made for."""
    annotations = {str(k): str(v) for k, v in (template_meta.get("annotations") or {}).items()}
    annotations.update(hash_annotations(nodepool))
    annotations[MIN_VALUES_RELAXED] = "false"
    annotations[node_marks.NOTICE_ANNOTATION] = notice_key
    return annotations


def _claim_spec(template_spec: Obj, requirements: Any, node: Obj) -> dict[str, Any]:
    """The claim's spec: the template's node class, taints, expiry and grace period, the
    requirements, and a share of the old node's allocatable as requests."""
    spec: dict[str, Any] = {
        "nodeClassRef": copy.deepcopy(template_spec.get("nodeClassRef")),
        "requirements": requirements,
    }
    for field in ("taints", "startupTaints", "expireAfter"):
        if field in template_spec:
            spec[field] = copy.deepcopy(template_spec[field])
    grace = template_spec.get("terminationGracePeriod")
    if grace is not None:
        spec["terminationGracePeriod"] = _go_duration_string(str(grace))
    requests = _requests(node)
    if requests:
        spec["resources"] = {"requests": requests}
    return spec


def _owner_reference(nodepool: Obj) -> dict[str, Any]:
    """The NodePool as the claim's owner, as Karpenter's ``NodeClaimTemplate.ToNodeClaim``
    sets it (deleting the pool deletes its claims)."""
    owner: dict[str, Any] = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "name": nodes.name_of(nodepool),
        "blockOwnerDeletion": True,
    }
    uid = (nodepool.get("metadata") or {}).get("uid")
    if uid:
        owner["uid"] = uid
    return owner


def _exclude_reclaimed_spot_type(requirements: Any, node: Obj) -> str | None:
    """NodeClaim requirements are ANDed per key, so "not this type in this zone" cannot be
    said: for a Spot node the instance type is excluded in every zone, which never
    re-launches into the capacity AWS is taking back."""
    node_labels = nodes.labels_of(node)
    instance_type = node_labels.get(nodes.INSTANCE_TYPE_LABEL)
    if node_labels.get(nodes.CAPACITY_TYPE_LABEL) != "spot" or not instance_type:
        return None
    return exclude(requirements, nodes.INSTANCE_TYPE_LABEL, instance_type)


def _exclude_reclaimed_reservation(
    requirements: Any, node: Obj, reservation_id: str | None = None
) -> str | None:
    """As Karpenter's interruption controller marks the reclaimed reservation unavailable
    (``markUnavailableOfferings``: ``capacityReservationProvider.MarkUnavailable`` of the
    claim's ``karpenter.k8s.aws/capacity-reservation-id``), the replacement excludes it.
    ``NotIn`` also matches offerings without the label (on-demand, Spot, other
    reservations). None when done (or no reservation to exclude), else why it cannot be."""
    reservation = reservation_id or nodes.labels_of(node).get(CAPACITY_RESERVATION_ID_LABEL)
    if not reservation:
        return None
    return exclude(requirements, CAPACITY_RESERVATION_ID_LABEL, reservation)


def _go_duration_string(text: str) -> str:
    """``metav1.Duration`` is re-printed by Go's ``Duration.String``: ``48h`` is ``48h0m0s``."""
    try:
        return format_go_duration(parse_go_duration(text))
    except ValueError:
        return text


def _requests(node: Obj) -> dict[str, str]:
    allocatable = parse_resources(node.get("status", {}).get("allocatable"))
    requests: dict[str, str] = {}
    if allocatable.get("cpu"):
        requests["cpu"] = f"{int(allocatable['cpu'] * 1000 * REQUEST_FRACTION)}m"
    if allocatable.get("memory"):
        requests["memory"] = f"{int(allocatable['memory'] * REQUEST_FRACTION) // 2**20}Mi"
    return requests
