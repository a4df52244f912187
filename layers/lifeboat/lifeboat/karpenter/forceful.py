"""Forceful termination of an impaired instance's NodeClaim, as Karpenter >= 1.13 does it.

The AWS provider's interruption handler (``pkg/controllers/interruption/utils.go``,
``handleNodeClaim``, #9198) maps a failed instance or system status check to
``ForcefulTermination``: ``annotateTerminationTimestamp`` sets
``karpenter.sh/nodeclaim-termination-timestamp`` to the current time (``time.RFC3339``), unless
the claim already carries one, then the claim is deleted. Core's termination controller
(``nodeTerminationTime``, kubernetes-sigs/karpenter since v1.0.0, #916) reads the annotation as
the end of the node's grace period: past it, the drain deletes pods instead of evicting them
(no PodDisruptionBudget, no do-not-disrupt holds them) and the wait for volume detachment is
skipped. A gentle drain of a broken instance "can get stuck indefinitely on blocking PDBs or
do-not-disrupt pods" (#9173).

Karpenter's own lifecycle controller writes the same annotation on deletion when the claim has
a ``terminationGracePeriod`` (deletion time + period), only if absent: so it is set before the
delete, as the provider does.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

from lifeboat.kube import nodes
from lifeboat.kube.objects import Obj
from lifeboat.model.instants import format_instant

# v1.NodeClaimTerminationTimestampAnnotationKey (kubernetes-sigs/karpenter pkg/apis/v1/labels.go).
TERMINATION_TIMESTAMP: Final = "karpenter.sh/nodeclaim-termination-timestamp"

Operation = dict[str, Any]


def termination_timestamp(now: datetime) -> str:
    """``clk.Now().Format(time.RFC3339)`` in UTC: ``2026-12-01T14:05:00Z``."""
    return format_instant(now)


def annotate_operations(claim: Obj, stamp: str) -> list[Operation]:
    """The JSON patch that sets the termination timestamp ``stamp`` on ``claim`` ([] when it carries
    one: Karpenter never moves an earlier deadline). The claim's uid and resourceVersion
    are tested, so a claim changed since it was read (or a namesake) fails the patch (422)
    and is read again rather than overwritten."""
    metadata = claim.get("metadata") or {}
    annotations = metadata.get("annotations")
    if annotations is not None and TERMINATION_TIMESTAMP in annotations:
        return []
    version = metadata.get("resourceVersion")
    guards: list[Operation] = [
        {"op": "test", "path": "/metadata/uid", "value": metadata.get("uid")},
        {"op": "test", "path": "/metadata/resourceVersion", "value": version},
    ]
    if annotations is None:
        return [
            *guards,
            {"op": "add", "path": "/metadata/annotations", "value": {TERMINATION_TIMESTAMP: stamp}},
        ]
    pointer = "/metadata/annotations/" + TERMINATION_TIMESTAMP.replace("/", "~1")
    return [*guards, {"op": "add", "path": pointer, "value": stamp}]


def forced_at(claim: Obj) -> str | None:
    """The termination timestamp the claim carries, if any."""
    value = nodes.annotations_of(claim).get(TERMINATION_TIMESTAMP)
    return str(value) if value is not None else None
