"""What Lifeboat writes on nodes and reads back: its labels, annotations and taints
(the ``lifeboat.dev/`` domain), and what they say (acted on, waiting, which maintenance).

Pure. May import kube's views, the notice model and instants.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from lifeboat.kube.nodes import (
    KARPENTER_DISRUPTED_TAINT,
    annotations_of,
    is_ready,
    labels_of,
    taints,
)
from lifeboat.model.notice import Kind
from lifeboat.model.objects import Obj

DOMAIN = "lifeboat.dev"


REPLACES_LABEL = f"{DOMAIN}/replaces"


NOTICE_ANNOTATION = f"{DOMAIN}/notice"


OPT_OUT_ANNOTATION = f"{DOMAIN}/disabled"


# The start of the last maintenance that ended (completed or cancelled) while the node was
# kept: a deferred notice of that maintenance coming due later is let go, not acted on.
MAINTENANCE_ENDED_ANNOTATION = f"{DOMAIN}/maintenance-ended"


# The start of the EC2 scheduled event (DescribeInstanceStatus ``Events[]``) Lifeboat acted
# on or deferred for this node. A label, so that each instance status sweep finds the nodes
# to look at with one LIST per cluster (``lifeboat.aws.sweep.vanished``): an event that EC2 no
# longer reports ends the maintenance, as ``[Canceled]`` does.
EC2_MAINTENANCE_LABEL = f"{DOMAIN}/ec2-maintenance"


# Set with that label, only when Lifeboat put the label there: a label the operator set is
# never removed by Lifeboat.
EXCLUDED_BY_LIFEBOAT_ANNOTATION = f"{DOMAIN}/excluded-from-load-balancers"


def taint_key(kind: Kind) -> str:
    """Lifeboat's taint for a kind, e.g. ``lifeboat.dev/spot-interruption``."""
    return f"{DOMAIN}/{kind.value}"


def excluded_by_lifeboat(node: Obj) -> bool:
    """Lifeboat put the exclusion label on this node (and may take it off again)."""
    return EXCLUDED_BY_LIFEBOAT_ANNOTATION in annotations_of(node)


def maintenance_stamp(start: datetime) -> str:
    """How a maintenance's start is written in ``MAINTENANCE_ENDED_ANNOTATION``."""
    return start.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def ec2_maintenance_value(start: datetime) -> str:
    """How a maintenance's start is written in ``EC2_MAINTENANCE_LABEL`` (a label value:
    letters, digits, ``-_.`` only)."""
    return start.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")


def ec2_maintenance_start(node: Obj) -> datetime | None:
    """The start in ``EC2_MAINTENANCE_LABEL``, or None (absent, or not Lifeboat's format)."""
    value = labels_of(node).get(EC2_MAINTENANCE_LABEL)
    try:
        return datetime.strptime(str(value), "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    except ValueError:
        return None


def maintenance_ended(node: Obj, start: datetime) -> bool:
    """Whether the maintenance starting at ``start`` ended while this node was kept."""
    return annotations_of(node).get(MAINTENANCE_ENDED_ANNOTATION) == maintenance_stamp(start)


def opted_out(nodepool: Obj) -> bool:
    """Whether a NodePool carries ``lifeboat.dev/disabled: "true"``."""
    return str(annotations_of(nodepool).get(OPT_OUT_ANNOTATION, "")).strip().lower() == "true"


def lifeboat_taint(node: Obj) -> dict[str, Any] | None:
    """Lifeboat's taint on the node: one that takes it out of service if any (a node can
    carry a waiting mark of one notice and the NoSchedule taint of another), else a mark."""
    own = [t for t in taints(node) if str(t.get("key", "")).startswith(f"{DOMAIN}/")]
    acting = [t for t in own if t.get("effect") != "PreferNoSchedule"]
    chosen = acting or own
    return chosen[0] if chosen else None


def pending_mark(node: Obj, key: str) -> bool:
    """The node carries the PreferNoSchedule mark of a notice of this taint key."""
    return any(t.get("key") == key and t.get("effect") == "PreferNoSchedule" for t in taints(node))


def acted_on(node: Obj) -> bool:
    """Lifeboat has taken this node out of service (not merely marked it as waiting)."""
    taint = lifeboat_taint(node)
    return taint is not None and taint.get("effect") != "PreferNoSchedule"


def disruption_reason(node: Obj) -> str | None:
    """Why the node counts as disrupting, from the Node alone (None: it does not).

    Karpenter's own test is "not Ready" (``BuildDisruptionBudgetMapping``); the NodeClaim's
    deletion is the pool count's to add (:mod:`lifeboat.karpenter.counting`). Lifeboat also counts
    what
    it can see of work in flight that Karpenter keeps in memory or cannot see at all: a Node
    being deleted, Karpenter's ``karpenter.sh/disrupted`` taint (written before Karpenter
    launches replacements), and Lifeboat's own NoSchedule/NoExecute taint. A PreferNoSchedule
    taint (a deferred notice) does not count: the node is still in use.
    """
    if node.get("metadata", {}).get("deletionTimestamp"):
        return "node being deleted"
    if not is_ready(node):
        return "node not Ready"
    for taint in taints(node):
        key = str(taint.get("key", ""))
        if key == KARPENTER_DISRUPTED_TAINT or (
            key.startswith(f"{DOMAIN}/") and taint.get("effect") != "PreferNoSchedule"
        ):
            return f"taint {key}:{taint.get('effect')}"
    return None


def is_disrupting(node: Obj) -> bool:
    return disruption_reason(node) is not None


def unresponsive(node: Obj) -> bool:
    """No kubelet will confirm the end of the node's pods: it is not Ready (unreachable), or
    its instance is impaired (Lifeboat's ``instance-impaired`` taint, placed by the sweep)."""
    impaired = taint_key(Kind.INSTANCE_IMPAIRED)
    return not is_ready(node) or any(t.get("key") == impaired for t in taints(node))
