"""Karpenter's disruption rules over nodes and pods (kubernetes-sigs/karpenter): whether a
node is initialized or being disrupted by Karpenter, which pods its drain evicts or waits for,
and ``karpenter.sh/do-not-disrupt`` with its duration.

Pure. May import kube's views, karpenter's Go durations and instants.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from lifeboat.karpenter.godurations import parse_go_duration
from lifeboat.kube.nodes import (
    DO_NOT_DISRUPT,
    INITIALIZED_LABEL,
    KARPENTER_DISRUPTED_TAINT,
    annotations_of,
    is_active_pod,
    is_daemonset_pod,
    is_mirror_pod,
    labels_of,
    name_of,
    owned_by,
    taints,
    tolerates,
)
from lifeboat.model.instants import parse_timestamp
from lifeboat.model.objects import Obj


def is_initialized(node: Obj) -> bool:
    """Karpenter's ``StateNode.Initialized`` for a managed node: the Node carries
    ``karpenter.sh/initialized: "true"``."""
    return labels_of(node).get(INITIALIZED_LABEL) == "true"


def karpenter_disrupting(node: Obj) -> bool:
    """Karpenter's disruption or termination is under way on this node: its
    ``karpenter.sh/disrupted:NoSchedule`` taint (``RequireNoScheduleTaint``, written by the
    disruption queue's ``markDisrupted`` and by the termination controller)."""
    return any(
        t.get("key") == KARPENTER_DISRUPTED_TAINT and t.get("effect") == "NoSchedule"
        for t in taints(node)
    )


def is_reschedulable(pod: Obj) -> bool:
    """Karpenter's ``IsReschedulable``: pods that need a place when their node goes (active,
    or a terminating StatefulSet pod), not DaemonSet or mirror pods."""
    active = is_active_pod(pod) or (
        owned_by(pod, "apps/v1", "StatefulSet") and bool(pod["metadata"].get("deletionTimestamp"))
    )
    return active and not owned_by(pod, "apps/v1", "DaemonSet") and not is_mirror_pod(pod)


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
