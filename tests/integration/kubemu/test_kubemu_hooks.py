"""The emulator's test hooks: faults, latency, RBAC, request accounting, cluster files."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
import urllib3
from kubernetes import client
from kubernetes.client import ApiException

from kubemu import Emulator, dump_cluster_file, load_cluster_file
from kubemu.builders import node, nodeclaim, pdb, pod
from kubemu.store import Store
from tests.support import cyaml
from tests.support.present import error_body, meta, present


def core(emu: Emulator) -> client.CoreV1Api:
    return client.CoreV1Api(emu.api_client())


def test_fail_next_matches_verb_and_resource(emulator: Emulator) -> None:
    emulator.put_object(node("n1"))
    api = core(emulator)
    emulator.fail_next(status=503, times=2, verb="patch", resource="nodes")
    api.read_node("n1")  # a get does not match the scripted failure
    for _ in range(2):
        with pytest.raises(ApiException) as caught:
            api.patch_node("n1", {"metadata": {"labels": {"a": "b"}}})
        assert caught.value.status == 503
    assert meta(api.patch_node("n1", {"metadata": {"labels": {"a": "b"}}})).labels == {"a": "b"}


def test_fail_next_429_carries_retry_after(emulator: Emulator) -> None:
    emulator.put_object(node("n1"))
    api = core(emulator)
    emulator.fail_next(status=429, name="n1")
    with pytest.raises(ApiException) as caught:
        api.patch_node("n1", {"spec": {"unschedulable": True}})
    assert caught.value.status == 429
    assert present(caught.value.headers, "the answer's headers")["Retry-After"] == "1"
    # Behaviour of the client, not the emulator: urllib3's default Retry honours Retry-After
    # on idempotent methods, so a GET answered 429 is retried once, transparently.
    emulator.fail_next(status=429, verb="get")
    assert meta(api.read_node("n1")).name == "n1"
    assert emulator.requests["get"] == 2


def test_latency_is_applied_per_request() -> None:
    waited: list[float] = []
    with Emulator([node("n1")], sleep=waited.append) as emulator:
        api = core(emulator)
        api.read_node("n1")
        assert waited == []
        emulator.latency = 0.05
        for _ in range(3):
            api.read_node("n1")
        assert waited == [0.05, 0.05, 0.05]
        assert emulator.latency == 0.05


def _fault_pattern(seed: int) -> list[int]:
    with Emulator([node("n1")]) as emu:
        emu.set_fault_rate(rate=0.3, seed=seed, statuses=(500, 503))
        api = core(emu)
        codes = []
        for _ in range(30):
            try:
                api.read_node("n1")
                codes.append(200)
            except ApiException as error:
                codes.append(error.status)
        return codes


def test_fault_rate_is_deterministic_for_a_seed() -> None:
    first = _fault_pattern(7)
    assert first == _fault_pattern(7)
    assert {500, 503, 200} >= set(first)
    assert 200 in first
    assert len([c for c in first if c != 200]) >= 3
    assert first != _fault_pattern(8)


def test_timeout_fault_drops_the_request(emulator: Emulator) -> None:
    emulator.put_object(node("n1"))
    emulator.set_fault_rate(rate=0.0, timeout_rate=1.0, timeout_delay=0.3)
    configuration = client.Configuration(host=emulator.url)
    configuration.retries = False
    api = client.CoreV1Api(client.ApiClient(configuration))
    with pytest.raises(urllib3.exceptions.HTTPError):
        api.read_node("n1", _request_timeout=0.1)
    emulator.clear_faults()
    assert meta(api.read_node("n1")).name == "n1"


RULES: list[dict[str, Any]] = [
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "patch"]},
    {"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]},
    {
        "apiGroups": ["karpenter.sh"],
        "resources": ["nodeclaims"],
        "verbs": ["delete"],
        "resourceNames": ["c1"],
    },
]


def test_rbac_forbids_what_the_rules_do_not_grant(emulator: Emulator) -> None:
    emulator.put_object(node("n1"))
    emulator.put_object(pod("p1"))
    emulator.put_object(nodeclaim("c1"))
    emulator.put_object(nodeclaim("c2"))
    emulator.enforce_rbac(RULES, user="system:serviceaccount:kube-system:lifeboat")
    api = core(emulator)
    api.patch_node("n1", {"spec": {"unschedulable": True}})
    with pytest.raises(ApiException) as caught:
        api.delete_node("n1")
    assert caught.value.status == 403
    assert json.loads(error_body(caught.value))["message"] == (
        'nodes "n1" is forbidden: User "system:serviceaccount:kube-system:lifeboat" cannot'
        ' delete resource "nodes" in API group "" at the cluster scope'
    )
    with pytest.raises(ApiException) as pods:
        api.delete_namespaced_pod("p1", "default")
    assert json.loads(error_body(pods.value))["message"].endswith('in the namespace "default"')
    objects = client.CustomObjectsApi(emulator.api_client())
    objects.delete_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", "c1")
    with pytest.raises(ApiException) as named:
        objects.delete_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", "c2")
    assert named.value.status == 403
    eviction = client.V1Eviction(metadata=client.V1ObjectMeta(name="p1", namespace="default"))
    api.create_namespaced_pod_eviction("p1", "default", eviction)
    emulator.enforce_rbac(None)
    api.delete_node("n1")
    assert {
        ("", "nodes", "patch"),
        ("", "nodes", "delete"),
        ("", "pods", "delete"),
        ("", "pods/eviction", "create"),
        ("karpenter.sh", "nodeclaims", "delete"),
    } == emulator.seen_permissions


def test_requests_are_counted_by_verb_and_resource(emulator: Emulator) -> None:
    emulator.put_object(node("n1"))
    emulator.put_object(pod("p1"))
    api = core(emulator)
    api.read_node("n1")
    api.list_namespaced_pod("default", field_selector="spec.nodeName=n1")
    api.patch_node("n1", {"spec": {"unschedulable": True}})
    api.delete_namespaced_pod("p1", "default")
    assert emulator.requests == {"get": 1, "list": 1, "patch": 1, "delete": 1}
    assert emulator.requests_by_resource[("list", "pods")] == 1
    assert emulator.request_log == [
        ("get", "", "nodes", "", "n1"),
        ("list", "", "pods", "default", ""),
        ("patch", "", "nodes", "", "n1"),
        ("delete", "", "pods", "default", "p1"),
    ]
    emulator.reset_counts()
    assert not emulator.requests
    assert not emulator.request_log


def test_keep_alive_reuses_one_connection(emulator: Emulator) -> None:
    emulator.put_object(node("n1"))
    api_client = emulator.api_client()
    api = client.CoreV1Api(api_client)
    for _ in range(20):
        api.read_node("n1")
    pool = api_client.rest_client.pool_manager.connection_from_url(emulator.url)
    assert pool.num_connections == 1


def test_large_cluster_lookups_are_indexed(monkeypatch: pytest.MonkeyPatch) -> None:
    objects = [node(f"n{i}", nodepool=f"pool{i % 10}") for i in range(5000)]
    objects += [pod(f"p{i}", node_name=f"n{i % 5000}") for i in range(15000)]
    examined: list[int] = []
    candidates = Store.candidates

    def counting(self: Store, *args: Any, **kwargs: Any) -> Iterable[Any]:
        found = list(candidates(self, *args, **kwargs))
        examined.append(len(found))
        return found

    monkeypatch.setattr(Store, "candidates", counting)
    with Emulator(objects) as emu:
        api = core(emu)
        for i in range(50):
            found = api.list_pod_for_all_namespaces(field_selector=f"spec.nodeName=n{i}")
            assert len(found.items) == 3
            api.patch_node(f"n{i}", {"spec": {"unschedulable": True}})
        pool = api.list_node(label_selector="karpenter.sh/nodepool=pool3")
        assert len(pool.items) == 500
    # Each list read only what its index names (3 pods of a node, 500 nodes of a pool), not
    # the 15,000 pods or 5,000 nodes a scan would read.
    assert examined and max(examined) == 500
    assert examined.count(3) >= 50


def test_load_dump_round_trip(tmp_path: Path) -> None:
    source = tmp_path / "cluster.yaml"
    claim = nodeclaim("c1")
    source.write_text(
        cyaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [pod("p1"), node("n1")]})
        + "---\n"
        + cyaml.safe_dump_all([None, claim, pdb("web", minAvailable=1)])
    )
    loaded = load_cluster_file(source)
    assert [o["kind"] for o in loaded] == ["Pod", "Node", "NodeClaim", "PodDisruptionBudget"]
    emu = Emulator.from_file(source)
    dumped = tmp_path / "out.yaml"
    dump_cluster_file(emu.dump(), dumped)
    again = load_cluster_file(dumped)
    assert [o["kind"] for o in again] == ["Node", "NodeClaim", "Pod", "PodDisruptionBudget"]
    for original in loaded:
        match = next(o for o in again if o["kind"] == original["kind"])
        for field in ("spec", "status"):
            if field in original and original["kind"] != "PodDisruptionBudget":
                assert match[field] == original[field]
        assert match["metadata"]["uid"]
        assert match["metadata"]["resourceVersion"]
        assert match["metadata"]["creationTimestamp"]
    assert (
        next(o for o in again if o["kind"] == "PodDisruptionBudget")["status"]["disruptionsAllowed"]
        == 0
    )
    Emulator(again)  # a dumped file loads again
    dump_cluster_file(again, tmp_path / "second.yaml")
    assert (tmp_path / "second.yaml").read_text() == dumped.read_text()


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ({"kind": "Node", "metadata": {"name": "n"}}, "document 1: missing apiVersion"),
        ({"apiVersion": "v1", "kind": "Node", "metadata": {}}, "missing metadata.name"),
        (
            {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "d"}},
            "unsupported kind 'Job'",
        ),
        (
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}},
            "missing spec.containers",
        ),
        (["not", "a", "mapping"], "expected a mapping"),
    ],
)
def test_cluster_file_errors_name_file_and_document(
    tmp_path: Path, document: Any, expected: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(cyaml.safe_dump_all([node("ok"), document]))
    with pytest.raises(ValueError, match=expected) as caught:
        load_cluster_file(path)
    assert str(path) in str(caught.value)
    assert "document 1" in str(caught.value)


def test_direct_store_access(emulator: Emulator) -> None:
    stored = emulator.put_object(node("n1"))
    assert emulator.objects("Node")[0]["metadata"]["uid"] == stored["metadata"]["uid"]
    again = emulator.put_object(node("n1"))
    assert int(again["metadata"]["resourceVersion"]) > int(stored["metadata"]["resourceVersion"])
    assert emulator.delete_object("Node", "n1")
    assert not emulator.delete_object("Node", "n1")
    # What is left are the namespaces every cluster has.
    assert {o["kind"] for o in emulator.objects()} == {"Namespace"}
    assert emulator.dump()["items"] == []
