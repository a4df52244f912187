"""Facts read off Kubernetes objects: pure functions over the API's JSON.

Kept apart from ``decide`` so that ``decide`` reads as policy, and from ``act`` so that both
see a node the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from lifeboat.events.notice import Kind
from lifeboat.godurations import parse_go_duration
from lifeboat.instants import parse_timestamp
from lifeboat.objects import Obj

DOMAIN = "lifeboat.dev"
KARPENTER_DISRUPTED_TAINT = "karpenter.sh/disrupted"
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
NODEPOOL_LABEL = "karpenter.sh/nodepool"
REPLACES_LABEL = f"{DOMAIN}/replaces"
NOTICE_ANNOTATION = f"{DOMAIN}/notice"
OPT_OUT_ANNOTATION = f"{DOMAIN}/disabled"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
ZONE_LABEL = "topology.kubernetes.io/zone"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"


def taint_key(kind: Kind) -> str:
    """Lifeboat's taint for a kind, e.g. ``lifeboat.dev/spot-interruption``."""
    return f"{DOMAIN}/{kind.value}"


def name_of(obj: Obj) -> str:
    return str(obj["metadata"]["name"])


def labels_of(obj: Obj) -> Mapping[str, str]:
    return obj.get("metadata", {}).get("labels") or {}


def annotations_of(obj: Obj) -> Mapping[str, str]:
    return obj.get("metadata", {}).get("annotations") or {}


def opted_out(nodepool: Obj) -> bool:
    """Whether a NodePool carries ``lifeboat.dev/disabled: "true"``."""
    return str(annotations_of(nodepool).get(OPT_OUT_ANNOTATION, "")).strip().lower() == "true"


def taints(node: Obj) -> list[dict[str, Any]]:
    return list(node.get("spec", {}).get("taints") or [])


def is_ready(node: Obj) -> bool:
    for condition in node.get("status", {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return bool(condition.get("status") == "True")
    return False


def lifeboat_taint(node: Obj) -> dict[str, Any] | None:
    for taint in taints(node):
        if str(taint.get("key", "")).startswith(f"{DOMAIN}/"):
            return taint
    return None


def pending_mark(node: Obj, key: str) -> bool:
    """The node carries the PreferNoSchedule mark of a notice of this taint key."""
    return any(t.get("key") == key and t.get("effect") == "PreferNoSchedule" for t in taints(node))


def acted_on(node: Obj) -> bool:
    """Lifeboat has taken this node out of service (not merely marked it as waiting)."""
    taint = lifeboat_taint(node)
    return taint is not None and taint.get("effect") != "PreferNoSchedule"


def disruption_reason(node: Obj) -> str | None:
    """Why the node counts as disrupting (None: it does not). Karpenter's notion, widened to
    Lifeboat's own taints (design.md); the NodeClaim's deletion is the pool's to add.

    A PreferNoSchedule taint (a deferred notice) does not count: the node is still in use.
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


def nodeclaim_owner(node: Obj) -> tuple[str, str | None] | None:
    """(name, uid) of the NodeClaim that owns the node, from its ownerReferences."""
    for ref in node.get("metadata", {}).get("ownerReferences") or []:
        if ref.get("kind") == "NodeClaim" and str(ref.get("apiVersion", "")).startswith(
            "karpenter.sh/"
        ):
            return str(ref["name"]), ref.get("uid")
    return None


def provider_id(node: Obj) -> str | None:
    value = node.get("spec", {}).get("providerID")
    return str(value) if value else None


def is_daemonset_pod(pod: Obj) -> bool:
    return any(
        ref.get("kind") == "DaemonSet" for ref in pod["metadata"].get("ownerReferences") or []
    )


def is_mirror_pod(pod: Obj) -> bool:
    return "kubernetes.io/config.mirror" in annotations_of(pod)


def is_active_pod(pod: Obj) -> bool:
    """Running or about to: not finished and not already being deleted."""
    phase = pod.get("status", {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not pod["metadata"].get("deletionTimestamp")


def evictable_pods(pods: Iterable[Obj]) -> list[Obj]:
    """Pods a drain must evict: DaemonSet and mirror pods stay (kubectl drain does the same)."""
    return [
        pod
        for pod in pods
        if is_active_pod(pod) and not is_daemonset_pod(pod) and not is_mirror_pod(pod)
    ]


def do_not_disrupt_blocker(
    node: Obj, pods: Iterable[Obj], now: datetime
) -> tuple[str, datetime | None] | None:
    """Who blocks voluntary disruption, and until when (None: indefinitely).

    Karpenter: ``karpenter.sh/do-not-disrupt: "true"`` on the Node or an active pod blocks;
    on a pod, a duration ("1h") blocks while the pod is younger than it.
    """
    if annotations_of(node).get(DO_NOT_DISRUPT) == "true":
        return f"node {name_of(node)} has {DO_NOT_DISRUPT}=true", None
    latest: tuple[str, datetime | None] | None = None
    for pod in pods:
        if not is_active_pod(pod):
            continue
        value = annotations_of(pod).get(DO_NOT_DISRUPT)
        if value is None:
            continue
        who = f"pod {pod['metadata'].get('namespace', 'default')}/{name_of(pod)}"
        if value == "true":
            return f"{who} has {DO_NOT_DISRUPT}=true", None
        until = _do_not_disrupt_until(pod, value)
        if until is not None and until > now and (latest is None or (latest[1] or now) < until):
            latest = (f"{who} has {DO_NOT_DISRUPT}={value}", until)
    return latest


def _do_not_disrupt_until(pod: Obj, value: str) -> datetime | None:
    created = parse_timestamp(pod["metadata"].get("creationTimestamp"))
    if created is None:
        return None
    try:
        duration: timedelta = parse_go_duration(value)
    except ValueError:
        # Karpenter ignores a value it cannot parse as a duration (only "true" is special).
        return None
    return created + duration
