"""The emulator's read-only view and the hand-over of a freshly read cluster file: what makes
a 5,000-node replay cheap must not let a caller's change reach the store."""

from __future__ import annotations

import uuid
from typing import Any

from kubernetes import client

from kubemu import Emulator
from tests.support.present import meta


def _node(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"karpenter.sh/nodepool": "general"}},
    }


def _pod(name: str, node: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "apps"},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i"}]},
    }


def test_view_is_what_objects_copies_in_the_same_order() -> None:
    emulator = Emulator([_node("b"), _node("a"), _pod("p", "a")])
    assert emulator.view("Node") == emulator.objects("Node")
    assert [o["metadata"]["name"] for o in emulator.view("Node")] == ["a", "b"]
    assert [o["kind"] for o in emulator.view()] == [o["kind"] for o in emulator.objects()]


def test_objects_gives_copies_a_caller_may_change() -> None:
    emulator = Emulator([_node("a")])
    [copy] = emulator.objects("Node")
    copy["metadata"]["labels"]["changed"] = "yes"
    assert "changed" not in emulator.view("Node")[0]["metadata"]["labels"]


def test_a_view_stays_as_it_was_read_after_a_write() -> None:
    """The store never changes an object in place: a view taken before a write still shows
    the object as it was (the simulation keeps pods as they were to recreate them)."""
    emulator = Emulator([_node("a")])
    [before] = emulator.view("Node")
    changed = emulator.objects("Node")[0]
    changed["spec"] = {"unschedulable": True}
    emulator.put_object(changed)
    assert "spec" not in before
    assert emulator.view("Node")[0]["spec"] == {"unschedulable": True}


def test_objects_handed_over_are_stored_without_a_copy_and_indexed() -> None:
    objects = [_node("a"), _pod("p", "a")]
    emulator = Emulator(objects, take=True)
    assert emulator.view("Node")[0] is objects[0]
    assert objects[0]["metadata"]["uid"]  # the server's metadata, added to the object
    assert emulator.get_object("Namespace", "apps") is not None
    with emulator:  # the index by spec.nodeName serves field selectors
        api = client.CoreV1Api(emulator.api_client())
        found = api.list_pod_for_all_namespaces(field_selector="spec.nodeName=a")
        assert [meta(p).name for p in found.items] == ["p"]


def test_objects_not_handed_over_are_copied() -> None:
    objects = [_node("a")]
    emulator = Emulator(objects)
    assert "uid" not in objects[0]["metadata"]
    assert emulator.view("Node")[0] is not objects[0]


def test_uids_given_at_load_are_distinct_rfc4122_version_4() -> None:
    """What the API server gives (``uuid.NewUUID``): random, version 4, RFC 4122 variant."""
    emulator = Emulator([_node(f"n{i}") for i in range(500)], take=True)
    uids = [o["metadata"]["uid"] for o in emulator.view("Node")]
    parsed = [uuid.UUID(u) for u in uids]
    assert [str(u) for u in parsed] == uids  # canonical form, lower case
    assert {(u.version, u.variant) for u in parsed} == {(4, uuid.RFC_4122)}
    assert len(set(uids)) == len(uids)


def test_a_uid_in_the_file_is_kept() -> None:
    node = _node("a")
    node["metadata"]["uid"] = "0f0e0d0c-0b0a-4908-8706-050403020100"
    emulator = Emulator([node], take=True)
    assert emulator.view("Node")[0]["metadata"]["uid"] == "0f0e0d0c-0b0a-4908-8706-050403020100"
