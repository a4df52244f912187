"""The shape Lifeboat gives Kubernetes objects: their JSON, as the API server sends it.

Lifeboat reads a handful of fields from each object, so it keeps them as plain JSON rather
than the client's generated models (which know nothing of Karpenter's custom resources).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# An object as read: Lifeboat never changes what it was given.
Obj = Mapping[str, Any]
# An object (or request body) Lifeboat builds or the client returns to it.
MutableObj = dict[str, Any]
