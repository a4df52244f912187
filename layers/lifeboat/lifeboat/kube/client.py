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

Every verb used here is listed in ``deploy/rbac.yaml``; the RBAC test keeps the two honest.
"""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any
from urllib.parse import quote, urlencode

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError as TransportError

from lifeboat.errors import ClusterError
from lifeboat.kube.rest import ClientLike, disable_transport_retries, user_agent
from lifeboat.model.objects import MutableObj
from lifeboat.model.patience import may_retry_within_window
from lifeboat.model.patience import retrying_for as retrying_for  # where callers found it

KARPENTER = "/apis/karpenter.sh/v1"
JSON = "application/json"
JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"

# Statuses worth another try: throttling and the server's own trouble. 409 is not here: a
# conflict means our view is stale, and only the caller knows how to re-read and re-decide.
RETRYABLE_STATUSES = frozenset({429, 500, 502, 503, 504})
# The one status that certainly means "not done": what a non-idempotent request may retry.
THROTTLED = 429
# What an outage looks like (no answer, throttled, gateway or server unavailable): worth
# retrying for as long as a near deadline allows. A 500 is the server's own error, often a
# persistent one (a failing admission webhook): it keeps the policy's attempts.
UNAVAILABLE_STATUSES = frozenset({0, 429, 502, 503, 504})


class KubeError(ClusterError):
    """A Kubernetes request failed; ``status`` is the HTTP status (0: no answer)."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        method: str = "",
        path: str = "",
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{method} {path}: {status} {message}".strip())
        self.status = status
        self.message = message
        # Seconds the server asked to wait before trying again (Retry-After), if it said.
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        return self.status == 0 or self.status in RETRYABLE_STATUSES


# urllib3 prefixes a connection's error with the connection object ("<...HTTPConnection
# object at 0x7f...>: Failed to establish a new connection: [Errno 111] Connection refused").
_OBJECT_PREFIX = re.compile(r"^<[^>]*>: ")


def no_answer_reason(error: BaseException) -> str:
    """Why a request got no answer, for a person: the innermost reason urllib3 kept (a
    refused connection, a name that does not resolve, a timeout), with its type."""
    inner: BaseException = error
    while isinstance(getattr(inner, "reason", None), BaseException):
        inner = inner.reason  # type: ignore[attr-defined]
    text = _OBJECT_PREFIX.sub("", str(inner)).strip()
    return f"{type(inner).__name__}: {text}"[:300] if text else type(inner).__name__


class Conflict(KubeError):
    """409: the object changed since it was read (or already exists)."""


class NotFound(KubeError):
    """404: the object does not exist."""


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded retries with full jitter (AWS Architecture Blog, "Exponential Backoff And
    Jitter"): many Lambdas retrying in step would otherwise hammer a throttled API server.

    ``attempts`` bounds the tries of a request, unless the message being handled has a near
    deadline (:func:`retrying_for`): then an outage (no answer, 429, 502, 503, 504) is
    retried, with the same jittered backoff, until the window the deadline leaves is used
    up."""

    attempts: int = 4
    base_delay: float = 0.1
    max_delay: float = 2.0
    request_timeout: float = 10.0

    # The longest Retry-After honoured outside a deadline's window; past it, the request
    # fails and the message's own redelivery takes over.
    max_retry_after: float = 10.0

    def delay(self, attempt: int, rng: random.Random, retry_after: float | None = None) -> float:
        """The wait before the next try: jittered backoff, and never less than the server's
        Retry-After (API Priority and Fairness sends one with its 429s; client-go's
        ``checkWait`` waits that long too)."""
        # The exponent is capped: a deadline window may allow many more tries than attempts.
        backoff = rng.uniform(0, min(self.max_delay, self.base_delay * 2 ** min(attempt, 30)))
        return backoff if retry_after is None else max(backoff, retry_after)


class Eviction(StrEnum):
    """What the Eviction API said about one pod."""

    EVICTED = "evicted"
    BLOCKED = "blocked"  # 429: a PodDisruptionBudget does not allow it now
    GONE = "gone"  # 404: the pod is already gone


class KubeApi:
    """Thin typed verbs over one cluster's API server."""

    def __init__(
        self,
        api_client: ClientLike,
        retry: RetryPolicy | None = None,
        *,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self._client = api_client
        self._user_agent = user_agent()
        disable_transport_retries(api_client)
        self._retry = retry or RetryPolicy()
        self._sleep = sleep
        # SystemRandom by default: it keeps no state, so environments restored from one
        # Lambda SnapStart snapshot do not all draw the same "random" backoff (and retry in
        # step); tests pass a seeded Random.
        self._rng = rng or random.SystemRandom()

    # -- transport -------------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, str]] = (),
        body: Any = None,
        content_type: str = JSON,
        idempotent: bool = True,
    ) -> MutableObj:
        """One request with bounded retries of transient failures; returns the JSON body.

        A non-``idempotent`` request (a create with ``generateName``) is retried only after a
        429: after a timeout or a 5xx the server may have done it, and doing it again would
        make a second object. The caller's own redelivery path finds the first one instead.
        """
        attempt = 0
        while True:
            try:
                return self._request_once(method, path, query, body, content_type)
            except KubeError as error:
                attempt += 1
                ambiguous = not idempotent and error.status != THROTTLED
                if not error.retryable or ambiguous:
                    raise
                delay = self._retry.delay(attempt, self._rng, error.retry_after)
                windowed = error.status in UNAVAILABLE_STATUSES and may_retry_within_window(delay)
                too_long = delay > self._retry.max_retry_after
                if (attempt >= self._retry.attempts or too_long) and not windowed:
                    raise
                self._sleep(delay)

    def _request_once(
        self,
        method: str,
        path: str,
        query: Sequence[tuple[str, str]],
        body: Any,
        content_type: str,
    ) -> MutableObj:
        configuration = self._client.configuration
        headers = {"Accept": JSON, "User-Agent": self._user_agent}
        # An ApiClient's default headers (set by whoever made it) go with each request, as
        # ApiClient.param_serialize sends them; a RestClient has none.
        headers.update(getattr(self._client, "default_headers", None) or {})
        if body is not None:
            headers["Content-Type"] = content_type
        # auth_settings() runs the configuration's refresh hook: a renewed token if due.
        bearer = configuration.auth_settings().get("BearerToken")
        if bearer and bearer["value"]:
            headers[bearer["key"]] = bearer["value"]
        url = configuration.host + path
        if query:
            url += "?" + urlencode(list(query), safe="/", quote_via=quote)  # as ApiClient
        try:
            timeout = self._retry.request_timeout
            response = self._client.rest_client.request(  # type: ignore[no-untyped-call]
                method, url, headers=headers, body=body, _request_timeout=timeout
            )
            response.read()
        except ApiException as error:
            raise _error_from(error, method, path) from None
        except (OSError, ValueError, TransportError) as error:
            # urllib3 2 raises its own HTTPError subclasses (ReadTimeoutError, ProtocolError,
            # MaxRetryError, ...) for timeouts, refused and dropped connections, not OSError.
            why = f"no answer from {configuration.host}: {no_answer_reason(error)}"
            raise KubeError(0, why, method=method, path=path) from error
        if not 200 <= response.status <= 299:
            answered = getattr(response, "headers", None)  # urllib3's HTTPHeaderDict
            raise _status_error(response.status, response.data, method, path, answered)
        if not response.data:
            return {}
        decoded: MutableObj = json.loads(response.data)
        return decoded

    def _list(self, path: str, query: Sequence[tuple[str, str]]) -> Iterator[MutableObj]:
        """All items of a list, page by page (limit/continue), so no response is unbounded."""
        token = ""
        while True:
            page_query = [*query, ("limit", "500")]
            if token:
                page_query.append(("continue", token))
            page = self.request("GET", path, query=page_query)
            yield from page.get("items") or []
            token = (page.get("metadata") or {}).get("continue") or ""
            if not token:
                return

    def list_all(self, path: str) -> list[MutableObj]:
        """Every object at a list path (``/api/v1/pods``), page by page. For the operator
        tools (``lifeboat audit``); the Lambda reads a whole list only with :meth:`each`."""
        return list(self._list(path, []))

    def each(self, path: str) -> Iterator[MutableObj]:
        """Every object at a list path as its page comes: one page (500) in memory at a time,
        for a caller that keeps only what it draws from each (``lifeboat.flow.lookup``'s
        index of a cluster's NodeClaims, in the Lambda's 512 MB). An error mid-way (an
        expired continue token: 410) is raised after the objects already given."""
        return self._list(path, [])

    def _get_or_none(self, path: str) -> MutableObj | None:
        try:
            return self.request("GET", path)
        except NotFound:
            return None

    # -- nodes -----------------------------------------------------------------------------

    def get_node(self, name: str) -> MutableObj | None:
        return self._get_or_none(f"/api/v1/nodes/{_seg(name)}")

    def list_nodes(self, label_selector: str) -> list[MutableObj]:
        return list(self._list("/api/v1/nodes", [("labelSelector", label_selector)]))

    def patch_node(self, name: str, operations: list[MutableObj]) -> MutableObj:
        """RFC 6902 JSON patch: its ``test`` operations make a stale read fail with 409."""
        return self.request(
            "PATCH", f"/api/v1/nodes/{_seg(name)}", body=operations, content_type=JSON_PATCH
        )

    # -- pods ------------------------------------------------------------------------------

    def list_pods_on_node(self, node_name: str) -> list[MutableObj]:
        selector = f"spec.nodeName={node_name}"
        return list(self._list("/api/v1/pods", [("fieldSelector", selector)]))

    def evict_pod(self, namespace: str, name: str) -> Eviction:
        body = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
        }
        path = f"/api/v1/namespaces/{_seg(namespace)}/pods/{_seg(name)}/eviction"
        try:
            # No retry here on 429: a PDB refusal is an answer, handled by the drain loop.
            self._request_once("POST", path, (), body, JSON)
        except NotFound:
            return Eviction.GONE
        except KubeError as error:
            if error.status == 429:
                return Eviction.BLOCKED
            raise
        return Eviction.EVICTED

    def list_pods(self, namespace: str, label_selector: str) -> list[MutableObj]:
        """Pods of one namespace by label: a workload's pods, never the whole cluster's."""
        path = f"/api/v1/namespaces/{_seg(namespace)}/pods"
        return list(self._list(path, [("labelSelector", label_selector)]))

    def list_pdbs(self, namespace: str) -> list[MutableObj]:
        path = f"/apis/policy/v1/namespaces/{_seg(namespace)}/poddisruptionbudgets"
        return list(self._list(path, []))

    # -- Karpenter -------------------------------------------------------------------------

    def get_nodepool(self, name: str) -> MutableObj | None:
        return self._get_or_none(f"{KARPENTER}/nodepools/{_seg(name)}")

    def list_nodepools(self) -> list[MutableObj]:
        return list(self._list(f"{KARPENTER}/nodepools", []))

    def get_nodeclaim(self, name: str) -> MutableObj | None:
        return self._get_or_none(f"{KARPENTER}/nodeclaims/{_seg(name)}")

    def list_nodeclaims(self, label_selector: str) -> list[MutableObj]:
        return list(self._list(f"{KARPENTER}/nodeclaims", [("labelSelector", label_selector)]))

    def create_nodeclaim(self, body: MutableObj) -> MutableObj:
        """Create a claim. With ``generateName`` every accepted POST makes a new claim, so a
        maybe-done one is never resent; a named claim is (a repeat is 409 AlreadyExists)."""
        named = bool(body.get("metadata", {}).get("name"))
        return self.request("POST", f"{KARPENTER}/nodeclaims", body=body, idempotent=named)

    def patch_nodeclaim(self, name: str, operations: list[MutableObj]) -> MutableObj:
        """RFC 6902 JSON patch of a claim (the when-ready hand-over's annotations)."""
        path = f"{KARPENTER}/nodeclaims/{_seg(name)}"
        return self.request("PATCH", path, body=operations, content_type=JSON_PATCH)

    def delete_nodeclaim(self, name: str, uid: str | None) -> bool:
        """Delete (Karpenter then drains and terminates). False if it was already gone."""
        body: MutableObj = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if uid:
            # Never delete a namesake created after we looked.
            body["preconditions"] = {"uid": uid}
        try:
            self.request("DELETE", f"{KARPENTER}/nodeclaims/{_seg(name)}", body=body)
        except NotFound:
            return False
        return True

    # -- events and leases -----------------------------------------------------------------

    def create_event(self, namespace: str, body: MutableObj) -> MutableObj:
        return self.request("POST", f"/api/v1/namespaces/{_seg(namespace)}/events", body=body)

    def get_lease(self, namespace: str, name: str) -> MutableObj | None:
        return self._get_or_none(_lease_path(namespace, name))

    def create_lease(self, namespace: str, body: MutableObj) -> MutableObj:
        path = f"/apis/coordination.k8s.io/v1/namespaces/{_seg(namespace)}/leases"
        return self.request("POST", path, body=body)

    def update_lease(self, namespace: str, body: MutableObj) -> MutableObj:
        """PUT with the read ``resourceVersion``: 409 when another worker got there first."""
        name = body["metadata"]["name"]
        return self.request("PUT", _lease_path(namespace, name), body=body)

    # -- config maps (a rotation's state) -------------------------------------------------

    def get_configmap(self, namespace: str, name: str) -> MutableObj | None:
        return self._get_or_none(_configmap_path(namespace, name))

    def list_configmaps(self, namespace: str, label_selector: str) -> list[MutableObj]:
        """For the operator tools (``lifeboat status``); the Lambda reads them by name."""
        path = f"/api/v1/namespaces/{_seg(namespace)}/configmaps"
        return list(self._list(path, [("labelSelector", label_selector)]))

    def create_configmap(self, namespace: str, body: MutableObj) -> MutableObj:
        """409 (:class:`Conflict`) when one of that name exists already."""
        path = f"/api/v1/namespaces/{_seg(namespace)}/configmaps"
        return self.request("POST", path, body=body)

    def update_configmap(self, namespace: str, body: MutableObj) -> MutableObj:
        """PUT with the read ``resourceVersion``: 409 when another writer got there first."""
        name = body["metadata"]["name"]
        return self.request("PUT", _configmap_path(namespace, name), body=body)


def _lease_path(namespace: str, name: str) -> str:
    return f"/apis/coordination.k8s.io/v1/namespaces/{_seg(namespace)}/leases/{_seg(name)}"


def _configmap_path(namespace: str, name: str) -> str:
    return f"/api/v1/namespaces/{_seg(namespace)}/configmaps/{_seg(name)}"


def _seg(value: str) -> str:
    return quote(value, safe="")


def _status_error(
    status: int,
    data: bytes | str | None,
    method: str,
    path: str,
    headers: Mapping[str, str] | None = None,
) -> KubeError:
    decoded: Any = None
    if data:
        try:
            decoded = json.loads(data)
        except ValueError:
            decoded = None
    status_body = decoded if isinstance(decoded, Mapping) else {}
    message = str(status_body.get("message", ""))
    cls = {404: NotFound, 409: Conflict}.get(status, KubeError)
    retry_after = _retry_after(headers, status_body)
    return cls(status, message[:300], method=method, path=path, retry_after=retry_after)


def _retry_after(headers: Mapping[str, str] | None, status: Mapping[str, Any]) -> float | None:
    """The Retry-After the server sent, in seconds: the header (an integer, as the API server
    writes it; an HTTP date is not honoured, the backoff applies), else the Status's
    ``details.retryAfterSeconds``. None when neither says, or says nonsense."""
    raw: Any = None
    if headers is not None:
        raw = headers.get("Retry-After") or headers.get("retry-after")
    if raw is None:
        details = status.get("details")
        raw = details.get("retryAfterSeconds") if isinstance(details, Mapping) else None
    try:
        seconds = float(raw) if raw is not None else None
    except (TypeError, ValueError):
        return None
    if seconds is None or not 0 <= seconds < 3600:  # also refuses nan and inf
        return None
    return seconds


def _error_from(error: ApiException, method: str, path: str) -> KubeError:
    headers = error.headers if isinstance(error.headers, Mapping) else None
    return _status_error(int(error.status or 0), error.body, method, path, headers)
