"""What a failed Kubernetes request raises: :class:`KubeError` with the HTTP status (0: no
answer), :class:`NotFound` and :class:`Conflict` for the two statuses callers answer
themselves, read from the server's ``Status`` body and its Retry-After.

No I/O: :class:`lifeboat.kube.transport.KubeTransport` builds these from what it got.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from kubernetes.client.exceptions import ApiException

from lifeboat.errors import ClusterError

# Statuses worth another try: throttling and the server's own trouble. 409 is not here: a
# conflict means our view is stale, and only the caller knows how to re-read and re-decide.
RETRYABLE_STATUSES = frozenset({429, 500, 502, 503, 504})


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


def status_error(
    status: int,
    data: bytes | str | None,
    method: str,
    path: str,
    headers: Mapping[str, str] | None = None,
) -> KubeError:
    """The error for an answer outside 2xx: its class by status, the ``Status``'s message
    (cut to 300 characters) and the Retry-After the server sent."""
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


def error_from(error: ApiException, method: str, path: str) -> KubeError:
    """The error for an ``ApiException`` (what an ``ApiClient``'s REST layer raises)."""
    headers = error.headers if isinstance(error.headers, Mapping) else None
    return status_error(int(error.status or 0), error.body, method, path, headers)
