"""One request through the emulator's pipeline: count, delay, fault, authorise, serve.

Independent of HTTP so that the handler only translates bytes. The request's headers
(lower-cased names; Accept for Tables, impersonation for RBAC) reach the pipeline through
``REQUEST_HEADERS``, so that ``Backend.handle`` keeps the signature tests wrap.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from . import discovery, openapi, watch
from .access import review
from .errors import ApiError, bad_request, success_status
from .eviction import evict
from .faults import FaultInjector, injected_error
from .operations import Operations, Write
from .rbac import Authorizer, RbacPolicy, Request
from .resources import Obj, ResourceType
from .routing import Route, parse_route
from .store import Store
from .tables import to_table, wants_table

_NO_HEADERS: Mapping[str, str] = MappingProxyType({})
REQUEST_HEADERS: ContextVar[Mapping[str, str]] = ContextVar("kubemu_headers", default=_NO_HEADERS)

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
    # A watch: the body is not sent; these chunks are, as they come.
    stream: Iterator[bytes] | None = None
    # Sent as is instead of the body, with headers' Content-Type (OpenAPI v2's protobuf).
    raw: bytes | None = None


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
        # RBAC for impersonated requests (kubectl --as / --as-group); None: none granted.
        self.policy: RbacPolicy | None = None
        self.latency = 0.0
        # How the latency is waited (tests inject a recorder instead of real time).
        self.sleep: Callable[[float], None] = time.sleep
        self.address = ""
        self.stopping = threading.Event()
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
        self.operations.deleter.expire()
        if method == "GET" and (meta := self._meta(path.rstrip("/"))) is not None:
            return meta
        try:
            if method == "POST" and path.rstrip("/") == _ACCESS_REVIEWS:
                return Response(201, review(_json_body(raw), self._allows))
            route = parse_route(method, path, query.get("watch") in ("true", "1"))
        except ApiError as error:
            return _error_response(error)
        if route is None:
            return Response(404, _not_served())
        with self._stats_lock:
            ticket = self.stats.record(route)
        if self.latency > 0:
            self.sleep(self.latency)
        fault = self.faults.next_fault(route.verb, route.resource_name, route.name)
        if fault is not None and fault.status is None:
            return Drop(fault.delay)
        try:
            if fault is not None and fault.status is not None:
                raise injected_error(fault.status)
            self._authorize(
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

    def _meta(self, path: str) -> Response | None:
        """The documents that describe the API: version, discovery, OpenAPI."""
        if path == "/version":
            return Response(200, VERSION_INFO)
        if path == "/api":
            return Response(200, discovery.api_versions(self.address))
        if path == "/apis":
            return Response(200, discovery.api_group_list())
        if path == "/openapi/v2":
            if openapi.V2_PROTOBUF_ACCEPT in REQUEST_HEADERS.get().get("accept", ""):
                headers = {"Content-Type": openapi.V2_PROTOBUF}
                return Response(200, {}, headers, raw=openapi.v2_protobuf())
            return Response(200, openapi.v2_json())
        if path == "/openapi/v3":
            return Response(200, openapi.index())
        if path.startswith("/openapi/v3/"):
            document = openapi.document(path[len("/openapi/v3/") :])
            return Response(200, document) if document else Response(404, _not_served())
        parts = path.strip("/").split("/")
        listed = None
        if parts[0] == "api" and len(parts) == 2:
            listed = discovery.api_resource_list("", parts[1])
        elif parts[0] == "apis" and len(parts) == 3:
            listed = discovery.api_resource_list(parts[1], parts[2])
        elif parts[0] == "apis" and len(parts) == 2:
            groups = discovery.api_group_list()["groups"]
            found = next((g for g in groups if g["name"] == parts[1]), None)
            listed = None if found is None else {"kind": "APIGroup", "apiVersion": "v1", **found}
        return None if listed is None else Response(200, listed)

    def _allows(self, request: Request) -> bool:
        try:
            self._authorize(request)
        except ApiError:
            return False
        return True

    def _authorize(self, request: Request) -> None:
        """Impersonated requests get the RBAC of their user and groups; the others the
        authorizer tests set (``enforce_rbac``), or none (a cluster admin)."""
        headers = REQUEST_HEADERS.get()
        user = headers.get("impersonate-user")
        groups = [g for g in headers.get("impersonate-group", "").split("\n") if g]
        if user or groups:
            if self.policy is None or not self.policy.allows(user or "", groups, request):
                from .rbac import forbidden

                raise forbidden(user or ",".join(groups), request)
        elif self.authorizer is not None:
            self.authorizer.check(request)

    def _serve(self, route: Route, query: dict[str, str], content_type: str, body: Any) -> Response:
        ops = self.operations
        resource, namespace, name = route.resource, route.namespace, route.name
        write = _write_options(query)
        if isinstance(body, dict) and "All" in (body.get("dryRun") or []):
            write.dry_run = True  # DeleteOptions carry dryRun in the body
        if route.subresource == "eviction":
            evict(ops, namespace, name, body, dry_run=write.dry_run)
            return Response(201, success_status(201))
        if route.verb == "watch":
            encode = self._encoder(resource, query)
            stream = watch.watch(
                ops.store, resource, namespace, query, encode, self.stopping, ops.deleter.expire
            )
            return Response(200, {}, stream=stream)
        if route.verb == "get":
            return self._read(resource, ops.get(resource, namespace, name), query)
        if route.verb == "list":
            return self._read(resource, ops.list(resource, namespace or None, query), query)
        if route.verb == "create":
            answer = Response(201, ops.create(resource, namespace, body, write))
        elif route.verb == "update":
            answer = Response(
                200, ops.update(resource, namespace, name, body, route.subresource, write)
            )
        elif route.verb == "patch":
            patched = ops.patch(
                resource, namespace, name, body, content_type, route.subresource, write
            )
            answer = Response(200, patched)
        else:
            answer = Response(200, ops.delete(resource, namespace, name, body, write))
        if write.warnings:
            # One header line per warning, as the server sends them (RFC 7234 form).
            answer.headers["Warning"] = ", ".join(
                f"299 - {json.dumps(w)}" for w in dict.fromkeys(write.warnings)
            )
        return answer

    def _read(self, resource: ResourceType, body: Obj, query: dict[str, str]) -> Response:
        if not wants_table(REQUEST_HEADERS.get().get("accept", "")):
            return Response(200, body)
        items = body.get("items", [body])
        metadata = (
            body["metadata"]
            if "items" in body
            else {"resourceVersion": body["metadata"].get("resourceVersion", "")}
        )
        now = self.operations.store.clock.now()
        return Response(
            200, to_table(resource, items, metadata, now, query.get("includeObject", ""))
        )

    def _encoder(self, resource: ResourceType, query: dict[str, str]) -> watch.Encode:
        if not wants_table(REQUEST_HEADERS.get().get("accept", "")):
            return lambda obj: obj
        clock = self.operations.store.clock
        include = query.get("includeObject", "")
        return lambda obj: to_table(
            resource,
            [obj],
            {"resourceVersion": obj["metadata"].get("resourceVersion", "")},
            clock.now(),
            include,
        )


_ACCESS_REVIEWS = f"/apis/{discovery.ACCESS_REVIEW_GROUP}/v1/{discovery.ACCESS_REVIEWS}"


def _write_options(query: dict[str, str]) -> Write:
    dry_run = query.get("dryRun", "")
    if dry_run not in ("", "All"):
        raise bad_request(f'Invalid dryRun value {dry_run!r}: only "All" is supported')
    mode = query.get("fieldValidation") or "Warn"
    return Write(dry_run=dry_run == "All", field_validation=mode)


def _json_body(raw: bytes) -> Any:
    if not raw.strip():
        return None
    try:
        body = json.loads(raw, parse_int=_go_number, parse_float=_go_float, parse_constant=_no)
    except ValueError as error:
        raise bad_request(f"the request body is not valid JSON: {error}") from error
    except RecursionError as error:
        raise bad_request(f"the request body is not valid JSON: {_TOO_DEEP}") from error
    if _depth(body) > _MAX_DEPTH:
        raise bad_request(f"the request body is not valid JSON: {_TOO_DEEP}")
    return body


# The API server decodes up to 10,000 levels (apimachinery util/json maxDepth). kubemu's
# handlers recurse over a body (deepcopy, celpy's json_to_cel, the schema checks), a few
# Python frames a level under a limit of 1,000 frames: a body 700 levels deep made the
# handler thread die and the client lose its connection. No Kubernetes object comes near.
_MAX_DEPTH = 100
_TOO_DEEP = f"exceeded max depth of {_MAX_DEPTH} (kubemu's limit; the API server's is 10000)"


def _depth(body: Any) -> int:
    """How deep objects and arrays nest in ``body``, counted without recursion."""
    deepest, pending = 0, [(body, 1)]
    while pending:
        value, level = pending.pop()
        if isinstance(value, dict | list):
            deepest = max(deepest, level)
            children = value.values() if isinstance(value, dict) else value
            pending.extend((child, level + 1) for child in children)
    return deepest


def _go_number(text: str) -> int | float:
    """A JSON integer as the API server decodes it (k8s.io/apimachinery util/json
    ``convertNumber``): an int64 when it fits, else a float64, which the schema then refuses
    as "must be of type integer" where an integer is due (Python would keep any size)."""
    number = int(text)
    return number if -(2**63) <= number < 2**63 else _go_float(text)


def _go_float(text: str) -> float:
    """``json.Number.Float64``: a number beyond float64 is an error (Python gives inf)."""
    number = float(text)
    if math.isinf(number):
        raise ValueError(f"number {text[:40]} out of range")
    return number


def _no(text: str) -> Any:
    """NaN and Infinity, which Python's json takes and JSON (Go's decoder) does not."""
    raise ValueError(f"invalid character {text[:1]!r} looking for beginning of value")


def _error_response(error: ApiError) -> Response:
    return Response(error.code, error.status(), error.headers)


def _not_served() -> Obj:
    return ApiError(404, "the server could not find the requested resource", details={}).status()
