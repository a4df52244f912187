"""Names as the API server validates them, and text output that cannot carry a terminal's
escape sequences (issue 23.5): a cluster file naming a node Kubernetes would reject (here
with an ANSI escape in it) is a usage error naming the document, the emulator refuses such a
name with the API server's 422, and whatever reaches ``lifeboat replay``'s table is shown
with its control characters escaped."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from kubemu import Emulator
from kubemu.names import name_problem
from lifeboat_local.replay import printable
from tests.conftest import CliRun
from tests.support import cyaml
from tests.support.paths import EVENTS


@pytest.mark.parametrize(
    ("kind", "name", "valid"),
    [
        ("Node", "ip-10-0-1-11.ec2.internal", True),
        ("Node", "ip-10-0-1-11\x1b[2J", False),
        ("Node", "Upper.Case", False),
        ("Node", "a" * 254, False),
        ("Namespace", "team.a", False),  # a label, not a subdomain
        ("Namespace", "team-a", True),
        ("NodeClaim", "general-7xkqz", True),
    ],
)
def test_names_are_validated_as_the_api_server_validates_them(
    kind: str, name: str, valid: bool
) -> None:
    assert (name_problem(kind, name) is None) is valid


def test_the_emulator_refuses_a_name_kubernetes_would_reject(emulator: Emulator) -> None:
    api = client.CoreV1Api(emulator.api_client())
    body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="Bad_Name"))
    with pytest.raises(ApiException) as refused:
        api.create_namespaced_config_map("default", body)
    assert refused.value.status == 422
    status = json.loads(str(refused.value.body))
    assert status["message"].startswith(
        'ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": '
        "a lowercase RFC 1123 subdomain"
    )


def test_a_cluster_file_with_an_escape_in_a_node_name_is_a_usage_error(
    cli: Callable[..., CliRun], tmp_path: Path
) -> None:
    """Regression: node names Kubernetes would reject were accepted and printed raw."""
    objects = cyaml.safe_load((EVENTS / "cluster.yaml").read_text())
    hostile = copy.deepcopy(objects)
    node = next(o for o in hostile["items"] if o["kind"] == "Node")
    node["metadata"]["name"] = "ip-10-0-1-11\x1b]0;pwned\x07"
    cluster = tmp_path / "hostile.yaml"
    cluster.write_text(cyaml.safe_dump(hostile))
    run = cli("replay", EVENTS / "spot-interruption.json", "--cluster", cluster)
    assert run.code == 1
    assert "metadata.name: Invalid value" in run.err
    assert "\x1b" not in run.out


def test_text_output_shows_control_characters_escaped() -> None:
    assert printable("reason \x1b[2Jgone\x9b\x07 ok\tkept") == (
        "reason \\x1b[2Jgone\\x9b\\x07 ok\tkept"
    )
