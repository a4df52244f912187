"""A stand-in for Karpenter (and Auto Scaling) while ``lifeboat replay --follow`` moves time.

Without it, deferred work could never play out locally: nothing would launch the
replacement NodeClaims Lifeboat creates, nor take away the nodes whose claims it deletes,
so a pool's "disrupting" count would never fall. The simulation does only what the real
controllers visibly do, on the simulated clock:

- a NodeClaim with no ``status.providerID`` is launched ``LAUNCH_TIME`` after it was
  created: it gets a providerID, a node name and Ready conditions, and a Ready Node joins;
- a Node whose NodeClaim is gone, or being deleted, is drained and terminated
  ``TERMINATE_TIME`` later: its pods and the Node are removed (pods are not rescheduled);
- a node-group Node that Lifeboat cordoned for an involuntary notice and fully drained is
  terminated the same way (the Auto Scaling group goes on once the hook completes).

The simulation only looks at the cluster when the replay moves the clock (``advance``), and
Lifeboat only writes while the clock stands still between two moves. So a change first seen
at ``advance(now)`` was made at the previous clock position, and its timer starts there: a
claim created at 14:05:00 and first seen at 14:05:30 is launched at 14:06:00, not 14:06:30,
and a node whose claim went at 14:06:30 is gone at the first look from 14:08:00 on, not
``TERMINATE_TIME`` after the next wake-up happened to look.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from kubemu import Emulator
from lifeboat import nodes
from lifeboat.instances import zone_from_provider_id
from lifeboat.instants import format_instant

LAUNCH_TIME = timedelta(seconds=60)
TERMINATE_TIME = timedelta(seconds=90)


@dataclass(frozen=True)
class SimStep:
    """One thing the simulated Karpenter (or Auto Scaling) did, for the replay to show."""

    at: datetime
    action: str  # e.g. "launched" (a claim got its instance and Node), "node-removed"
    nodepool: str | None = None
    claim: str | None = None
    node: str | None = None
    detail: str = ""


class KarpenterSimulation:
    def __init__(self, emulator: Emulator, start: datetime | None = None) -> None:
        self._emu = emulator
        self._first_seen: dict[str, datetime] = {}
        # The clock position of the previous look (or the replay's start): what is new at a
        # look was written while the clock stood there.
        self._last = start

    def advance(self, now: datetime) -> list[SimStep]:
        """Play the controllers forward to ``now``; what they did, in time order."""
        since = self._last if self._last is not None and self._last <= now else now
        steps = self._launch(now, since) + self._terminate(now, since)
        self._last = now
        return sorted(steps, key=lambda step: step.at)

    def _launch(self, now: datetime, since: datetime) -> list[SimStep]:
        steps: list[SimStep] = []
        for claim in self._emu.objects("NodeClaim"):
            name = nodes.name_of(claim)
            if claim.get("status", {}).get("providerID"):
                continue
            seen = self._first_seen.setdefault(f"launch/{name}", since)
            if now - seen < LAUNCH_TIME:
                continue
            launched = seen + LAUNCH_TIME
            self._emu.put_object(_launched_claim(claim, launched))
            node = self._emu.put_object(_node_for(claim, launched))
            steps.append(
                SimStep(
                    launched,
                    "launched",
                    nodepool=nodes.labels_of(claim).get(nodes.NODEPOOL_LABEL),
                    claim=name,
                    node=nodes.name_of(node),
                    detail="instance running, node Ready",
                )
            )
        return steps

    def _terminate(self, now: datetime, since: datetime) -> list[SimStep]:
        steps: list[SimStep] = []
        live_claims = {
            nodes.name_of(c)
            for c in self._emu.objects("NodeClaim")
            if not c["metadata"].get("deletionTimestamp")
        }
        pods_by_node: dict[str, list[dict[str, Any]]] = {}
        for pod in self._emu.objects("Pod"):
            pods_by_node.setdefault(pod.get("spec", {}).get("nodeName", ""), []).append(pod)
        for node in self._emu.objects("Node"):
            name = nodes.name_of(node)
            if not self._going(node, live_claims, pods_by_node.get(name, [])):
                continue
            seen = self._first_seen.setdefault(f"terminate/{name}", since)
            if now - seen < TERMINATE_TIME:
                continue
            for pod in pods_by_node.get(name, []):
                self._emu.delete_object("Pod", nodes.name_of(pod), pod["metadata"]["namespace"])
            self._emu.delete_object("Node", name)
            owner = nodes.nodeclaim_owner(node)
            if owner:
                self._emu.delete_object("NodeClaim", owner[0])
            steps.append(
                SimStep(
                    seen + TERMINATE_TIME,
                    "node-removed",
                    nodepool=nodes.labels_of(node).get(nodes.NODEPOOL_LABEL),
                    claim=owner[0] if owner else None,
                    node=name,
                    detail="drained and terminated",
                )
            )
        return steps

    @staticmethod
    def _going(node: dict[str, Any], live_claims: set[str], pods: list[dict[str, Any]]) -> bool:
        owner = nodes.nodeclaim_owner(node)
        if owner is not None:
            return owner[0] not in live_claims
        taint = nodes.lifeboat_taint(node)
        if taint is None or taint.get("effect") == "PreferNoSchedule":
            return False
        return not nodes.evictable_pods(pods)


def _launched_claim(claim: dict[str, Any], now: datetime) -> dict[str, Any]:
    name = nodes.name_of(claim)
    instance = "i-" + hashlib.sha256(name.encode()).hexdigest()[:17]
    zone = _first_value(claim, nodes.ZONE_LABEL) or "us-east-1a"
    stamp = format_instant(now)
    claim["status"] = {
        "providerID": f"aws:///{zone}/{instance}",
        "nodeName": f"{name}.sim.internal",
        "conditions": [
            {"type": kind, "status": "True", "lastTransitionTime": stamp, "reason": kind}
            for kind in ("Launched", "Registered", "Initialized", "Ready")
        ],
    }
    return claim


def _node_for(claim: dict[str, Any], now: datetime) -> dict[str, Any]:
    status = claim["status"]
    labels = dict(nodes.labels_of(claim))
    labels.pop(nodes.REPLACES_LABEL, None)
    labels.setdefault(nodes.ZONE_LABEL, zone_from_provider_id(status["providerID"]) or "")
    instance_type = _first_value(claim, nodes.INSTANCE_TYPE_LABEL)
    if instance_type:
        labels.setdefault(nodes.INSTANCE_TYPE_LABEL, instance_type)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": status["nodeName"],
            "labels": labels,
            "ownerReferences": [
                {
                    "apiVersion": "karpenter.sh/v1",
                    "kind": "NodeClaim",
                    "name": nodes.name_of(claim),
                    "uid": claim["metadata"].get("uid"),
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {"providerID": status["providerID"], "taints": claim["spec"].get("taints", [])},
        "status": {
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "lastTransitionTime": format_instant(now),
                }
            ],
        },
    }


def _first_value(claim: dict[str, Any], key: str) -> str | None:
    """The first value an ``In`` requirement allows for ``key`` (a launch picks one)."""
    for requirement in claim.get("spec", {}).get("requirements") or []:
        if requirement.get("key") == key and requirement.get("operator") == "In":
            values = requirement.get("values") or []
            return str(values[0]) if values else None
    return None
