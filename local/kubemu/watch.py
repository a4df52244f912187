"""Watches: ``?watch=true`` streams one JSON event per line, as the API server does.

resourceVersion semantics (``staging/src/k8s.io/apiserver/pkg/storage/cacher``): unset or
"0" starts with a synthetic ADDED event per existing object, then the changes; a given
version streams the changes after it, and one older than the kept history answers an
ERROR event with a 410 Expired Status. With selectors, an object that stops matching is
reported DELETED and one that starts matching ADDED. ``timeoutSeconds`` ends the stream.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator

from .errors import ApiError, bad_request
from .resources import Obj, ResourceType
from .selectors import FieldRequirement, LabelSelector, parse_field_selector, parse_label_selector
from .store import Change, Store

# A watch without timeoutSeconds ends after this long; the client then watches again.
MAX_WATCH_SECONDS = 1800
# How often a waiting watch wakes to notice a stopping server or an expired grace period.
POLL_SECONDS = 0.5
# Yielded by a stream with nothing to send (never written): the HTTP front ends a watch whose
# client has gone instead of keeping its thread until the watch times out.
IDLE = b""

Encode = Callable[[Obj], Obj]  # an object as the client asked to see it (JSON or a Table row)


def _matches(
    obj: Obj | None, namespace: str, labels: LabelSelector, fields: tuple[FieldRequirement, ...]
) -> bool:
    if obj is None:
        return False
    metadata = obj["metadata"]
    if namespace and metadata.get("namespace") != namespace:
        return False
    return labels.matches(metadata.get("labels") or {}) and all(f.matches(obj) for f in fields)


def _line(kind: str, obj: Obj) -> bytes:
    return (json.dumps({"type": kind, "object": obj}) + "\n").encode()


def _since(store: Store, revision: int) -> list[Change]:
    found = []
    for change in reversed(store.changes):
        if change.revision <= revision:
            break
        found.append(change)
    found.reverse()
    return found


def watch(
    store: Store,
    resource: ResourceType,
    namespace: str,
    query: dict[str, str],
    encode: Encode,
    stopping: threading.Event,
    tick: Callable[[], None],
) -> Iterator[bytes]:
    """The event stream; ``tick`` runs on every wake-up (it ends expired grace periods)."""
    revision = 0
    labels = parse_label_selector(query.get("labelSelector"))
    fields = parse_field_selector(query.get("fieldSelector"), resource)
    timeout = query.get("timeoutSeconds") or ""
    if timeout and not timeout.isdigit():
        raise bad_request(f"invalid timeoutSeconds {timeout!r}")
    ends = time.monotonic() + min(int(timeout or MAX_WATCH_SECONDS), MAX_WATCH_SECONDS)
    version = query.get("resourceVersion") or ""
    initial: list[bytes] = []
    with store.lock:
        if version in ("", "0"):
            revision = int(store.revision)
            for obj in store.candidates(resource, namespace or None, {}):
                if _matches(obj, namespace, labels, fields):
                    initial.append(_line("ADDED", encode(obj)))
        elif not version.isdigit():
            raise bad_request(f"invalid resourceVersion {version!r}")
        else:
            revision = int(version)
            oldest = store.changes[0].revision if store.changes else revision + 1
            if len(store.changes) == store.changes.maxlen and revision < oldest - 1:
                expired = ApiError(410, f"too old resource version: {revision} ({oldest - 1})")
                initial.append(_line("ERROR", expired.status()))
                ends = 0.0
    # Selectors and versions were checked above, before the answer's status is sent.
    return _follow(
        store, resource, namespace, labels, fields, revision, initial, ends, stopping, tick, encode
    )


def _follow(
    store: Store,
    resource: ResourceType,
    namespace: str,
    labels: LabelSelector,
    fields: tuple[FieldRequirement, ...],
    revision: int,
    initial: list[bytes],
    ends: float,
    stopping: threading.Event,
    tick: Callable[[], None],
    encode: Encode,
) -> Iterator[bytes]:
    yield from initial
    while time.monotonic() < ends and not stopping.is_set():
        tick()
        with store.changed:
            changes = _since(store, revision)
            if not changes:
                store.changed.wait(POLL_SECONDS)
                idle = True
            else:
                idle = False
        if idle:
            yield IDLE  # nothing to send: the server checks whether the client is still there
            continue
        revision = changes[-1].revision
        lines = [_event(c, resource, namespace, labels, fields, encode) for c in changes]
        sent = [line for line in lines if line is not None]
        # Changes to other objects only: as idle for this watch, so a busy store does not
        # keep a departed client's watch (and its thread) alive.
        yield from sent or (IDLE,)


def _event(
    change: Change,
    resource: ResourceType,
    namespace: str,
    labels: LabelSelector,
    fields: tuple[FieldRequirement, ...],
    encode: Encode,
) -> bytes | None:
    """The line a watch sends for ``change`` (None: it does not see it)."""
    if change.resource is not resource:
        return None
    was = change.type != "ADDED" and _matches(change.old, namespace, labels, fields)
    now = change.type != "DELETED" and _matches(change.new, namespace, labels, fields)
    if was and now:
        return _line("MODIFIED", encode(change.new))
    if now:
        return _line("ADDED", encode(change.new))
    if was:
        return _line("DELETED", encode(change.new))
    return None
