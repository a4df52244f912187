"""The Kubernetes emulator through the unmodified official client: CRUD, patches, selectors."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from kubemu import Emulator
from kubemu.builders import node, nodeclaim, pod
from tests.support.present import (
    as_model,
    error_body,
    json_object,
    meta,
    present,
    resource_version,
    spec_of,
    status_part,
)


def core(emu: Emulator) -> client.CoreV1Api:
    return client.CoreV1Api(emu.api_client())


def custom(emu: Emulator) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(emu.api_client())


def status_of(error: ApiException) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(error_body(error))
    return body


def test_version_reports_a_1_31_server(emulator: Emulator) -> None:
    info = client.VersionApi(emulator.api_client()).get_code()
    assert (info.major, info.minor) == ("1", "31")


def test_unknown_path_answers_404_status_body(emulator: Emulator) -> None:
    rest = emulator.api_client().rest_client
    for path in ("/nope", "/apis/batch/v1/jobs", "/api/v1/nodes/n1/proxy"):
        # The kubernetes client leaves request() unannotated.
        response = rest.request("GET", f"{emulator.url}{path}")  # type: ignore[no-untyped-call]
        assert response.status == 404
        body = json.loads(response.read())
        assert (body["kind"], body["reason"], body["code"]) == ("Status", "NotFound", 404)


def test_node_crud_sets_server_metadata(emulator: Emulator) -> None:
    api = core(emulator)
    created = api.create_node(as_model(node("n1"), client.V1Node))
    assert meta(created).uid
    assert meta(created).creation_timestamp is not None
    first = resource_version(created)
    read = api.read_node("n1")
    assert meta(read).uid == meta(created).uid
    # Nodes keep the status they are created with, as on a real server.
    assert present(status_part(read).conditions, "conditions")[0].type == "Ready"
    api.delete_node("n1")
    with pytest.raises(ApiException) as caught:
        api.read_node("n1")
    assert caught.value.status == 404
    assert status_of(caught.value)["details"] == {"name": "n1", "kind": "nodes"}
    assert resource_version(api.list_node()) > first


def test_create_twice_is_already_exists(emulator: Emulator) -> None:
    api = core(emulator)
    api.create_node(as_model(node("n1"), client.V1Node))
    with pytest.raises(ApiException) as caught:
        api.create_node(as_model(node("n1"), client.V1Node))
    assert caught.value.status == 409
    assert status_of(caught.value)["reason"] == "AlreadyExists"


def test_resource_version_increases_on_every_write(emulator: Emulator) -> None:
    api = core(emulator)
    versions = [
        resource_version(api.create_node(as_model(node(f"n{i}"), client.V1Node))) for i in range(3)
    ]
    patched = api.patch_node("n0", {"metadata": {"labels": {"x": "y"}}})
    versions.append(resource_version(patched))
    assert versions == sorted(versions)
    assert len(set(versions)) == 4


def test_noop_patch_keeps_the_resource_version(emulator: Emulator) -> None:
    api = core(emulator)
    version = meta(api.create_node(as_model(node("n1"), client.V1Node))).resource_version
    assert meta(api.patch_node("n1", {"metadata": {}})).resource_version == version


def test_generate_name_appends_five_safe_characters(emulator: Emulator) -> None:
    claim = nodeclaim("x")
    claim["metadata"] = {"generateName": "general-", "labels": {"karpenter.sh/nodepool": "g"}}
    created = json_object(
        custom(emulator).create_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", claim)
    )
    assert re.fullmatch(r"general-[bcdfghjklmnpqrstvwxz2456789]{5}", created["metadata"]["name"])
    # Custom resources with a status subresource drop status on create.
    assert "status" not in created


def test_create_without_name_is_invalid(emulator: Emulator) -> None:
    body = node("x")
    body["metadata"] = {}
    with pytest.raises(ApiException) as caught:
        core(emulator).create_node(as_model(body, client.V1Node))
    assert caught.value.status == 422


def test_pod_created_through_the_api_starts_pending(emulator: Emulator) -> None:
    created = core(emulator).create_namespaced_pod(
        "default", as_model(pod("p1", phase="Running"), client.V1Pod)
    )
    assert status_part(created).phase == "Pending"


def test_pod_without_containers_is_invalid(emulator: Emulator) -> None:
    body = pod("p1")
    body["spec"]["containers"] = []
    with pytest.raises(ApiException) as caught:
        core(emulator).create_namespaced_pod("default", as_model(body, client.V1Pod))
    assert caught.value.status == 422


def test_put_with_stale_resource_version_conflicts(emulator: Emulator) -> None:
    api = core(emulator)
    stale = api.create_node(as_model(node("n1"), client.V1Node))
    api.patch_node("n1", {"metadata": {"labels": {"a": "b"}}})
    meta(stale).labels = {"c": "d"}
    with pytest.raises(ApiException) as caught:
        api.replace_node("n1", stale)
    assert caught.value.status == 409
    assert status_of(caught.value)["reason"] == "Conflict"
    fresh = api.read_node("n1")
    meta(fresh).labels = {"c": "d"}
    assert meta(api.replace_node("n1", fresh)).labels == {"c": "d"}


def test_put_ignores_status_of_the_main_resource_but_status_subresource_sets_it(
    emulator: Emulator,
) -> None:
    api = core(emulator)
    api.create_node(as_model(node("n1"), client.V1Node))
    current = api.read_node("n1")
    present(status_part(current).conditions, "conditions")[0].status = "False"
    assert (
        present(status_part(api.replace_node("n1", current)).conditions, "conditions")[0].status
        == "True"
    )
    updated = api.patch_node_status(
        "n1", {"status": {"conditions": [{"type": "Ready", "status": "False"}]}}
    )
    assert present(status_part(updated).conditions, "conditions")[0].status == "False"


def test_custom_resource_put_requires_resource_version(emulator: Emulator) -> None:
    api = custom(emulator)
    api.create_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", nodeclaim("c1"))
    with pytest.raises(ApiException) as caught:
        api.replace_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", "c1", nodeclaim("c1"))
    assert caught.value.status == 422


def test_merge_patch_with_stale_resource_version_conflicts(emulator: Emulator) -> None:
    api = core(emulator)
    stale = meta(api.create_node(as_model(node("n1"), client.V1Node))).resource_version
    api.patch_node("n1", {"metadata": {"labels": {"x": "y"}}})
    with pytest.raises(ApiException) as caught:
        api.patch_node(
            "n1",
            {"metadata": {"resourceVersion": stale, "labels": {"a": "b"}}},
            _content_type="application/merge-patch+json",
        )
    assert caught.value.status == 409


def test_client_sends_strategic_merge_for_dict_bodies(emulator: Emulator) -> None:
    """kubernetes 37: patch_node picks application/json-patch+json from its list, and
    rest.py rewrites it to strategic-merge-patch+json whenever the body is not a list."""
    api = core(emulator)
    api.create_node(
        as_model(node("n1", taints=[{"key": "a", "effect": "NoSchedule"}]), client.V1Node)
    )
    api.patch_node("n1", {"metadata": {"finalizers": ["x"]}})
    api.patch_node("n1", {"metadata": {"finalizers": ["y"]}})
    # Only a strategic merge unions finalizers; a merge patch would have replaced the list.
    assert meta(api.read_node("n1")).finalizers == ["x", "y"]


def test_strategic_merge_replaces_taints_atomically(emulator: Emulator) -> None:
    api = core(emulator)
    api.create_node(
        as_model(node("n1", taints=[{"key": "a", "effect": "NoSchedule"}]), client.V1Node)
    )
    patched = api.patch_node(
        "n1", {"spec": {"taints": [{"key": "b", "effect": "NoExecute"}], "unschedulable": True}}
    )
    assert [(t.key, t.effect) for t in present(spec_of(patched).taints, "taints")] == [
        ("b", "NoExecute")
    ]
    assert spec_of(patched).unschedulable is True


def test_strategic_merge_merges_conditions_by_type(emulator: Emulator) -> None:
    api = core(emulator)
    body = node("n1")
    body["status"]["conditions"].append({"type": "DiskPressure", "status": "False"})
    api.create_node(as_model(body, client.V1Node))
    patched = api.patch_node_status(
        "n1", {"status": {"conditions": [{"type": "Ready", "status": "False"}]}}
    )
    assert [(c.type, c.status) for c in present(status_part(patched).conditions, "conditions")] == [
        ("Ready", "False"),
        ("DiskPressure", "False"),
    ]


def test_strategic_merge_directives(emulator: Emulator) -> None:
    api = core(emulator)
    body = node("n1")
    body["metadata"]["labels"] = {"a": "1", "b": "2"}
    body["metadata"]["annotations"] = {"keep": "no"}
    api.create_node(as_model(body, client.V1Node))
    patched = api.patch_node(
        "n1",
        {
            "metadata": {
                "labels": {"$patch": "replace", "c": "3"},
                "annotations": {"$patch": "delete"},
            }
        },
    )
    assert meta(patched).labels == {"c": "3"}
    assert meta(patched).annotations is None


def test_strategic_merge_of_containers_by_name(emulator: Emulator) -> None:
    emulator.put_object(pod("p1"))
    patched = core(emulator).patch_namespaced_pod(
        "p1",
        "default",
        {
            "spec": {
                "containers": [{"name": "app", "image": "nginx:2"}, {"name": "side", "image": "s"}]
            }
        },
    )
    assert [(c.name, c.image) for c in spec_of(patched).containers] == [
        ("app", "nginx:2"),
        ("side", "s"),
    ]


def test_merge_patch_replaces_lists_and_deletes_nulls(emulator: Emulator) -> None:
    api = core(emulator)
    body = node("n1")
    body["metadata"]["labels"] = {"a": "1", "b": "2"}
    api.create_node(as_model(body, client.V1Node))
    patched = api.patch_node_status(
        "n1",
        {
            "metadata": {"labels": {"a": None}},
            "status": {"conditions": [{"type": "X", "status": "True"}]},
        },
        _content_type="application/merge-patch+json",
    )
    assert [c.type for c in present(status_part(patched).conditions, "conditions")] == ["X"]
    # The status subresource ignores metadata.
    assert meta(api.read_node("n1")).labels == {"a": "1", "b": "2"}
    relabelled = api.patch_node(
        "n1", {"metadata": {"labels": {"a": None}}}, _content_type="application/merge-patch+json"
    )
    assert meta(relabelled).labels == {"b": "2"}


def test_json_patch_operations_and_test(emulator: Emulator) -> None:
    api = core(emulator)
    api.create_node(as_model(node("n1"), client.V1Node))
    patched = api.patch_node(
        "n1",
        [
            {"op": "test", "path": "/metadata/name", "value": "n1"},
            {"op": "add", "path": "/spec/taints", "value": []},
            {"op": "add", "path": "/spec/taints/-", "value": {"key": "k", "effect": "NoSchedule"}},
            {"op": "add", "path": "/metadata/labels/a~1b", "value": "v"},
        ],
    )
    assert present(spec_of(patched).taints, "taints")[0].key == "k"
    assert meta(patched).labels == {"a/b": "v"}
    with pytest.raises(ApiException) as caught:
        api.patch_node("n1", [{"op": "test", "path": "/metadata/name", "value": "other"}])
    assert caught.value.status == 422
    version = meta(api.read_node("n1")).resource_version
    with pytest.raises(ApiException) as stale:
        api.patch_node(
            "n1",
            [
                {"op": "replace", "path": "/metadata/resourceVersion", "value": "1"},
                {"op": "add", "path": "/metadata/labels/x", "value": "y"},
            ],
        )
    assert stale.value.status == 409
    assert meta(api.read_node("n1")).resource_version == version


def test_strategic_merge_on_custom_resource_is_415(emulator: Emulator) -> None:
    api = custom(emulator)
    api.create_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", nodeclaim("c1"))
    with pytest.raises(ApiException) as caught:
        api.patch_cluster_custom_object(
            "karpenter.sh",
            "v1",
            "nodeclaims",
            "c1",
            {"metadata": {"labels": {"a": "b"}}},
            _content_type="application/strategic-merge-patch+json",
        )
    assert caught.value.status == 415
    # The client's default for custom objects is a merge patch, which works.
    patched = json_object(
        api.patch_cluster_custom_object(
            "karpenter.sh", "v1", "nodeclaims", "c1", {"metadata": {"labels": {"a": "b"}}}
        )
    )
    assert patched["metadata"]["labels"]["a"] == "b"


def test_nodeclaim_status_subresource(emulator: Emulator) -> None:
    api = custom(emulator)
    api.create_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", nodeclaim("c1"))
    api.patch_cluster_custom_object_status(
        "karpenter.sh", "v1", "nodeclaims", "c1", {"status": {"nodeName": "n1"}}
    )
    read = json_object(
        api.get_cluster_custom_object_status("karpenter.sh", "v1", "nodeclaims", "c1")
    )
    assert read["status"] == {"nodeName": "n1"}


def test_label_selectors(emulator: Emulator) -> None:
    for name, labels in [("a", {"tier": "web", "zone": "1"}), ("b", {"tier": "db"}), ("c", {})]:
        body = node(name)
        body["metadata"]["labels"] = labels
        emulator.put_object(body)
    api = core(emulator)

    def names(selector: str) -> list[str | None]:
        return [meta(n).name for n in api.list_node(label_selector=selector).items]

    assert names("tier=web") == ["a"]
    assert names("tier==web") == ["a"]
    assert names("tier!=web") == ["b", "c"]
    assert names("tier in (web, db)") == ["a", "b"]
    assert names("tier notin (web)") == ["b", "c"]
    assert names("tier") == ["a", "b"]
    assert names("!tier") == ["c"]
    assert names("tier,zone=1") == ["a"]


def test_field_selectors_and_unsupported_field(emulator: Emulator) -> None:
    emulator.put_object(pod("p1", node_name="n1"))
    emulator.put_object(pod("p2", node_name="n2", phase="Succeeded"))
    emulator.put_object(pod("p3", node_name="n1", namespace="other"))
    api = core(emulator)

    def names(selector: str) -> list[str | None]:
        pods = api.list_pod_for_all_namespaces(field_selector=selector).items
        return [meta(p).name for p in pods]

    assert names("spec.nodeName=n1") == ["p1", "p3"]
    assert names("spec.nodeName=n1,metadata.namespace==other") == ["p3"]
    assert names("status.phase!=Running") == ["p2"]
    assert names("metadata.name=p2") == ["p2"]
    with pytest.raises(ApiException) as caught:
        api.list_pod_for_all_namespaces(field_selector="spec.bogus=x")
    assert caught.value.status == 400
    emulator.put_object(node("n1", unschedulable=True))
    emulator.put_object(node("n2"))
    unschedulable = api.list_node(field_selector="spec.unschedulable=false").items
    assert [meta(n).name for n in unschedulable] == ["n2"]


def test_pod_moves_between_node_index_entries(emulator: Emulator) -> None:
    emulator.put_object(pod("p1", node_name="n1"))
    emulator.put_object(pod("p1", node_name="n2"))
    api = core(emulator)
    assert api.list_pod_for_all_namespaces(field_selector="spec.nodeName=n1").items == []
    assert len(api.list_pod_for_all_namespaces(field_selector="spec.nodeName=n2").items) == 1


def test_nodepool_label_lookup(emulator: Emulator) -> None:
    for i in range(4):
        emulator.put_object(nodeclaim(f"c{i}", nodepool="a" if i % 2 else "b"))
    found = json_object(
        custom(emulator).list_cluster_custom_object(
            "karpenter.sh", "v1", "nodeclaims", label_selector="karpenter.sh/nodepool=a"
        )
    )
    assert [c["metadata"]["name"] for c in found["items"]] == ["c1", "c3"]


def test_pagination_with_limit_and_continue(emulator: Emulator) -> None:
    for i in range(7):
        emulator.put_object(node(f"n{i}"))
    api = core(emulator)
    seen: list[str | None] = []
    token = None
    pages = 0
    while True:
        page = api.list_node(limit=3, _continue=token)
        pages += 1
        seen += [meta(n).name for n in page.items]
        token = meta(page)._continue
        if not token:
            break
        assert meta(page).remaining_item_count == 7 - len(seen)
    assert pages == 3
    assert seen == [f"n{i}" for i in range(7)]
    with pytest.raises(ApiException) as caught:
        api.list_node(limit=3, _continue="not-a-token")
    assert caught.value.status == 400


def test_delete_preconditions(emulator: Emulator) -> None:
    api = core(emulator)
    created = api.create_node(as_model(node("n1"), client.V1Node))
    with pytest.raises(ApiException) as caught:
        api.delete_node(
            "n1", body=client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="other"))
        )
    assert caught.value.status == 409
    with pytest.raises(ApiException) as stale:
        api.delete_node(
            "n1",
            body=client.V1DeleteOptions(preconditions=client.V1Preconditions(resource_version="0")),
        )
    assert stale.value.status == 409
    api.delete_node(
        "n1",
        body=client.V1DeleteOptions(preconditions=client.V1Preconditions(uid=meta(created).uid)),
    )
    assert emulator.get_object("Node", "n1") is None
    with pytest.raises(ApiException) as missing:
        api.delete_node("n1")
    assert missing.value.status == 404


def test_finalizers_defer_deletion_until_removed(emulator: Emulator) -> None:
    claim = nodeclaim("c1")
    claim["metadata"]["finalizers"] = ["karpenter.sh/termination"]
    emulator.put_object(claim)
    api = custom(emulator)
    first = json_object(api.delete_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", "c1"))
    stamp = first["metadata"]["deletionTimestamp"]
    assert stamp
    again = json_object(api.delete_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", "c1"))
    assert again["metadata"]["deletionTimestamp"] == stamp
    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    api.patch_cluster_custom_object(
        "karpenter.sh", "v1", "nodeclaims", "c1", {"metadata": {"finalizers": None}}
    )
    assert emulator.get_object("NodeClaim", "c1") is None


def test_lease_and_events(emulator: Emulator) -> None:
    leases = client.CoordinationV1Api(emulator.api_client())
    lease = leases.create_namespaced_lease(
        "kube-system",
        as_model(
            {
                "metadata": {"name": "lifeboat"},
                "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15},
            },
            client.V1Lease,
        ),
    )
    spec_of(lease).holder_identity = "b"
    assert (
        spec_of(leases.replace_namespaced_lease("lifeboat", "kube-system", lease)).holder_identity
        == "b"
    )
    spec_of(lease).holder_identity = "c"  # still the old resourceVersion
    with pytest.raises(ApiException) as caught:
        leases.replace_namespaced_lease("lifeboat", "kube-system", lease)
    assert caught.value.status == 409
    core_event = core(emulator).create_namespaced_event(
        "default",
        as_model(
            {
                "metadata": {"generateName": "n1."},
                "involvedObject": {"kind": "Node", "name": "n1"},
                "reason": "SpotInterrupted",
                "message": "m",
            },
            client.CoreV1Event,
        ),
    )
    assert present(meta(core_event).name, "the event's name").startswith("n1.")
    events = client.EventsV1Api(emulator.api_client())
    events.create_namespaced_event(
        "default",
        as_model(
            {
                "metadata": {"name": "e1"},
                "eventTime": "2024-01-01T00:00:00.000000Z",
                "reportingController": "lifeboat",
                "reportingInstance": "lifeboat-1",
                "action": "Cordon",
                "reason": "Interrupted",
                "type": "Normal",
            },
            client.EventsV1Event,
        ),
    )
    assert [meta(e).name for e in events.list_namespaced_event("default").items] == ["e1"]
    by_reason = core(emulator).list_namespaced_event(
        "default", field_selector="reason=SpotInterrupted"
    )
    assert len(by_reason.items) == 1


def test_field_selector_with_an_empty_node_name_selects_unscheduled_pods(
    emulator: Emulator,
) -> None:
    """`spec.nodeName=` compares with the empty string: the pods no node runs yet."""
    emulator.put_object(pod("scheduled", node_name="n1"))
    emulator.put_object(pod("waiting", node_name=""))
    listed = core(emulator).list_pod_for_all_namespaces(field_selector="spec.nodeName=")
    assert [meta(p).name for p in listed.items] == ["waiting"]


def test_json_patch_test_compares_json_values_strictly(emulator: Emulator) -> None:
    """RFC 6902 test: 1 is not true."""
    emulator.put_object(node("n1", unschedulable=True))
    rest = emulator.api_client().rest_client
    # The kubernetes client leaves request() unannotated.
    response = rest.request(  # type: ignore[no-untyped-call]
        "PATCH",
        f"{emulator.url}/api/v1/nodes/n1",
        headers={"Content-Type": "application/json-patch+json"},
        body=[{"op": "test", "path": "/spec/unschedulable", "value": 1}],
    )
    assert response.status == 422


def test_an_empty_set_in_a_label_selector_is_refused(emulator: Emulator) -> None:
    """labels.Parse refuses `k in ()`."""
    with pytest.raises(ApiException) as caught:
        core(emulator).list_node(label_selector="team in ()")
    assert caught.value.status == 400


def test_creating_in_a_missing_namespace_is_not_found(emulator: Emulator) -> None:
    """NamespaceLifecycle admission: 404 naming the namespace."""
    with pytest.raises(ApiException) as caught:
        core(emulator).create_namespaced_pod(
            "nowhere", as_model(pod("p1", namespace="nowhere"), client.V1Pod)
        )
    assert caught.value.status == 404
    assert status_of(caught.value)["message"] == 'namespaces "nowhere" not found'


def test_deleting_an_owner_collects_its_dependents_in_the_background(emulator: Emulator) -> None:
    """Garbage collector, Background propagation: dependents go once their owner is gone."""
    from kubemu.builders import workload

    owner = workload("ReplicaSet", "web", replicas=1)
    emulator.put_object(owner)
    emulator.put_object(pod("p1", node_name="", owner=owner))
    client.AppsV1Api(emulator.api_client()).delete_namespaced_replica_set("web", "default")
    assert emulator.get_object("Pod", "p1", "default") is None


def test_orphan_propagation_keeps_the_dependents(emulator: Emulator) -> None:
    from kubemu.builders import workload

    owner = workload("ReplicaSet", "web", replicas=1)
    emulator.put_object(owner)
    emulator.put_object(pod("p1", node_name="", owner=owner))
    client.AppsV1Api(emulator.api_client()).delete_namespaced_replica_set(
        "web", "default", body=client.V1DeleteOptions(propagation_policy="Orphan")
    )
    kept = emulator.get_object("Pod", "p1", "default")
    assert kept is not None
    assert "ownerReferences" not in kept["metadata"]


def test_foreground_propagation_keeps_the_owner_until_its_dependents_are_gone(
    emulator: Emulator,
) -> None:
    from kubemu.builders import workload

    owner = workload("ReplicaSet", "web", replicas=1)
    emulator.put_object(owner)
    emulator.put_object(pod("p1", owner=owner))  # scheduled: 30 s of grace
    client.AppsV1Api(emulator.api_client()).delete_namespaced_replica_set(
        "web", "default", body=client.V1DeleteOptions(propagation_policy="Foreground")
    )
    waiting = emulator.get_object("ReplicaSet", "web", "default")
    assert waiting is not None
    assert waiting["metadata"]["finalizers"] == ["foregroundDeletion"]
    emulator.clock.advance(30)
    assert emulator.get_object("Pod", "p1", "default") is None
    assert emulator.get_object("ReplicaSet", "web", "default") is None


def test_no_finalizer_may_be_added_to_a_deleting_object(emulator: Emulator) -> None:
    claim = nodeclaim("c1")
    claim["metadata"]["finalizers"] = ["karpenter.sh/termination"]
    emulator.put_object(claim)
    api = custom(emulator)
    api.delete_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", "c1")
    with pytest.raises(ApiException) as caught:
        api.patch_cluster_custom_object(
            "karpenter.sh",
            "v1",
            "nodeclaims",
            "c1",
            {"metadata": {"finalizers": ["karpenter.sh/termination", "example.com/late"]}},
        )
    assert caught.value.status == 422
    assert "no new finalizers" in status_of(caught.value)["message"]


def test_server_side_dry_run_never_mutates(emulator: Emulator) -> None:
    api = core(emulator)
    api.create_node(as_model(node("n1"), client.V1Node), dry_run="All")
    assert emulator.get_object("Node", "n1") is None
    api.create_node(as_model(node("n1"), client.V1Node))
    version = present(emulator.get_object("Node", "n1"), "node n1")["metadata"]["resourceVersion"]
    api.patch_node("n1", {"metadata": {"labels": {"x": "y"}}}, dry_run="All")
    api.delete_node("n1", dry_run="All")
    after = present(emulator.get_object("Node", "n1"), "node n1")
    assert after["metadata"]["resourceVersion"] == version
    assert "x" not in (after["metadata"].get("labels") or {})
