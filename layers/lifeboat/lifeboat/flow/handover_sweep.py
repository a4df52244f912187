"""Hand-overs whose wake-up chain broke, found by each instance status sweep (issue 33.3).

A when-ready hand-over (``lifeboat.marks.handover``) holds the old node (do-not-disrupt,
taint, cordon) and protects its replacement until its ``HAND_OVER`` wake-up finishes or
gives it up. Were that wake-up never scheduled (Scheduler failing through every delivery of
the message, which then goes to the dead-letter queue) or dead-lettered itself, nothing
would ever remove what it holds. So the old node and the replacement carry the hand-over
(``handover.HAND_OVER_LABEL``: when the sweep takes over; ``handover.HAND_OVER_ANNOTATION``:
its wake-up), and every sweep (each minute) lists the nodes and NodeClaims so labelled and
hands the pipeline the wake-ups past that instant, to be done as if they had come due:
finished if the replacement is initialized, given up otherwise (the node back in service,
and for a maintenance the notice decided again at its latest start).

Past the take-over instant (``PATIENCE + SWEEP_GRACE`` after the hand-over began) a wake-up
of the chain would have done its last look minutes before; one still on its way (a queue
retry) does the same as the sweep, and every step is idempotent, so no pending schedule is
looked up (the Scheduler may be what fails).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime

from lifeboat.kube import nodes
from lifeboat.kube.client import KubeApi
from lifeboat.marks.handover import (
    HAND_OVER_ANNOTATION,
    HAND_OVER_LABEL,
    taken_over_at,
    unprotect_operations,
)
from lifeboat.model.instances import instance_id_from_provider_id
from lifeboat.model.notice import MalformedMessage
from lifeboat.model.objects import Obj
from lifeboat.wakeup.codec import Task, Wakeup, decode


def orphaned(kube: KubeApi, cluster: str | None, now: datetime) -> tuple[list[Wakeup], list[str]]:
    """The hand-overs of ``cluster`` past their take-over instant (each once, though the old
    node, the replacement and its node may all carry it), and what was found besides."""
    claims = kube.list_nodeclaims(HAND_OVER_LABEL)
    marked = [*kube.list_nodes(HAND_OVER_LABEL), *claims]
    wakeups, problems = due(marked, cluster, now)
    for node in left_on_replacements(marked, now):
        # Copied onto the replacement's Node by its registration (Registration.syncNode
        # patches the Node before the claim's status names it) after the hand-over released
        # the claim: nothing waits on it any more, so only the copy is removed.
        kube.patch_node(nodes.name_of(node), unprotect_operations(node))
        problems.append(
            f"Node {nodes.name_of(node)}: removed the hand-over protection its registration "
            "copied from its NodeClaim after the hand-over ended"
        )
    return wakeups, problems


def due(
    marked: Iterable[Obj], cluster: str | None, now: datetime
) -> tuple[list[Wakeup], list[str]]:
    """:func:`orphaned` over the objects listed. Pure."""
    found: dict[str, Wakeup] = {}
    problems: list[str] = []
    for obj in marked:
        until = taken_over_at(obj)
        if until is None or not _past(obj, now):
            continue  # its own wake-ups still have time (or the label is not Lifeboat's)
        if _on_replacement_node(obj):
            continue  # the claim's copy: the claim (or left_on_replacements) speaks for it
        wakeup, problem = _read(obj, cluster)
        if wakeup is not None:
            # The node's and the claim's records of one hand-over may differ by when each
            # was written: one hand-over is one old claim handed to one replacement.
            key = f"{wakeup.old_nodeclaim_uid}>{wakeup.replacement}"
            found.setdefault(key, replace(wakeup, due=until))
        elif problem is not None:
            problems.append(problem)
    return list(found.values()), problems


def left_on_replacements(marked: Iterable[Obj], now: datetime) -> list[Obj]:
    """Replacement Nodes past the take-over instant that carry a hand-over their NodeClaim
    no longer carries (released while registration copied it). Pure."""
    listed = list(marked)
    claimed = {
        nodes.annotations_of(o).get(HAND_OVER_ANNOTATION)
        for o in listed
        if o.get("kind") == "NodeClaim"
    }
    return [
        o
        for o in listed
        if _on_replacement_node(o)
        and _past(o, now)
        and nodes.annotations_of(o).get(HAND_OVER_ANNOTATION) not in claimed
    ]


def _past(obj: Obj, now: datetime) -> bool:
    until = taken_over_at(obj)
    return until is not None and now >= until


def _on_replacement_node(obj: Obj) -> bool:
    """A Node carrying a hand-over about another instance: the replacement's, which its
    registration copied the claim's labels and annotations onto (not the old node)."""
    if obj.get("kind") != "Node":
        return False
    try:
        record = json.loads(str(nodes.annotations_of(obj).get(HAND_OVER_ANNOTATION)))
        about = record["notice"]["instance_id"]
    except (ValueError, TypeError, KeyError):
        return False
    provider = str((obj.get("spec") or {}).get("providerID", ""))
    return isinstance(about, str) and instance_id_from_provider_id(provider) != about


def _read(obj: Obj, cluster: str | None) -> tuple[Wakeup | None, str | None]:
    """The hand-over ``obj`` carries, checked as strictly as a queued wake-up."""
    what = f"{obj.get('kind', 'object')} {nodes.name_of(obj)}"
    text = nodes.annotations_of(obj).get(HAND_OVER_ANNOTATION)
    try:
        wakeup = decode(json.loads(str(text)))
    except (MalformedMessage, ValueError, TypeError) as error:
        return None, f"{what}: {HAND_OVER_ANNOTATION} is no hand-over Lifeboat wrote: {error}"
    if wakeup.task is not Task.HAND_OVER:
        return None, f"{what}: {HAND_OVER_ANNOTATION} holds a {wakeup.task} wake-up"
    if cluster is not None and wakeup.cluster not in (None, cluster):
        return None, f"{what}: its hand-over names cluster {wakeup.cluster}, found in {cluster}"
    return replace(wakeup, cluster=wakeup.cluster or cluster), None
