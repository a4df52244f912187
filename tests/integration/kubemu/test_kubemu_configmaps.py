"""ConfigMaps on the emulator, through the official client: where a rotation keeps its state.

What a rotation relies on is the API server's optimistic concurrency (an update carrying a
stale ``metadata.resourceVersion`` is refused with 409 Conflict, ``GuaranteedUpdate`` in
k8s.io/apiserver's storage), 409 AlreadyExists on a second create of one name, and label
selectors on list; ``kubectl`` reads the result as it would on a real cluster.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from kubemu import Emulator, dump_cluster_file, load_cluster_file
from tests.support.kubeconfigs import write_kubeconfig
from tests.support.present import as_model, error_body, meta


def configmap(
    name: str, data: dict[str, str], labels: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "lifeboat", "labels": labels or {}},
        "data": data,
    }


@pytest.fixture
def emulator(emulator: Emulator) -> Emulator:
    """The shared emulator, with Lifeboat's namespace (deploy/rbac.yaml creates it)."""
    emulator.ensure_namespace("lifeboat")
    return emulator


def test_create_get_and_a_second_create_is_409_already_exists(emulator: Emulator) -> None:
    core = client.CoreV1Api(emulator.api_client())
    created = core.create_namespaced_config_map(
        "lifeboat", as_model(configmap("r1", {"a": "1"}), client.V1ConfigMap)
    )
    assert meta(created).resource_version
    assert core.read_namespaced_config_map("r1", "lifeboat").data == {"a": "1"}
    with pytest.raises(ApiException) as error:
        core.create_namespaced_config_map(
            "lifeboat", as_model(configmap("r1", {"a": "2"}), client.V1ConfigMap)
        )
    assert error.value.status == 409
    assert json.loads(error_body(error.value))["reason"] == "AlreadyExists"
    with pytest.raises(ApiException) as missing:
        core.read_namespaced_config_map("r1", "default")  # namespaced: not in another one
    assert missing.value.status == 404


def test_an_update_with_a_stale_resource_version_is_409_conflict(emulator: Emulator) -> None:
    core = client.CoreV1Api(emulator.api_client())
    first = core.create_namespaced_config_map(
        "lifeboat", as_model(configmap("r1", {"phase": "running"}), client.V1ConfigMap)
    )
    first.data = {"phase": "paused"}
    core.replace_namespaced_config_map("r1", "lifeboat", first)  # resourceVersion as read
    first.data = {"phase": "cancelled"}  # still carries the version read before the update
    with pytest.raises(ApiException) as error:
        core.replace_namespaced_config_map("r1", "lifeboat", first)
    assert error.value.status == 409
    assert core.read_namespaced_config_map("r1", "lifeboat").data == {"phase": "paused"}


def test_list_by_label_selector(emulator: Emulator) -> None:
    core = client.CoreV1Api(emulator.api_client())
    core.create_namespaced_config_map(
        "lifeboat",
        as_model(configmap("r1", {}, {"lifeboat.dev/rotation": "r1"}), client.V1ConfigMap),
    )
    core.create_namespaced_config_map(
        "lifeboat", as_model(configmap("other", {}, {"app": "x"}), client.V1ConfigMap)
    )
    found = core.list_namespaced_config_map("lifeboat", label_selector="lifeboat.dev/rotation")
    assert [meta(item).name for item in found.items] == ["r1"]


def test_configmaps_survive_a_cluster_file_round_trip(tmp_path: Path) -> None:
    with Emulator([configmap("r1", {"state.json": "{}"})]) as emu:
        dump_cluster_file(emu.dump(), tmp_path / "state.yaml")
    # The namespace the file's objects name is created on load, as a cluster file's are.
    [loaded] = [o for o in load_cluster_file(tmp_path / "state.yaml") if o["kind"] != "Namespace"]
    assert (loaded["kind"], loaded["data"]) == ("ConfigMap", {"state.json": "{}"})


def test_kubectl_reads_them(emulator: Emulator, tmp_path: Path) -> None:
    """The stock kubectl needs API discovery (``/api``), which only an emulator serving it
    answers; until then there is nothing to run kubectl against."""
    # The kubernetes client leaves request() unannotated.
    probe = emulator.api_client().rest_client.request("GET", f"{emulator.url}/api")  # type: ignore[no-untyped-call]
    if probe.status != 200:
        pytest.skip("this emulator serves no API discovery, which kubectl needs")
    client.CoreV1Api(emulator.api_client()).create_namespaced_config_map(
        "lifeboat", as_model(configmap("r1", {"summary": "running"}), client.V1ConfigMap)
    )
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", emulator.url)
    run = subprocess.run(
        [
            "kubectl",
            "--kubeconfig",
            str(kubeconfig),
            "get",
            "configmap",
            "r1",
            "-n",
            "lifeboat",
            "-o",
            "jsonpath={.data.summary}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (run.returncode, run.stdout) == (0, "running"), run.stderr
