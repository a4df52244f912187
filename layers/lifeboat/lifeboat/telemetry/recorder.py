"""Kubernetes Events on Nodes, so ``kubectl describe node`` tells what Lifeboat did and why;
and, for a warning a workload can act on (an ending Capacity Block), on the node's Pods, so
a training job watching Events about its own pod can checkpoint before its node goes."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from lifeboat.decide import Decision, Step
from lifeboat.kube.client import Conflict, KubeApi, KubeError
from lifeboat.model.instants import format_instant
from lifeboat.model.notice import Kind, Notice
from lifeboat.model.report import Outcome

_log = logging.getLogger(__name__)

COMPONENT = "lifeboat"
# Node events live in "default", where kubectl describe node looks for them.
EVENT_NAMESPACE = "default"


def event_reason(notice: Notice, decision: Decision) -> str:
    base = notice.kind.event_reason
    if decision.outcome is Outcome.DEFERRED:
        return f"{base}Deferred"
    if decision.forced:
        return f"{base}Forced"
    if Step.RESTORE in decision.steps:  # the maintenance ended, or a rebalance cordon lifted
        return f"{base}Released"
    return base


def node_event(
    node: Mapping[str, Any], notice: Notice, decision: Decision, now: datetime, part: str = ""
) -> dict[str, Any]:
    """A core/v1 Event about ``node``; the name is derived from the notice and the outcome,
    so a redelivery answers 409 AlreadyExists instead of adding a duplicate. ``part``: what
    sets this decision's Event apart from the decision carried out in full (``interrupted``:
    the steps taken before a failure, reported while the message is retried)."""
    meta = node["metadata"]
    involved = {
        "apiVersion": "v1",
        "kind": "Node",
        "name": meta["name"],
        "uid": meta.get("uid", ""),
    }
    return object_event(
        involved,
        namespace=EVENT_NAMESPACE,
        reason=event_reason(notice, decision),
        message=f"{decision.outcome}: {decision.reason}",
        warning=decision.forced or notice.involuntary,
        key=f"{notice.dedup_key}|{decision.outcome}|{decision.deferred_until}"
        # Undoing is another decision about the same notice than the action it undoes.
        + ("|restore" if Step.RESTORE in decision.steps else "")
        + (f"|{part}" if part else ""),
        now=now,
    )


def object_event(
    involved: Mapping[str, Any],
    *,
    namespace: str,
    reason: str,
    message: str,
    warning: bool,
    key: str,
    now: datetime,
) -> dict[str, Any]:
    """A core/v1 Event about ``involved`` (its apiVersion, kind, name, uid and, for a
    namespaced object, namespace), stored in ``namespace``. Its name is ``involved``'s name
    and a digest of ``key``: the same key twice answers 409 AlreadyExists, no duplicate."""
    stamp = format_instant(now)
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{involved['name']}.lifeboat.{digest}", "namespace": namespace},
        "involvedObject": dict(involved),
        "reason": reason,
        "message": message[:1024],
        "type": "Warning" if warning else "Normal",
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
        "reportingInstance": COMPONENT,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }


def record(
    kube: KubeApi,
    node: Mapping[str, Any],
    notice: Notice,
    decision: Decision,
    now: datetime,
    *,
    part: str = "",
) -> None:
    """Best effort: the Event is the audit trail of an action already taken (and logged).
    Failing the message for it would redo the decision and schedule its follow-ups twice."""
    record_event(kube, node_event(node, notice, decision, now, part))


def record_event(kube: KubeApi, event: dict[str, Any]) -> None:
    """Create ``event`` (from :func:`object_event`), best effort, as :func:`record` does."""
    try:
        kube.create_event(event["metadata"]["namespace"], event)
    except Conflict:
        pass  # the same decision was recorded by an earlier delivery
    except KubeError as error:
        _log.warning("could not record the decision as a Kubernetes Event: %s", error)


# The reason of the Event a pod gets when its node's Capacity Block is ending.
POD_WARNING_REASON = "CapacityBlockExpiring"
# Pods that have finished need no warning.
_FINISHED = ("Succeeded", "Failed")


def warn_pods(
    kube: KubeApi, node: Mapping[str, Any], notice: Notice, decision: Decision, now: datetime
) -> int:
    """A Warning Event on every running pod of ``node`` when its Capacity Block is ending:
    the head start (40 minutes before the end, 10 before EC2 starts terminating) a job needs
    to checkpoint. Whatever Lifeboat decides for the node (acted on, or found already being
    deleted by Karpenter's expiration controller): the block ends all the same. One LIST of
    the node's pods; best effort, like :func:`record`; a redelivery answers 409 (the names
    derive from the notice). Returns how many Events were created."""
    if notice.kind is not Kind.CAPACITY_BLOCK_EXPIRY or decision.outcome is Outcome.DEFERRED:
        return 0
    node_name = node["metadata"]["name"]
    try:
        pods = kube.list_pods_on_node(node_name)
    except KubeError as error:
        _log.warning("could not list the pods of %s to warn them: %s", node_name, error)
        return 0
    created = 0
    for pod in pods:
        if (pod.get("status") or {}).get("phase") in _FINISHED:
            continue
        event = pod_warning(pod, node_name, notice, now)
        try:
            kube.create_event(event["metadata"]["namespace"], event)
            created += 1
        except Conflict:
            pass  # warned by an earlier delivery, or by the sweep
        except KubeError as error:
            _log.warning("could not warn pod %s: %s", event["involvedObject"]["name"], error)
    return created


def pod_warning(
    pod: Mapping[str, Any], node_name: str, notice: Notice, now: datetime
) -> dict[str, Any]:
    """The Event telling ``pod`` that its node's Capacity Block is ending."""
    meta = pod["metadata"]
    involved = {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": meta["name"],
        "namespace": meta.get("namespace", "default"),
        "uid": meta.get("uid", ""),
    }
    goes = format_instant(notice.deadline) if notice.deadline else "soon"
    message = (
        f"{notice.detail}: EC2 terminates node {node_name} from {goes}; checkpoint now. "
        "Lifeboat is replacing the node outside the block and draining it."
    )
    return object_event(
        involved,
        namespace=involved["namespace"],
        reason=POD_WARNING_REASON,
        message=message,
        warning=True,
        # The ledger key: the event's and the sweep's notice warn a pod once.
        key=f"{notice.ledger_key}|pod",
        now=now,
    )
