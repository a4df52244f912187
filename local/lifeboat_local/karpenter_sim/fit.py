"""Whether a pod may run on a node, and the claim a NodePool's template yields: what the
kube-scheduler (:mod:`.scheduling`) and Karpenter's provisioner (:mod:`.provisioner`) share."""

from __future__ import annotations

from collections.abc import Mapping

from lifeboat.karpenter.replacement import replacement_nodeclaim
from lifeboat.kube.selectors import selector_matches
from lifeboat.marks import node_marks
from lifeboat.model.objects import MutableObj as Obj

from .state import pod_key, requests_of


def selects(pod: Obj, labels: Mapping[str, str]) -> bool:
    """The kube-scheduler's NodeAffinity filter: the pod's ``nodeSelector`` and its required
    node affinity (any of the ``nodeSelectorTerms``, each one's expressions all) match the
    node's labels (a launched claim's, before its Node joins: registration copies them)."""
    spec = pod.get("spec", {})
    wanted = spec.get("nodeSelector") or {}
    if any(labels.get(key) != value for key, value in wanted.items()):
        return False
    required = (
        ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
        or {}
    ).get("nodeSelectorTerms")
    if not required:
        return True
    return any(
        selector_matches({"matchExpressions": term.get("matchExpressions") or []}, labels)
        for term in required
    )


def template_claim(pool: Obj) -> Obj | None:
    """A claim as Karpenter's provisioner builds it from the pool's template (unnamed)."""
    built = replacement_nodeclaim(pool, {"metadata": {"name": "-"}}, "-", "-").claim
    if built is None:
        return None
    claim = dict(built)
    meta = dict(claim["metadata"])
    meta["labels"] = {k: v for k, v in meta["labels"].items() if k != node_marks.REPLACES_LABEL}
    meta["annotations"] = {
        k: v for k, v in meta["annotations"].items() if k != node_marks.NOTICE_ANNOTATION
    }
    claim["metadata"] = meta
    return claim


def arrival(pod: Obj) -> tuple[str, str]:
    """The kube-scheduler's queue order for pods of one priority: oldest first (FIFO), the
    name breaking ties within a second. Without it, pods named late in the alphabet would
    starve behind every newer pod."""
    return (str(pod["metadata"].get("creationTimestamp") or ""), pod_key(pod))


def queue_order(pod: Obj) -> tuple[float, float, str, str]:
    """Karpenter's scheduling queue (``byCPUAndMemoryDescending``): the largest cpu, then
    memory requests first; then the oldest; then a stable tie-break (Karpenter: the uid)."""
    cpu, memory = requests_of(pod)
    return (-cpu, -memory, *arrival(pod))
