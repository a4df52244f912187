"""Kubernetes Events on Nodes, so ``kubectl describe node`` tells what Lifeboat did and why."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from lifeboat.decide import Decision, Step
from lifeboat.events.notice import Notice
from lifeboat.kube.client import Conflict, KubeApi, KubeError
from lifeboat.model.instants import format_instant
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
