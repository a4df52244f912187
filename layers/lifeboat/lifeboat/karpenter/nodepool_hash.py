"""The NodePool hash Karpenter stamps on every claim it creates (``karpenter.sh/nodepool-hash``).

Karpenter's ``NewNodeClaimTemplate`` annotates each claim with ``nodePool.Hash()`` and
``karpenter.sh/nodepool-hash-version: v3``; its drift controller (``areStaticFieldsDrifted``)
later compares that value with the NodePool's own annotation. A replacement carrying another
value is ``NodePoolDrifted`` at once and replaced again.

``NodePool.Hash()`` is ``hashstructure.Hash(spec.template, FormatV2, {SlicesAsSets,
IgnoreZeroValue, ZeroNil})`` (mitchellh/hashstructure v2), printed as a decimal uint64. This is
that walk, over the Go types of ``NodeClaimTemplate`` (karpenter.sh/v1), written from the
algorithm:

- FNV-1 (64-bit; multiply, then xor) over bytes; a string hashes its UTF-8 bytes, an integer
  its 8 little-endian bytes;
- a struct starts from the hash of its type name; each included field (exported, not
  ``hash:"ignore"``, not the zero value) mixes in ``ordered(name, value)`` and the running
  hash is then re-hashed ("finished") as 8 little-endian bytes;
- a map is the xor of ``ordered(key, value)`` over its entries, finished once; a slice (as a
  set) the xor of its elements, not finished; ``ordered(a, b)`` hashes a's then b's 8 bytes.

Zero values are skipped, so an absent map differs from an empty one (``labels: {}`` changes
the hash), and ``expireAfter: Never`` (a nil duration) is skipped. ``requirements`` are
``hash:"ignore"``. Unsupported input (a taint's ``timeAdded``, a duration outside the CRD
pattern) raises ``ValueError``: the caller then copies the NodePool's annotation instead.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterable, Mapping
from typing import Any, Final

HASH_ANNOTATION: Final = "karpenter.sh/nodepool-hash"
HASH_VERSION_ANNOTATION: Final = "karpenter.sh/nodepool-hash-version"
#: ``v1.NodePoolHashVersion``: the walk below is this version's.
HASH_VERSION: Final = "v3"
#: The CRD default of ``spec.template.spec.expireAfter``, which the API server stores when
#: the field is left out (and Karpenter hashes what is stored).
DEFAULT_EXPIRE_AFTER: Final = "720h"

_MASK: Final = (1 << 64) - 1
_FNV_OFFSET: Final = 0xCBF29CE484222325
_FNV_PRIME: Final = 0x100000001B3
_DURATION: Final = re.compile(r"([0-9]+)(h|m|s)")
_NANOS: Final = {"h": 3_600_000_000_000, "m": 60_000_000_000, "s": 1_000_000_000}


def _fnv1(data: bytes) -> int:
    value = _FNV_OFFSET
    for byte in data:
        value = (value * _FNV_PRIME) & _MASK
        value ^= byte
    return value


def _string(text: str) -> int:
    return _fnv1(text.encode())


def _int64(number: int) -> int:
    return _fnv1(struct.pack("<q", number))


def _ordered(first: int, second: int) -> int:
    return _fnv1(struct.pack("<QQ", first, second))


def _finished(value: int) -> int:
    return _fnv1(struct.pack("<Q", value))


def _struct(type_name: str, fields: Iterable[tuple[str, int | None]]) -> int:
    """A struct: None marks a skipped field (zero value, or ``hash:"ignore"``)."""
    value = _string(type_name)
    for name, field_hash in fields:
        if field_hash is None:
            continue
        value = _finished(value ^ _ordered(_string(name), field_hash))
    return value


def _string_map(mapping: Mapping[str, Any] | None) -> int | None:
    if mapping is None:
        return None
    value = 0
    for key, item in mapping.items():
        value ^= _ordered(_string(str(key)), _string(str(item)))
    return _finished(value)


def _set(items: Iterable[int] | None) -> int | None:
    if items is None:
        return None
    value = 0
    for item in items:
        value ^= item
    return value


def _text(mapping: Mapping[str, Any], key: str) -> int | None:
    value = mapping.get(key)
    return _string(str(value)) if value else None


def _nanoseconds(text: str) -> int:
    """A duration as the CRD patterns allow it (``([0-9]+(s|m|h))+``), in nanoseconds."""
    if not re.fullmatch(r"([0-9]+(h|m|s))+", text):
        raise ValueError(f"duration {text!r}: not of the form the CRD allows")
    return sum(int(amount) * _NANOS[unit] for amount, unit in _DURATION.findall(text))


def _taint(taint: Mapping[str, Any]) -> int:
    if taint.get("timeAdded"):
        raise ValueError("a taint with timeAdded is not supported")
    return _struct(
        "Taint",
        [
            ("Key", _text(taint, "key")),
            ("Value", _text(taint, "value")),
            ("Effect", _text(taint, "effect")),
        ],
    )


def _taints(items: Any) -> int | None:
    if items is None:
        return None
    return _set(_taint(t) for t in items)


def nodepool_hash(nodepool: Mapping[str, Any]) -> str:
    """``NodePool.Hash()`` of a karpenter.sh/v1 NodePool as the API server stores it."""
    template = (nodepool.get("spec") or {}).get("template") or {}
    meta = template.get("metadata")
    spec = template.get("spec") or {}
    meta_hash = None
    if meta is not None and (meta.get("labels") is not None or meta.get("annotations") is not None):
        meta_hash = _struct(
            "ObjectMeta",
            [
                ("Labels", _string_map(meta.get("labels"))),
                ("Annotations", _string_map(meta.get("annotations"))),
            ],
        )
    reference = spec.get("nodeClassRef")
    reference_hash = None
    if reference is not None:
        reference_hash = _struct(
            "NodeClassReference",
            [
                ("Kind", _text(reference, "kind")),
                ("Name", _text(reference, "name")),
                ("Group", _text(reference, "group")),
            ],
        )
    grace = spec.get("terminationGracePeriod")
    grace_hash = None
    if grace is not None:  # *metav1.Duration: a struct whose Duration is skipped when zero
        nanos = _nanoseconds(str(grace))
        grace_hash = _struct("Duration", [("Duration", _int64(nanos) if nanos else None)])
    expire = spec.get("expireAfter", DEFAULT_EXPIRE_AFTER)
    expire_hash = None
    if expire is not None and expire != "Never":  # "Never" is a nil duration: the zero value
        expire_hash = _struct("NillableDuration", [("Duration", _int64(_nanoseconds(str(expire))))])
    spec_hash = _struct(
        "NodeClaimTemplateSpec",
        [
            ("Taints", _taints(spec.get("taints"))),
            ("StartupTaints", _taints(spec.get("startupTaints"))),
            ("NodeClassRef", reference_hash),
            ("TerminationGracePeriod", grace_hash),
            ("ExpireAfter", expire_hash),
        ],
    )
    return str(_struct("NodeClaimTemplate", [("ObjectMeta", meta_hash), ("Spec", spec_hash)]))


def hash_annotations(nodepool: Mapping[str, Any]) -> dict[str, str]:
    """The hash annotations a claim of this pool gets, as ``NewNodeClaimTemplate`` sets them.

    Computed, as Karpenter computes them from the pool it reads (its drift check compares with
    the pool's annotation, which Karpenter's nodepool.hash controller keeps equal to it). If
    the pool carries another hash version (a later Karpenter), or the template holds what this
    walk does not support, the pool's own annotations are copied; if it has none either, none
    are set (the claim is then never NodePool-drifted).
    """
    stored = (nodepool.get("metadata") or {}).get("annotations") or {}
    copied = {k: str(stored[k]) for k in (HASH_ANNOTATION, HASH_VERSION_ANNOTATION) if k in stored}
    if stored.get(HASH_VERSION_ANNOTATION, HASH_VERSION) != HASH_VERSION:
        return copied
    try:
        return {HASH_ANNOTATION: nodepool_hash(nodepool), HASH_VERSION_ANNOTATION: HASH_VERSION}
    except ValueError:
        return copied
