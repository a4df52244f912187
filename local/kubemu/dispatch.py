"""One request through the emulator's pipeline: count, delay, fault, authorise, serve.

Independent of HTTP so that the handler only translates bytes.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .errors import ApiError, bad_request, success_status
from .eviction import evict
from .faults import FaultInjector, injected_error
from .operations import Operations
from .rbac import Authorizer, Request
from .resources import Obj
from .routing import Route, parse_route
from .store import Store

VERSION_INFO: Obj = {
    "major": "1",
    "minor": "31",
    "gitVersion": "v1.31.0-kubemu",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2024-08-13T00:00:00Z",
    "goVersion": "go1.22.5",
    "compiler": "gc",
    "platform": "linux/amd64",
}

LogEntry = tuple[str, str, str, str, str]  # (verb, group, resource, namespace, name)
# When a request arrived and when its answer was ready (``time.perf_counter()``), aligned
# with the log; the answer time is None for a request that failed or is still being served.
LogTimes = tuple[float, float | None]


@dataclass
class Response:
    code: int
    body: Obj
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Drop:
    """Answer nothing: hang for `delay` seconds, then close the connection."""

    delay: float


@dataclass
class RequestStats:
    requests: Counter[str] = field(default_factory=Counter)
    by_resource: Counter[tuple[str, str]] = field(default_factory=Counter)
    log: list[LogEntry] = field(default_factory=list)
    seen_permissions: set[tuple[str, str, str]] = field(default_factory=set)
    times: list[LogTimes] = field(default_factory=list)
    # Every answer by status code ("404", "429", ...), "dropped" for a request left hanging.
    answers: Counter[str] = field(default_factory=Counter)
    # Bumped by reset(), so a request that straddles a reset does not stamp a newer entry.
    generation: int = 0

    def record(self, route: Route) -> tuple[int, int]:
        """Count and log one request; returns its (generation, index) for ``answered``."""
        resource = route.resource_name
        self.requests[route.verb] += 1
        self.by_resource[(route.verb, resource)] += 1
        self.log.append((route.verb, route.resource.group, resource, route.namespace, route.name))
        self.times.append((time.perf_counter(), None))
        self.seen_permissions.add((route.resource.group, resource, route.verb))
        return self.generation, len(self.log) - 1

    def answered(self, ticket: tuple[int, int]) -> None:
        generation, index = ticket
        if generation == self.generation and index < len(self.times):
            self.times[index] = (self.times[index][0], time.perf_counter())

    def reset(self) -> None:
        self.requests.clear()
        self.by_resource.clear()
        self.log.clear()
        self.times.clear()
        self.answers.clear()
        self.seen_permissions.clear()
        self.generation += 1


class Backend:
    def __init__(self, store: Store) -> None:
        self.operations = Operations(store)
        self.faults = FaultInjector()
        self.stats = RequestStats()
        self.authorizer: Authorizer | None = None
        self.latency = 0.0
        self._stats_lock = threading.Lock()

    @property
    def stats_lock(self) -> threading.Lock:
        """Held while ``stats`` is written; hold it to read several of its lists together."""
        return self._stats_lock

    def handle(
        self, method: str, path: str, query: dict[str, str], content_type: str, raw: bytes
    ) -> Response | Drop:
        answer = self._answer(method, path, query, content_type, raw)
        with self._stats_lock:
            self.stats.answers["dropped" if isinstance(answer, Drop) else str(answer.code)] += 1
        return answer

    def _answer(
        self, method: str, path: str, query: dict[str, str], content_type: str, raw: bytes
    ) -> Response | Drop:
        if path.rstrip("/") == "/version":
            return Response(200, VERSION_INFO)
        try:
            route = parse_route(method, path, query.get("watch") in ("true", "1"))
        except ApiError as error:
            return _error_response(error)
        if route is None:
            return Response(404, _not_served())
        with self._stats_lock:
            ticket = self.stats.record(route)
        if self.latency > 0:
            time.sleep(self.latency)
        fault = self.faults.next_fault(route.verb, route.resource_name, route.name)
        if fault is not None and fault.status is None:
            return Drop(fault.delay)
        try:
            if fault is not None and fault.status is not None:
                raise injected_error(fault.status)
            if self.authorizer is not None:
                self.authorizer.check(
                    Request(
                        route.verb,
                        route.resource.group,
                        route.resource_name,
                        route.namespace,
                        route.name,
                    )
                )
            response = self._serve(route, query, content_type, _json_body(raw))
        except ApiError as error:
            return _error_response(error)
        if response.code < 400:
            with self._stats_lock:
                self.stats.answered(ticket)
        return response

    def _serve(self, route: Route, query: dict[str, str], content_type: str, body: Any) -> Response:
        ops = self.operations
        resource, namespace, name = route.resource, route.namespace, route.name
        if route.subresource == "eviction":
            evict(ops, namespace, name, body)
            return Response(201, success_status(201))
        if route.verb == "get":
            return Response(200, ops.get(resource, namespace, name))
        if route.verb == "list":
            return Response(200, ops.list(resource, namespace or None, query))
        if route.verb == "create":
            return Response(201, ops.create(resource, namespace, body))
        if route.verb == "update":
            return Response(200, ops.update(resource, namespace, name, body, route.subresource))
        if route.verb == "patch":
            patched = ops.patch(resource, namespace, name, body, content_type, route.subresource)
            return Response(200, patched)
        return Response(200, ops.delete(resource, namespace, name, body))


def _json_body(raw: bytes) -> Any:
    if not raw.strip():
        return None
    try:
        return json.loads(raw)
    except ValueError as error:
        raise bad_request(f"the request body is not valid JSON: {error}") from error


def _error_response(error: ApiError) -> Response:
    return Response(error.code, error.status(), error.headers)


def _not_served() -> Obj:
    return ApiError(404, "the server could not find the requested resource", details={}).status()
