"""The Kubernetes calls Lifeboat makes, on the official client's REST layer.

Requests go through ``kubernetes.client.rest.RESTClientObject`` (the client's TLS, proxy and
connection pool) with the ``Configuration``'s bearer token (refreshed by its hook before each
request) and plain JSON bodies. Lifeboat reads a handful of fields from each object, so
deserialising into the generated pydantic models would only cost time and hide fields the
models do not know (Karpenter's custom resources have none anyway). For the same reason the
Lambda does not load ``kubernetes.client.api_client`` at all
(:class:`lifeboat.kube.rest.RestClient`): that module imports pydantic and builds a generic
pydantic model at import (tens of milliseconds of cold start) for deserialisation KubeApi
does not use. An ``ApiClient`` (replay's kubeconfig, the emulator, the tests) is accepted as
well: it has the same two attributes.

:class:`KubeApi` is the one object callers hold, made of one part per responsibility: the
transport (:mod:`lifeboat.kube.transport`: retries, pages, the retry window; its errors in
:mod:`lifeboat.kube.errors`) and the typed verbs by API area, each over that transport
(:mod:`lifeboat.kube.core_api`: nodes, pods, evictions, PDBs;
:mod:`lifeboat.kube.karpenter_api`: NodePools, NodeClaims;
:mod:`lifeboat.kube.bookkeeping_api`: Events, Leases, ConfigMaps). The names callers import
from here are re-exported from those modules.

Every verb used here is listed in ``deploy/rbac.yaml``; the RBAC test keeps the two honest.
"""

from __future__ import annotations

from lifeboat.kube.bookkeeping_api import BookkeepingApi
from lifeboat.kube.core_api import CoreApi, Eviction
from lifeboat.kube.errors import RETRYABLE_STATUSES, Conflict, KubeError, NotFound, no_answer_reason
from lifeboat.kube.karpenter_api import KARPENTER, KarpenterApi
from lifeboat.kube.transport import (
    JSON,
    JSON_PATCH,
    MERGE_PATCH,
    THROTTLED,
    UNAVAILABLE_STATUSES,
    RetryPolicy,
)
from lifeboat.model.patience import retrying_for  # where callers found it

__all__ = [
    "JSON",
    "JSON_PATCH",
    "KARPENTER",
    "MERGE_PATCH",
    "RETRYABLE_STATUSES",
    "THROTTLED",
    "UNAVAILABLE_STATUSES",
    "Conflict",
    "Eviction",
    "KubeApi",
    "KubeError",
    "NotFound",
    "RetryPolicy",
    "no_answer_reason",
    "retrying_for",
]


class KubeApi(CoreApi, KarpenterApi, BookkeepingApi):
    """Thin typed verbs over one cluster's API server: the verbs of each API area over one
    shared transport (made with ``KubeApi(api_client, retry, sleep=..., rng=...)``)."""
