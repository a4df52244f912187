"""What a cluster file says that would make the local simulation go wrong without a word:
checked once, at load, and said on stderr by every tool that reads a cluster.

A NodePool whose stored ``karpenter.sh/nodepool-hash`` differs from the hash of its template
(``NodePool.Hash()``, :mod:`lifeboat.karpenter.nodepool_hash`): Karpenter's drift check
(``areStaticFieldsDrifted``) compares each claim's hash with the pool's annotation, and the
claims Lifeboat (and the simulated Karpenter) create carry the template's hash, so every
replacement would be drifted and replaced again. On a live cluster Karpenter's nodepool.hash
controller keeps the annotation equal to the template's hash; a file where they differ was
exported mid-update or edited by hand.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from lifeboat.karpenter.nodepool_hash import (
    HASH_ANNOTATION,
    HASH_VERSION,
    HASH_VERSION_ANNOTATION,
    nodepool_hash,
)


def hash_mismatches(objects: Iterable[Mapping[str, Any]]) -> list[str]:
    """One warning per NodePool whose stored hash is not its template's (same version)."""
    warnings = []
    for obj in objects:
        if obj.get("kind") != "NodePool":
            continue
        metadata = obj.get("metadata") or {}
        annotations = metadata.get("annotations") or {}
        stored = annotations.get(HASH_ANNOTATION)
        if stored is None or annotations.get(HASH_VERSION_ANNOTATION) != HASH_VERSION:
            continue  # no hash, or another Karpenter's walk: nothing to compare
        try:
            computed = nodepool_hash(obj)
        except ValueError:
            continue  # a template this walk does not support: the stored hash is used
        if str(stored) != computed:
            name = metadata.get("name", "?")
            warnings.append(
                f"NodePool {name}: its {HASH_ANNOTATION} annotation {stored} differs "
                f"from its template's hash {computed}: Karpenter will see every node of pool "
                f"{name} as drifted (and every replacement too); export the cluster again once "
                "Karpenter has reconciled the pool"
            )
    return warnings
