"""Typos in a cluster file, said with the name that was most likely meant.

A misspelled kind (``NodeCliam``) is skipped like any kind Lifeboat does not read, and a
misspelled field (``providerId``) is ignored like any field it does not read: both silently
change the answer (a NodeClaim never loaded, an instance never found). So a name that is not
one Lifeboat reads but is close to one (``difflib``, or the same but for case) is a warning
naming the nearest valid name; ``--strict`` makes any warning a non-zero exit (the CI use).
Only the fields the tools read are checked: an unknown field far from all of them is just a
field of a newer API.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeGuard

from kubemu.clusterfile import SUPPORTED_KINDS

# Close enough to be a typo of a known name (difflib's ratio).
CUTOFF = 0.8

_METADATA = (
    "name",
    "namespace",
    "labels",
    "annotations",
    "ownerReferences",
    "uid",
    "finalizers",
    "deletionTimestamp",
    "creationTimestamp",
    "resourceVersion",
    "generateName",
)
# Kind -> section -> the fields the tools read there.
_FIELDS: dict[str, dict[str, tuple[str, ...]]] = {
    "Node": {"spec": ("providerID", "unschedulable", "taints"), "status": ("conditions",)},
    "NodeClaim": {
        "spec": ("nodeClassRef", "requirements", "taints", "expireAfter"),
        "status": ("providerID", "nodeName", "conditions", "capacity", "allocatable"),
    },
    "Pod": {"spec": ("nodeName", "containers", "tolerations"), "status": ("phase", "conditions")},
    "PodDisruptionBudget": {"spec": ("selector", "minAvailable", "maxUnavailable")},
    "NodePool": {"spec": ("template", "disruption", "limits", "weight")},
}


def nearest(name: str, known: Sequence[str]) -> str | None:
    """The known name ``name`` is a typo of (None: it is one, or close to none)."""
    if name in known:
        return None
    return _nearest(name, tuple(known))


@functools.lru_cache(maxsize=4096)
def _nearest(name: str, known: tuple[str, ...]) -> str | None:
    """``nearest``, once per (name, known names): a 5,000-node file asks about the same few
    unread fields (``status.allocatable``, ...) of every object, and difflib's ratio, asked
    25,000 times, was a fifth of replaying the file."""
    for candidate in known:
        if candidate.lower() == name.lower():
            return candidate
    found = difflib.get_close_matches(name, known, n=1, cutoff=CUTOFF)
    return found[0] if found else None


def kind_typo(kind: str) -> str | None:
    """The kind Lifeboat reads that ``kind`` (one it does not) is most likely a typo of."""
    return nearest(kind, SUPPORTED_KINDS)


def field_typos(objects: Iterable[Mapping[str, Any]]) -> list[str]:
    """One line per field of a read section whose name is a typo of a read field."""
    found = []
    for obj in objects:
        kind = str(obj.get("kind"))
        for section, known, names in _sections(kind):
            fields = obj.get(section)
            if not _is_mapping(fields) or fields.keys() <= known:
                continue  # every field one Lifeboat reads: most sections of most objects
            for field in fields:
                meant = None if field in known else nearest(str(field), names)
                if meant is not None:
                    metadata = obj.get("metadata")
                    named = metadata.get("name", "?") if isinstance(metadata, Mapping) else "?"
                    found.append(
                        f"{kind} {named}: {section}.{field} is not a field Lifeboat reads; "
                        f"did you mean {section}.{meant}?"
                    )
    return found


def _is_mapping(value: Any) -> TypeGuard[Mapping[Any, Any]]:
    """isinstance(value, Mapping), a dict first: the ABC's check costs more than the rest of
    a section's, asked 75,000 times for a 5,000-node file."""
    return type(value) is dict or isinstance(value, Mapping)


@functools.lru_cache(maxsize=64)
def _sections(kind: str) -> tuple[tuple[str, frozenset[str], tuple[str, ...]], ...]:
    """The sections of ``kind`` whose fields are checked, each with the names read there, as
    a set (a 5,000-node file asks of 25,000 objects whether all their fields are known) and
    in their order (for ``nearest``)."""
    sections = {"metadata": _METADATA, **_FIELDS.get(kind, {})}
    return tuple((section, frozenset(known), known) for section, known in sections.items())
