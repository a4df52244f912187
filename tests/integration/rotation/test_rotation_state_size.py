"""A rotation's state fits in its ConfigMap at 2,000 nodes (issue 23.4), and the emulator
refuses what the API server refuses: a ConfigMap whose data passes 1 MiB (ValidateConfigMap,
``core.MaxSecretSize``: 422, ``[]: Too long``), an object etcd would not store (over its
1.5 MiB ``--max-request-bytes``: 413, "etcdserver: request is too large"), and a request
body over 3 MiB (the API server's ``limitedReadBody``: 413, "limit is 3145728").

Through the official client over HTTP to the emulator.
"""

from __future__ import annotations

import hashlib
import json
import socket
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from kubemu import Emulator
from lifeboat.kube.client import KubeApi, RetryPolicy
from lifeboat.rotation import store
from lifeboat.rotation.model import (
    NodePhase,
    Rotation,
    RotationNode,
    Workload,
    compact,
    to_json,
)
from lifeboat.rotation.request import RotationSpec

NAMESPACE = "lifeboat"
NOW = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)
NODES = 2000
IN_FLIGHT = 100  # maxInFlight's largest value (request.py: le=100)


def _uid(index: int, w: int) -> str:
    """A uid as random as the API server's (gzip gains little on them)."""
    digest = hashlib.sha256(f"{index}/{w}".encode()).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-4{digest[13:16]}-8{digest[17:20]}-{digest[20:32]}"


def _workloads(index: int, count: int) -> tuple[Workload, ...]:
    return tuple(
        Workload(
            kind="Deployment",
            namespace=f"team-{w % 17}",
            name=f"service-{index}-{w}",
            uid=_uid(index, w),
            labels={
                "app.kubernetes.io/name": f"service-{index}-{w}",
                "app.kubernetes.io/instance": f"service-{index}-{w}-production",
                "pod-template-hash": _uid(w, index)[:10],
            },
            ready_before=3,
            on_node=1,
        )
        for w in range(count)
    )


def _busy_rotation() -> Rotation:
    """2,000 busy nodes: the first finished with the 40 workloads they carried and a long
    note, the last 100 in flight, each with 60 workloads and 20 pods without a controller."""
    nodes = []
    for index in range(NODES):
        flying = index >= NODES - IN_FLIGHT
        nodes.append(
            RotationNode(
                name=f"ip-10-{index // 250}-{index % 250}-{index % 7}.eu-west-1.compute.internal",
                instance_id=f"i-{index:017x}",
                nodeclaim=f"general-{index:05d}",
                phase=NodePhase.RESCHEDULING if flying else NodePhase.DONE,
                since=NOW,
                gate_started=NOW - timedelta(minutes=5),
                workloads=_workloads(index, 60 if flying else 40),
                unmanaged=tuple(f"jobs/batch-{index}-{p}" for p in range(20)) if flying else (),
                note="drained; its 40 pod(s) of 40 workload(s) run Ready elsewhere " + "x" * 240,
            )
        )
    spec = RotationSpec(name="fleet", labels={"team": "all"}, max_in_flight=IN_FLIGHT)
    return Rotation(spec, "request-1", NOW, tuple(nodes), updated=NOW)


def _data_bytes(configmap: dict[str, object]) -> int:
    data = configmap.get("data") or {}
    binary = configmap.get("binaryData") or {}
    assert isinstance(data, dict) and isinstance(binary, dict)
    return sum(len(str(v).encode()) for v in data.values()) + sum(
        len(str(v)) * 3 // 4 for v in binary.values()
    )


def test_a_rotation_of_2000_busy_nodes_fits_its_configmap() -> None:
    """Regression: the whole state, finished nodes' workloads included, went into one
    ConfigMap; past ~172 busy nodes the API server refused every write and the rotation
    wedged. Stored compacted (and gzipped past 256 KiB), it stays well below 1 MiB."""
    rotation = _busy_rotation()
    # What the state used to be: far past the limit, so this test can fail.
    assert len(to_json(rotation)) > 4 * 1024 * 1024
    with Emulator() as emu:
        emu.ensure_namespace(NAMESPACE)
        kube = KubeApi(emu.api_client(), RetryPolicy(attempts=1))
        created = store.create(kube, NAMESPACE, rotation)
        assert created is not None
        first = emu.get_object("ConfigMap", store.configmap_name("fleet"), NAMESPACE)
        assert first is not None
        print(f"2,000 nodes, {IN_FLIGHT} in flight: {_data_bytes(first)} bytes stored")
        assert _data_bytes(first) < 1024 * 1024 // 2
        assert created.rotation == compact(rotation)
        # Every in-flight node keeps what its health gate waits for.
        flying = created.rotation.in_phase(NodePhase.RESCHEDULING)
        assert len(flying) == IN_FLIGHT
        assert all(len(n.workloads) == 60 and len(n.unmanaged) == 20 for n in flying)
        # And the next write (all but one node now done) still fits.
        last = flying[-1]
        finished = rotation.with_nodes(
            replace(n, phase=NodePhase.DONE) for n in rotation.nodes if n.name != last.name
        )
        saved = store.save(kube, NAMESPACE, created, finished)
        assert saved.rotation == compact(finished)
        stored = emu.get_object("ConfigMap", store.configmap_name("fleet"), NAMESPACE)
        assert stored is not None
        size = _data_bytes(stored)
        print(f"2,000 nodes, 1 in flight: {size} bytes stored")
        assert size < 1024 * 1024 // 2, size
        # kubectl describe still shows the one-line summary.
        assert stored["data"][store.SUMMARY_KEY].startswith("running: 1999 of 2000 node(s) done")


def test_a_small_rotation_is_stored_readable() -> None:
    rotation = replace(_busy_rotation(), nodes=_busy_rotation().nodes[:3])
    with Emulator() as emu:
        emu.ensure_namespace(NAMESPACE)
        kube = KubeApi(emu.api_client(), RetryPolicy(attempts=1))
        assert store.create(kube, NAMESPACE, rotation) is not None
        stored = emu.get_object("ConfigMap", store.configmap_name("fleet"), NAMESPACE)
        assert stored is not None and "binaryData" not in stored
        assert json.loads(stored["data"][store.STATE_KEY])["spec"]["name"] == "fleet"


def _configmap(name: str, data: dict[str, str]) -> client.V1ConfigMap:
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name), data=data)


def test_the_emulator_refuses_a_configmap_past_1_mib(emulator: Emulator) -> None:
    """ValidateConfigMap: data and binaryData together at most core.MaxSecretSize."""
    api = client.CoreV1Api(emulator.api_client())
    api.create_namespaced_config_map("default", _configmap("fits", {"a": "x" * (1024 * 1024)}))
    with pytest.raises(ApiException) as refused:
        api.create_namespaced_config_map(
            "default", _configmap("big", {"a": "x" * (1024 * 1024), "b": "y"})
        )
    assert refused.value.status == 422
    status = json.loads(str(refused.value.body))
    assert status["reason"] == "Invalid"
    assert status["message"] == (
        'ConfigMap "big" is invalid: []: Too long: must have at most 1048576 bytes'
    )
    assert emulator.get_object("ConfigMap", "big", "default") is None


def test_the_emulator_refuses_an_object_etcd_would_not_store(emulator: Emulator) -> None:
    api = client.CoreV1Api(emulator.api_client())
    container = client.V1Container(
        name="c", image="busybox", env=[client.V1EnvVar(name="BIG", value="x" * 1_600_000)]
    )
    pod = client.V1Pod(
        metadata=client.V1ObjectMeta(name="huge"), spec=client.V1PodSpec(containers=[container])
    )
    with pytest.raises(ApiException) as refused:
        api.create_namespaced_pod("default", pod)
    assert refused.value.status == 413
    status = json.loads(str(refused.value.body))
    assert status["reason"] == "RequestEntityTooLarge"
    assert status["message"] == "Request entity too large: etcdserver: request is too large"
    assert emulator.get_object("Pod", "huge", "default") is None


def test_the_emulator_refuses_a_body_past_3_mib_unread(emulator: Emulator) -> None:
    """The headers announce 4 MiB; the answer comes before a byte of the body is sent."""
    host, port = emulator.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as connection:
        connection.sendall(
            b"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\n"
            b"Host: " + host.encode() + b"\r\nContent-Type: application/json\r\n"
            b"Content-Length: " + str(4 * 1024 * 1024).encode() + b"\r\n\r\n"
        )
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.split(b"\r\n")[0] == b"HTTP/1.1 413 Request Entity Too Large"
    status = json.loads(body)
    assert (status["reason"], status["message"]) == (
        "RequestEntityTooLarge",
        "Request entity too large: limit is 3145728",
    )
