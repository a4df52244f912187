"""NodePool names for node groups whose names are not valid ones.

EKS accepts node group names of letters, digits, ``-`` and ``_`` (terraform-aws-eks makes
them from map keys, e.g. ``default_node_group``), Auto Scaling groups almost anything, and a
node group cannot be renamed. A NodePool's name is a DNS subdomain, and Karpenter writes it
as the value of the ``karpenter.sh/nodepool`` label on every node it launches, so it must
also be a label value: at most 63 characters. The mapping is deterministic (the same group
always gets the same pool): lower case, every other character ``-``, runs of ``-`` folded,
the ends trimmed; when that changed the name, a short hash of the original is appended so
that two groups that differ only there (``ng_1``, ``ng-1``, ``NG-1``) never share a pool.
The original is kept in the ``lifeboat.dev/node-group`` annotation; ``--name`` chooses.
"""

from __future__ import annotations

import hashlib
import re

# A DNS-1123 subdomain that is also a label value (at most 63 characters).
VALID = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?$")
_LABELS = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
MAX_LENGTH = 63
HASH_LENGTH = 6


def is_valid(name: str) -> bool:
    return bool(VALID.match(name)) and bool(_LABELS.match(name))


def pool_name(original: str) -> str:
    """The NodePool name for node group ``original``: itself when valid, else its mapping."""
    if is_valid(original):
        return original
    digest = hashlib.sha256(original.encode()).hexdigest()[:HASH_LENGTH]
    base = re.sub(r"[^a-z0-9]+", "-", original.lower()).strip("-")
    base = base[: MAX_LENGTH - HASH_LENGTH - 1].rstrip("-")
    return f"{base}-{digest}" if base else f"node-group-{digest}"
