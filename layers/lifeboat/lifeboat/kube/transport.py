"""One cluster's API server reached: a request with bounded, jittered retries
(:class:`RetryPolicy`, and a near deadline's window), lists read page by page, a GET that
answers None for a missing object. The typed verbs over it are by API area
(:mod:`lifeboat.kube.core_api`, :mod:`lifeboat.kube.karpenter_api`,
:mod:`lifeboat.kube.bookkeeping_api`), composed as :class:`lifeboat.kube.client.KubeApi`.

Requests go through the client's ``rest_client`` with the ``Configuration``'s bearer token
and plain JSON bodies (why, in :mod:`lifeboat.kube.client`).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError as TransportError

from lifeboat.kube.errors import KubeError, NotFound, error_from, no_answer_reason, status_error
from lifeboat.kube.rest import ClientLike, disable_transport_retries, user_agent
from lifeboat.model.objects import MutableObj
from lifeboat.model.patience import may_retry_within_window

JSON = "application/json"
JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"

# The one status that certainly means "not done": what a non-idempotent request may retry.
THROTTLED = 429
# What an outage looks like (no answer, throttled, gateway or server unavailable): worth
# retrying for as long as a near deadline allows. A 500 is the server's own error, often a
# persistent one (a failing admission webhook): it keeps the policy's attempts.
UNAVAILABLE_STATUSES = frozenset({0, 429, 502, 503, 504})


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


def segment(value: str) -> str:
    """``value`` as one segment of a URL path (a ``/`` in a name cannot reach another)."""
    return quote(value, safe="")


class KubeTransport:
    """Requests to one cluster's API server: retries, pages, a missing object as None."""

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
            raise error_from(error, method, path) from None
        except (OSError, ValueError, TransportError) as error:
            # urllib3 2 raises its own HTTPError subclasses (ReadTimeoutError, ProtocolError,
            # MaxRetryError, ...) for timeouts, refused and dropped connections, not OSError.
            why = f"no answer from {configuration.host}: {no_answer_reason(error)}"
            raise KubeError(0, why, method=method, path=path) from error
        if not 200 <= response.status <= 299:
            answered = getattr(response, "headers", None)  # urllib3's HTTPHeaderDict
            raise status_error(response.status, response.data, method, path, answered)
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
