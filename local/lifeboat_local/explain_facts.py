"""The facts ``lifeboat explain`` shows about a decision, read from the cluster at the moment
it was made: the notice's timing, the node, its NodePool's budgets and counts, do-not-disrupt
marks, and the PodDisruptionBudgets covering the node's pods. Read only."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from lifeboat.decide import VOLUNTARY_PATIENCE
from lifeboat.karpenter import disruption_rules
from lifeboat.karpenter.budgets import (
    LIFEBOAT_REASON,
    BudgetError,
    allowed_disruptions,
    applies_to,
    budget_limit,
    format_go_duration,
    is_active,
    parse_budgets,
    window_timeline,
)
from lifeboat.kube import nodes
from lifeboat.kube.client import KubeApi
from lifeboat.kube.selectors import selector_matches
from lifeboat.marks import node_marks
from lifeboat.model.instants import format_instant
from lifeboat.model.notice import Notice
from lifeboat.model.objects import Obj
from lifeboat.model.settings import Settings
from lifeboat.model.target import Target

# How far ahead a budget's window end or next opening is looked for.
HORIZON = timedelta(days=31)


def fmt(moment: datetime | None) -> str | None:
    return format_instant(moment) if moment else None


def pdbs_for(kube: KubeApi, pods: Sequence[Obj]) -> list[dict[str, Any]]:
    """The PDBs selecting any of ``pods``: one list per namespace of the pods."""
    found = []
    for namespace in sorted({p["metadata"].get("namespace", "default") for p in pods}):
        local = [p for p in pods if p["metadata"].get("namespace", "default") == namespace]
        for pdb in kube.list_pdbs(namespace):
            spec, status = pdb.get("spec") or {}, pdb.get("status") or {}
            selected = [
                nodes.name_of(p)
                for p in local
                if selector_matches(spec.get("selector"), nodes.labels_of(p))
            ]
            if not selected:
                continue
            found.append(
                {
                    "namespace": namespace,
                    "name": nodes.name_of(pdb),
                    "minAvailable": spec.get("minAvailable"),
                    "maxUnavailable": spec.get("maxUnavailable"),
                    "disruptionsAllowed": status.get("disruptionsAllowed"),
                    "currentHealthy": status.get("currentHealthy"),
                    "desiredHealthy": status.get("desiredHealthy"),
                    "expectedPods": status.get("expectedPods"),
                    "pods_on_node": selected,
                }
            )
    return found


def budget_facts(
    nodepool: Obj, node_count: int, at: datetime
) -> tuple[list[dict[str, Any]], str | None]:
    """Each budget: values, active now, its limit, and its window's end or next opening."""
    try:
        budgets = parse_budgets(nodepool)
        timeline = window_timeline(nodepool, node_count, at, at + HORIZON)
    except BudgetError as error:
        return [], str(error)
    facts = []
    for budget in budgets:
        applies = applies_to(budget, LIFEBOAT_REASON)
        active = is_active(budget, at)
        fact: dict[str, Any] = {
            "index": budget.index,
            "nodes": budget.nodes,
            "schedule": budget.schedule,
            "duration": _duration(budget.duration),
            "reasons": None if budget.reasons is None else list(budget.reasons),
            "applies": applies,
            "active": active,
            "limit": budget_limit(budget, node_count),
            "window_ends": None,
            "next_window": None,
        }
        if budget.scheduled and applies:
            if active:
                ends = next(
                    (s.start for s in timeline if budget.index not in s.active_budget_indexes), None
                )
                fact["window_ends"] = fmt(ends)
            else:
                opens = next(
                    (s.start for s in timeline if budget.index in s.active_budget_indexes), None
                )
                fact["next_window"] = fmt(opens)
        facts.append(fact)
    return facts, None


def _duration(value: timedelta | None) -> str | None:
    return None if value is None else format_go_duration(value)


def do_not_disrupt(node: Obj, pods: Sequence[Obj], at: datetime) -> dict[str, Any]:
    marks: list[dict[str, Any]] = []
    on_node = nodes.annotations_of(node).get(nodes.DO_NOT_DISRUPT)
    if on_node is not None:
        marks.append({"object": f"node {nodes.name_of(node)}", "value": on_node})
    for pod in pods:
        value = nodes.annotations_of(pod).get(nodes.DO_NOT_DISRUPT)
        if value is not None:
            who = f"pod {pod['metadata'].get('namespace', 'default')}/{nodes.name_of(pod)}"
            marks.append({"object": who, "value": value, "active_pod": nodes.is_active_pod(pod)})
    blocker = disruption_rules.do_not_disrupt_blocker(node, pods, at)
    return {
        "marks": marks,
        "blocking": None if blocker is None else blocker[0],
        "blocking_until": None if blocker is None else fmt(blocker[1]),
    }


def notice_facts(notice: Notice, settings: Settings, at: datetime) -> dict[str, Any]:
    """What the notice itself says, and its timing."""
    return {
        "event_id": notice.event_id,
        "kind": str(notice.kind),
        "instance_id": notice.instance_id,
        "voluntary": not notice.involuntary,
        "detail": notice.detail or None,
        "event_time": fmt(notice.event_time),
        "deadline": fmt(notice.deadline),
        "lifecycle_hook": notice.lifecycle.hook_name if notice.lifecycle else None,
        "at": fmt(at),
        "timing": timing(notice, settings, at),
    }


def timing(notice: Notice, settings: Settings, at: datetime) -> dict[str, Any]:
    timing: dict[str, Any] = {"deadline": fmt(notice.deadline), "lead": None}
    if notice.deadline is not None:
        timing["time_left"] = _human(notice.deadline - at)
        if not notice.involuntary:
            timing["lead"] = _human(settings.scheduled_change_lead)
            timing["act_regardless_from"] = fmt(notice.deadline - settings.scheduled_change_lead)
    elif not notice.involuntary:
        timing["patience"] = _human(VOLUNTARY_PATIENCE)
        timing["gives_up_at"] = fmt(notice.event_time + VOLUNTARY_PATIENCE)
    return timing


def target_facts(kube: KubeApi, target: Target, at: datetime) -> dict[str, Any]:
    facts: dict[str, Any] = {"node": None}
    node = target.node
    if node is None:
        return facts
    pods = list(target.pods or ())
    facts["node"] = {
        "name": nodes.name_of(node),
        "ready": nodes.is_ready(node),
        "unschedulable": bool(node.get("spec", {}).get("unschedulable")),
        "disrupting": node_marks.is_disrupting(node),
        "taints": [f"{t.get('key')}:{t.get('effect')}" for t in nodes.taints(node)],
    }
    facts["nodeclaim"] = target.claim.name if target.claim else None
    facts["nodepool"] = target.nodepool_name if target.nodepool is not None else None
    if target.nodepool_name and target.nodepool is None and target.claim:
        facts["nodepool_missing"] = target.nodepool_name
    facts["pods"] = [
        f"{p['metadata'].get('namespace', 'default')}/{nodes.name_of(p)}" for p in pods
    ]
    facts["do_not_disrupt"] = do_not_disrupt(node, pods, at)
    facts["pdbs"] = pdbs_for(kube, [p for p in pods if nodes.is_active_pod(p)])
    nodepool, counts = target.nodepool, target.counts
    if nodepool is not None and counts is not None:
        budgets, error = budget_facts(nodepool, counts.node_count, at)
        allowance = allowed_disruptions(nodepool, counts.node_count, counts.disrupting, at)
        facts["pool"] = {
            "name": nodes.name_of(nodepool),
            "nodes": counts.node_count,
            "disrupting": counts.disrupting,
            "disrupting_nodes": [{"node": n, "why": w} for n, w in counts.disrupting_nodes],
            "opted_out": nodes.annotations_of(nodepool).get(node_marks.OPT_OUT_ANNOTATION),
            "budgets": budgets,
            "budget_error": error,
            "limit": allowance.limit,
            "allowed": allowance.allowed,
            "binding_budget": allowance.binding_budget,
            "allowance": allowance.reason,
        }
    return facts


def _human(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    sign, seconds = ("-" if seconds < 0 else ""), abs(seconds)
    days, rest = divmod(seconds, 86_400)
    hours, rest = divmod(rest, 3_600)
    minutes = rest // 60
    parts = [f"{days}d" if days else "", f"{hours}h" if hours else ""]
    parts.append(f"{minutes}m" if minutes or not (days or hours) else "")
    return sign + "".join(parts)
