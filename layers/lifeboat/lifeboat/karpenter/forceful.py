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

A stamp already there is kept only when it is in effect: an RFC 3339 time not after now. One in
the future (a grace period's deadline days away, or a forged ``2099-...``) would keep the gentle
drain of a broken instance going until then; one that does not parse stops core's termination
controller for good (``nodeTerminationTime`` returns "parsing annotation" and the node is never
deleted). Both are replaced by now, as core's node repair does for an unhealthy node
(``annotateTerminationGracePeriod``, pkg/controllers/node/health/controller.go: it keeps only a
parsable past time). The provider's ``annotateTerminationTimestamp`` keeps any value; for an
impaired instance Lifeboat follows core's repair here, which forces it now either way.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Final

from lifeboat.kube import nodes
from lifeboat.model.instants import format_instant
from lifeboat.model.objects import Obj

# v1.NodeClaimTerminationTimestampAnnotationKey (kubernetes-sigs/karpenter pkg/apis/v1/labels.go).
TERMINATION_TIMESTAMP: Final = "karpenter.sh/nodeclaim-termination-timestamp"

Operation = dict[str, Any]

# Go's ``time.Parse(time.RFC3339, ...)``: a date, ``T``, a time with optional fraction, and ``Z``
# or a numeric offset; nothing else (no date alone, no naive time, no spaces).
_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})")
# A forged value is reported shortened: an annotation may hold up to 256 KiB.
SHOWN: Final = 64


def parse_stamp(value: str) -> datetime | None:
    """The instant of an RFC 3339 stamp as Go parses it (None when Go's parse fails)."""
    if not _RFC3339.fullmatch(value):
        return None
    head, _, tail = value.partition(".")
    if tail:  # Python reads at most microseconds
        digits = re.match(r"\d+", tail)
        zone = tail[digits.end() :] if digits else tail
        value = f"{head}.{(digits.group() if digits else '')[:6].ljust(6, '0')}{zone}"
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def in_effect(stamp: object, now: datetime) -> bool:
    """Whether core's termination controller forces the node now by ``stamp``: it parses and
    is not after ``now`` (``annotateTerminationGracePeriod`` keeps exactly those)."""
    if not isinstance(stamp, str):
        return False
    moment = parse_stamp(stamp)
    return moment is not None and moment <= now


def shown(stamp: str) -> str:
    """``stamp`` as a report may carry it (a forged one can be huge)."""
    return stamp if len(stamp) <= SHOWN else stamp[:SHOWN] + "..."


def termination_timestamp(now: datetime) -> str:
    """``clk.Now().Format(time.RFC3339)`` in UTC: ``2026-12-01T14:05:00Z``."""
    return format_instant(now)


def annotate_operations(claim: Obj, stamp: str, now: datetime) -> list[Operation]:
    """The JSON patch that sets the termination timestamp ``stamp`` on ``claim`` ([] when it carries
    one in effect at ``now``: never moved later; a future or unparsable one is replaced,
    :func:`in_effect`). The claim's uid and resourceVersion
    are tested, so a claim changed since it was read (or a namesake) fails the patch (422)
    and is read again rather than overwritten."""
    metadata = claim.get("metadata") or {}
    annotations = metadata.get("annotations")
    if annotations is not None and in_effect(annotations.get(TERMINATION_TIMESTAMP), now):
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
    # "add" on a member that exists replaces it (RFC 6902 4.1).
    return [*guards, {"op": "add", "path": pointer, "value": stamp}]


def forced_at(claim: Obj) -> str | None:
    """The termination timestamp the claim carries, if any."""
    value = nodes.annotations_of(claim).get(TERMINATION_TIMESTAMP)
    return str(value) if value is not None else None
