"""Watches through the official client's watch helper: resourceVersion and selector semantics."""

from __future__ import annotations

import threading
from collections import deque
from typing import Any

from kubernetes import client, watch

from kubemu import Emulator
from kubemu.builders import node
from tests.support.present import as_model, meta, present


def _events(emu: Emulator, **kwargs: Any) -> list[tuple[str, str]]:
    api = client.CoreV1Api(emu.api_client())
    # The kubernetes client leaves Watch() and stream() unannotated.
    stream = watch.Watch().stream(api.list_node, timeout_seconds=1, **kwargs)  # type: ignore[no-untyped-call]
    return [(e["type"], e["object"].metadata.name) for e in stream]


def test_a_watch_from_a_lists_version_sees_only_later_changes(emulator: Emulator) -> None:
    """Changes after the given resourceVersion, in order; the stream ends at timeoutSeconds."""
    emulator.put_object(node("old"))
    version = meta(client.CoreV1Api(emulator.api_client()).list_node()).resource_version
    api = client.CoreV1Api(emulator.api_client())
    api.create_node(as_model(node("n1"), client.V1Node))
    api.patch_node("n1", {"metadata": {"labels": {"a": "b"}}})
    api.delete_node("n1")
    assert _events(emulator, resource_version=version) == [
        ("ADDED", "n1"),
        ("MODIFIED", "n1"),
        ("DELETED", "n1"),
    ]


def test_a_watch_without_a_version_starts_with_the_current_objects(emulator: Emulator) -> None:
    emulator.put_object(node("n1"))
    emulator.put_object(node("n2"))
    assert _events(emulator) == [("ADDED", "n1"), ("ADDED", "n2")]


def test_an_object_that_stops_matching_the_selector_is_deleted_from_the_watch(
    emulator: Emulator,
) -> None:
    """Cacher semantics: a filtered watch reports DELETED when the object leaves the set."""
    emulator.put_object(node("n1", nodepool="general"))
    version = present(emulator.get_object("Node", "n1"), "node n1")["metadata"]["resourceVersion"]
    client.CoreV1Api(emulator.api_client()).patch_node(
        "n1", {"metadata": {"labels": {"karpenter.sh/nodepool": "batch"}}}
    )
    events = _events(
        emulator, resource_version=version, label_selector="karpenter.sh/nodepool=general"
    )
    assert events == [("DELETED", "n1")]


def test_a_version_older_than_the_history_is_410_expired(emulator: Emulator) -> None:
    emulator._store.changes = deque(maxlen=2)  # a short history, to pass it quickly
    for index in range(5):
        emulator.put_object(node(f"n{index}"))
    api = client.CoreV1Api(emulator.api_client())
    response = api.api_client.rest_client.request(
        "GET", f"{emulator.url}/api/v1/nodes?watch=true&resourceVersion=1&timeoutSeconds=1"
    )
    assert response.status == 200
    assert b'"code": 410' in response.read()


def test_a_change_reaches_a_waiting_watch(emulator: Emulator) -> None:
    """The watch is a stream: an event written while it waits arrives on it."""
    version = meta(client.CoreV1Api(emulator.api_client()).list_node()).resource_version
    writer = threading.Timer(0.3, lambda: emulator.put_object(node("late")))
    writer.start()
    try:
        assert _events(emulator, resource_version=version) == [("ADDED", "late")]
    finally:
        writer.join()
