"""Facts read off Kubernetes objects: pure functions over the API's JSON.

Kept apart from ``decide`` so that ``decide`` reads as policy, and from ``act`` so that both
see a node the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from lifeboat.events.notice import Kind
from lifeboat.karpenter.godurations import parse_go_duration
from lifeboat.kube.objects import Obj
from lifeboat.model.instants import parse_timestamp

DOMAIN = "lifeboat.dev"
KARPENTER_DISRUPTED_TAINT = "karpenter.sh/disrupted"
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
NODEPOOL_LABEL = "karpenter.sh/nodepool"
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
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
ZONE_LABEL = "topology.kubernetes.io/zone"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
# Karpenter marks a Node initialized (labels.go NodeInitializedLabelKey); only such nodes count
# towards a pool's size for its budgets.
INITIALIZED_LABEL = "karpenter.sh/initialized"
# The finalizer Karpenter's lifecycle controller puts on every NodeClaim it manages.
TERMINATION_FINALIZER = "karpenter.sh/termination"
# Kubernetes' well-known label (k8s.io/api core/v1 LabelNodeExcludeBalancers): the service
# controller (cloud-provider's nodeIncludedPredicate) and the AWS Load Balancer Controller
# leave a node carrying it, whatever its value, out of load balancers' target groups.
EXCLUDE_FROM_LOAD_BALANCERS_LABEL = "node.kubernetes.io/exclude-from-external-load-balancers"
# Set with that label, only when Lifeboat put the label there: a label the operator set is
# never removed by Lifeboat.
EXCLUDED_BY_LIFEBOAT_ANNOTATION = f"{DOMAIN}/excluded-from-load-balancers"


def taint_key(kind: Kind) -> str:
    """Lifeboat's taint for a kind, e.g. ``lifeboat.dev/spot-interruption``."""
    return f"{DOMAIN}/{kind.value}"


def name_of(obj: Obj) -> str:
    return str(obj["metadata"]["name"])


def labels_of(obj: Obj) -> Mapping[str, str]:
    return obj.get("metadata", {}).get("labels") or {}


def annotations_of(obj: Obj) -> Mapping[str, str]:
    return obj.get("metadata", {}).get("annotations") or {}


def excluded_from_load_balancers(node: Obj) -> bool:
    """The node carries the well-known exclusion label (its value does not matter)."""
    return EXCLUDE_FROM_LOAD_BALANCERS_LABEL in labels_of(node)


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


def taints(node: Obj) -> list[dict[str, Any]]:
    return list(node.get("spec", {}).get("taints") or [])


def is_ready(node: Obj) -> bool:
    for condition in node.get("status", {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return bool(condition.get("status") == "True")
    return False


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


def is_initialized(node: Obj) -> bool:
    """Karpenter's ``StateNode.Initialized`` for a managed node: the Node carries
    ``karpenter.sh/initialized: "true"``."""
    return labels_of(node).get(INITIALIZED_LABEL) == "true"


def condition_true(obj: Obj, kind: str) -> bool:
    """Whether ``status.conditions`` holds ``kind`` with status "True"."""
    return any(
        c.get("type") == kind and c.get("status") == "True"
        for c in obj.get("status", {}).get("conditions") or []
    )


def is_deleting(obj: Obj) -> bool:
    return bool(obj.get("metadata", {}).get("deletionTimestamp"))


def karpenter_disrupting(node: Obj) -> bool:
    """Karpenter's disruption or termination is under way on this node: its
    ``karpenter.sh/disrupted:NoSchedule`` taint (``RequireNoScheduleTaint``, written by the
    disruption queue's ``markDisrupted`` and by the termination controller)."""
    return any(
        t.get("key") == KARPENTER_DISRUPTED_TAINT and t.get("effect") == "NoSchedule"
        for t in taints(node)
    )


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


def _owned_by(pod: Obj, api_version: str, kind: str) -> bool:
    return any(
        ref.get("apiVersion") == api_version and ref.get("kind") == kind
        for ref in pod["metadata"].get("ownerReferences") or []
    )


def is_daemonset_pod(pod: Obj) -> bool:
    return any(
        ref.get("kind") == "DaemonSet" for ref in pod["metadata"].get("ownerReferences") or []
    )


def is_mirror_pod(pod: Obj) -> bool:
    """A static pod's mirror: the kubelet's annotation, or Karpenter's ``IsOwnedByNode``."""
    return "kubernetes.io/config.mirror" in annotations_of(pod) or _owned_by(pod, "v1", "Node")


def is_active_pod(pod: Obj) -> bool:
    """Karpenter's ``IsActive``: not terminal (Succeeded, Failed) and not being deleted."""
    phase = pod.get("status", {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not pod["metadata"].get("deletionTimestamp")


def is_reschedulable(pod: Obj) -> bool:
    """Karpenter's ``IsReschedulable``: pods that need a place when their node goes (active,
    or a terminating StatefulSet pod), not DaemonSet or mirror pods."""
    active = is_active_pod(pod) or (
        _owned_by(pod, "apps/v1", "StatefulSet") and bool(pod["metadata"].get("deletionTimestamp"))
    )
    return active and not _owned_by(pod, "apps/v1", "DaemonSet") and not is_mirror_pod(pod)


def tolerates(pod: Obj, key: str, effect: str, value: str = "") -> bool:
    """Whether one of the pod's tolerations tolerates the taint (``Toleration.ToleratesTaint``:
    an empty effect matches every effect, an empty key with Exists matches every key)."""
    for toleration in pod.get("spec", {}).get("tolerations") or []:
        if toleration.get("effect") and toleration.get("effect") != effect:
            continue
        operator = toleration.get("operator") or "Equal"
        if toleration.get("key"):
            if toleration.get("key") != key:
                continue
        elif operator != "Exists":
            continue
        if operator == "Exists" or (toleration.get("value") or "") == value:
            return True
    return False


def drained_by_karpenter(pod: Obj) -> bool:
    """Active, not a mirror pod, and not tolerating ``karpenter.sh/disrupted:NoSchedule``:
    a pod Karpenter's drain evicts (unless do-not-disrupt holds it, see ``is_evictable``)."""
    return (
        is_active_pod(pod)
        and not tolerates(pod, KARPENTER_DISRUPTED_TAINT, "NoSchedule")
        and not is_mirror_pod(pod)
    )


def is_evictable(pod: Obj, now: datetime) -> bool:
    """Karpenter's ``IsEvictable``: what a drain would evict and a PDB could hold back."""
    return drained_by_karpenter(pod) and do_not_disrupt_until(pod, now) is None


def evictable_pods(pods: Iterable[Obj]) -> list[Obj]:
    """Pods a drain must evict: DaemonSet and mirror pods stay (kubectl drain does the same)."""
    return [
        pod
        for pod in pods
        if is_active_pod(pod) and not is_daemonset_pod(pod) and not is_mirror_pod(pod)
    ]


def terminating_pods(pods: Iterable[Obj]) -> list[Obj]:
    """Pods a drain evicted that are still terminating: being deleted, not yet terminal
    (their containers run their preStop hooks and grace period); DaemonSet and mirror pods
    are not waited for, as a drain leaves them."""
    return [
        pod
        for pod in pods
        if pod["metadata"].get("deletionTimestamp")
        and pod.get("status", {}).get("phase") not in ("Succeeded", "Failed")
        and not is_daemonset_pod(pod)
        and not is_mirror_pod(pod)
    ]


# Karpenter's ``IsStuckTerminating`` (core pkg/utils/pod/scheduling.go): a pod whose
# deletionTimestamp (its deletion plus its grace period) is more than this far in the past.
STUCK_AFTER = timedelta(minutes=1)


def stuck_terminating(pod: Obj, now: datetime) -> bool:
    """``IsStuckTerminating``: being deleted, and ``now`` more than a minute past its
    ``deletionTimestamp`` (which already includes the grace period). Karpenter's drain
    (``IsDrainable``) stops waiting for such a pod."""
    ends = parse_timestamp(pod.get("metadata", {}).get("deletionTimestamp"))
    return ends is not None and now - ends > STUCK_AFTER


def unresponsive(node: Obj) -> bool:
    """No kubelet will confirm the end of the node's pods: it is not Ready (unreachable), or
    its instance is impaired (Lifeboat's ``instance-impaired`` taint, placed by the sweep)."""
    impaired = taint_key(Kind.INSTANCE_IMPAIRED)
    return not is_ready(node) or any(t.get("key") == impaired for t in taints(node))


# A do-not-disrupt that blocks without an end ("true", or a duration on a pod not started).
FOREVER = datetime.max.replace(tzinfo=UTC)


def do_not_disrupt_until(pod: Obj, now: datetime) -> datetime | None:
    """Until when the pod's ``karpenter.sh/do-not-disrupt`` blocks (``FOREVER``: no end);
    None when it does not block now. Karpenter's ``IsDoNotDisruptActive``:

    - only active pods block (terminal and terminating pods never do, ``IsDisruptable``);
    - ``"true"`` blocks; any other value must be a positive Go duration, counted from the
      pod's ``status.startTime`` (not its creation), active while ``now - startTime < d``;
    - a pod with no ``status.startTime`` yet keeps a duration active ("fail safe");
    - a value that is not a positive duration is ignored (Karpenter emits an event).
    """
    if not is_active_pod(pod):
        return None
    value = annotations_of(pod).get(DO_NOT_DISRUPT)
    if value is None:
        return None
    if value == "true":
        return FOREVER
    try:
        duration: timedelta = parse_go_duration(value)
    except ValueError:
        return None
    if duration <= timedelta(0):
        return None
    started = parse_timestamp(pod.get("status", {}).get("startTime"))
    if started is None:
        return FOREVER
    until = started + duration
    return until if now < until else None


def do_not_disrupt_blocker(
    node: Obj, pods: Iterable[Obj], now: datetime
) -> tuple[str, datetime | None] | None:
    """Who blocks voluntary disruption, and until when (None: indefinitely).

    Karpenter (``StateNode.ValidateNodeDisruptable``, ``ValidatePodsDisruptable``):
    ``karpenter.sh/do-not-disrupt: "true"`` on the Node (no duration there), or an active
    do-not-disrupt on any pod bound to it, DaemonSet and mirror pods included.
    """
    if annotations_of(node).get(DO_NOT_DISRUPT) == "true":
        return f"node {name_of(node)} has {DO_NOT_DISRUPT}=true", None
    latest: tuple[str, datetime | None] | None = None
    for pod in pods:
        until = do_not_disrupt_until(pod, now)
        if until is None:
            continue
        value = annotations_of(pod)[DO_NOT_DISRUPT]
        who = f"pod {pod['metadata'].get('namespace', 'default')}/{name_of(pod)}"
        if until is FOREVER:
            started = pod.get("status", {}).get("startTime")
            why = "" if value == "true" or started else " (no status.startTime yet)"
            return f"{who} has {DO_NOT_DISRUPT}={value}{why}", None
        if latest is None or (latest[1] or now) < until:
            latest = (f"{who} has {DO_NOT_DISRUPT}={value}", until)
    return latest
