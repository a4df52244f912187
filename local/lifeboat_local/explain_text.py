"""``lifeboat explain`` for a person: one block of lines per (event, instance)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TextIO

from lifeboat.karpenter.budgets import LIFEBOAT_REASON
from lifeboat.kube import nodes
from lifeboat.marks import node_marks
from lifeboat_local.timeline import action_text


def render_text(entry: dict[str, Any], out: TextIO) -> None:
    lines: list[str] = []
    add = lines.append
    decision = entry["decision"]
    if "voluntary" not in entry:  # rejected, or a message that is no AWS notice
        add(
            f"Message in {entry.get('where')} ({entry.get('kind')}): "
            f"{decision['outcome'].upper()} -- {decision['reason']}"
        )
        out.write("\n".join(lines) + "\n\n")
        return
    _render_notice(entry, add)
    add(f"  deadline:    {_deadline_text(entry['timing'])}")
    if entry.get("lifecycle_hook"):
        add(f"  lifecycle:   hook {entry['lifecycle_hook']}")
    _render_node(entry, add)
    _render_decision(decision, add)
    add("  (judged on a copy of the cluster, after the notices before it: nothing was changed)")
    out.write("\n".join(lines) + "\n\n")


def _render_notice(entry: dict[str, Any], add: Callable[[str], None]) -> None:
    """The event's heading, the message it came in, and what kind of notice it is."""
    add(
        f"Event {entry['event_id']} ({entry['kind']}), instance {entry['instance_id'] or '-'}, "
        f"judged at {entry['at']}"
    )
    add(f"  message:     {entry.get('where')}")
    voluntary = "voluntary" if entry["voluntary"] else "involuntary (never waits for budgets)"
    detail = f" [{entry['detail']}]" if entry.get("detail") else ""
    sent = entry["event_time"]
    if entry.get("shifted_by"):
        sent += f" (its times moved {entry['shifted_by']}: handled as if sent when judged)"
    add(f"  notice:      {entry['kind']}{detail}, {voluntary}, sent {sent}")


def _deadline_text(timing: dict[str, Any]) -> str:
    """The deadline line's text: the deadline and the time left (and the lead), or how long
    a notice without one waits for its pool, or none."""
    if timing.get("deadline"):
        left = str(timing["time_left"])
        when = f"passed {left[1:]} ago" if left.startswith("-") else f"in {left}"
        text = f"{timing['deadline']} ({when})"
        if timing.get("lead"):
            text += f"; lead {timing['lead']}: acts regardless from {timing['act_regardless_from']}"
        return text
    if timing.get("gives_up_at"):
        return (
            f"none; waits at most {timing['patience']} for its pool, "
            f"gives up at {timing['gives_up_at']}"
        )
    return "none"


def _render_node(entry: dict[str, Any], add: Callable[[str], None]) -> None:
    """The instance's node: its state, taints, NodeClaim, NodePool and pods (or that no
    node was found, when the decision needed one)."""
    node = entry.get("node")
    if node is None:
        if entry["decision"]["by"] == "decide":
            add("  node:        none found for this instance")
        return
    state = ["Ready" if node["ready"] else "NOT Ready"]
    state.append("cordoned" if node["unschedulable"] else "schedulable")
    state.append("disrupting" if node["disrupting"] else "not disrupting")
    add(f"  node:        {node['name']} ({', '.join(state)})")
    if node["taints"]:
        add(f"  taints:      {', '.join(node['taints'])}")
    missing = _missing(entry)
    claim = entry.get("nodeclaim")
    if "NodeClaim" in missing:
        claim = (
            f"{claim} ({NOT_IN_FILE}: named by the Node)"
            if claim
            else f"{NOT_IN_FILE} (the file holds no NodeClaims)"
        )
    claim = claim or "none (not Karpenter-managed: drained by Lifeboat)"
    add(f"  NodeClaim:   {claim}")
    if entry.get("nodepool_missing"):
        found = "NOT IN THE FILE" if "NodePool" in missing else "NOT FOUND"
        add(f"  NodePool:    {entry['nodepool_missing']} ({found})")
    _render_pool(entry.get("pool"), add)
    _render_pods(entry, add)


def _render_decision(decision: dict[str, Any], add: Callable[[str], None]) -> None:
    """The decision: its outcome and reason, steps, actions and when it is looked at again."""
    until = f" until {decision['deferred_until']}" if decision["deferred_until"] else ""
    forced = " (FORCED past budgets/do-not-disrupt)" if decision["forced"] else ""
    add(f"  decision:    {decision['outcome'].upper()}{until}{forced} -- {decision['reason']}")
    if decision["steps"]:
        add(f"  steps:       {', '.join(decision['steps'])}")
    if decision.get("actions"):
        add(f"  would do:    {', '.join(action_text(a) for a in decision['actions'])}")
    if decision["recheck_at"]:
        add(f"  recheck at:  {decision['recheck_at']}")


def _render_pool(pool: dict[str, Any] | None, add: Any) -> None:
    if pool is None:
        return
    add(f"  NodePool:    {pool['name']}: {pool['nodes']} node(s), {pool['disrupting']} disrupting")
    for item in pool["disrupting_nodes"]:
        add(f"                 disrupting: {item['node']} ({item['why']})")
    if pool["opted_out"]:
        add(f"                 opted out: {node_marks.OPT_OUT_ANNOTATION}={pool['opted_out']}")
    if pool["budget_error"]:
        add(f"  budgets:     INVALID, pool blocked: {pool['budget_error']}")
    else:
        add(f"  budgets:     (for reason {LIFEBOAT_REASON})")
    for budget in pool["budgets"]:
        when = "always"
        if budget["schedule"] is not None:
            when = f'schedule "{budget["schedule"]}" for {budget["duration"]}'
        state = "ACTIVE" if budget["active"] else "inactive"
        if not budget["applies"]:
            state = f"does not apply to {LIFEBOAT_REASON} (reasons {budget['reasons']})"
        elif budget["window_ends"]:
            state += f", window ends {budget['window_ends']}"
        elif budget["next_window"]:
            state += f", next window opens {budget['next_window']}"
        add(
            f'    budget[{budget["index"]}] nodes "{budget["nodes"]}", {when}: {state}; '
            f"limit {budget['limit']}"
        )
    allowed = "no limit" if pool["allowed"] is None else pool["allowed"]
    add(f"  allowed now: {allowed} -- {pool['allowance']}")


def _render_pods(entry: dict[str, Any], add: Any) -> None:
    pods = entry.get("pods") or []
    if not pods and "Pod" in _missing(entry):
        add(f"  pods:        {NOT_IN_FILE} (the file holds no Pods)")
    else:
        add(f"  pods:        {len(pods)}: {', '.join(pods) if pods else '-'}")
    dnd = entry.get("do_not_disrupt") or {}
    if dnd.get("marks"):
        for mark in dnd["marks"]:
            add(f"  do-not-disrupt: {mark['object']} has {nodes.DO_NOT_DISRUPT}={mark['value']}")
    else:
        add("  do-not-disrupt: none")
    if dnd.get("blocking"):
        until = dnd["blocking_until"] or "indefinitely"
        add(f"                 blocks voluntary disruption ({until}): {dnd['blocking']}")
    pdbs = entry.get("pdbs") or []
    if not pdbs and "PodDisruptionBudget" in _missing(entry):
        add(f"  PDBs:        {NOT_IN_FILE} (the file holds no PodDisruptionBudgets)")
    elif not pdbs:
        add("  PDBs:        none select this node's pods")
    for pdb in pdbs:
        rule = (
            f"maxUnavailable {pdb['maxUnavailable']}"
            if pdb["maxUnavailable"] is not None
            else f"minAvailable {pdb['minAvailable']}"
        )
        add(
            f"  PDB:         {pdb['namespace']}/{pdb['name']} {rule}: disruptionsAllowed "
            f"{pdb['disruptionsAllowed']} (healthy {pdb['currentHealthy']}, desired "
            f"{pdb['desiredHealthy']}, expected {pdb['expectedPods']}); on this node: "
            f"{', '.join(pdb['pods_on_node'])}"
        )


NOT_IN_FILE = "not in the file"


def _missing(entry: dict[str, Any]) -> list[str]:
    """The kinds the cluster file lacked (``in_file_entry``)."""
    return list(entry.get("missing_kinds") or ())
