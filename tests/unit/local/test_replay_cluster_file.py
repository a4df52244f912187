"""The cluster file as ``lifeboat replay`` (and serve, explain, status) reads it: JSON through
the json module, YAML through libyaml's parser, the same objects either way, and a clear error
for what the API could not carry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from kubemu import clusterfile
from lifeboat_local import source
from lifeboat_local.common import UsageError

SAMPLE = Path(__file__).resolve().parents[3] / "events" / "cluster.yaml"


def test_a_kubectl_json_file_is_not_parsed_as_yaml(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`kubectl get -o json` output: PyYAML would read it too, an order of magnitude slower."""
    from_yaml = source.read_cluster_file(SAMPLE).objects
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(clusterfile.as_list(from_yaml)))

    def no_yaml(*args: object, **kwargs: object) -> None:
        raise AssertionError("a JSON cluster file went through the YAML parser")

    monkeypatch.setattr(yaml, "load_all", no_yaml)  # the module source reads with
    from_json = source.read_cluster_file(path).objects
    assert sorted(map(json.dumps, from_json)) == sorted(map(json.dumps, from_yaml))


def test_broken_json_is_reported_with_its_line_as_yaml_would(tmp_path: Path) -> None:
    path = tmp_path / "cluster.json"
    path.write_text('{"apiVersion": "v1",\n "kind": "List",\n "items": [}\n')
    with pytest.raises(UsageError, match=r"not valid YAML at line 3, column \d+"):
        source.read_cluster_file(path)


def test_a_yaml_value_json_cannot_carry_is_a_clear_error(tmp_path: Path) -> None:
    """`!!binary` is valid YAML but no JSON value: named with its document, not a traceback."""
    path = tmp_path / "cluster.yaml"
    path.write_text(
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n  annotations:\n"
        "    blob: !!binary aGVsbG8=\n"
    )
    with pytest.raises(UsageError, match=r"cluster.yaml: document 0: a bytes value"):
        source.read_cluster_file(path)


def test_yaml_timestamps_become_rfc3339_strings(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n"
        "  creationTimestamp: 2026-12-01T14:00:00Z\n  labels: {1: yes}\n"
    )
    [node] = source.read_cluster_file(path).objects
    assert node["metadata"]["creationTimestamp"] == "2026-12-01T14:00:00Z"
    assert node["metadata"]["labels"] == {"1": True}  # YAML 1.1, keys as the API's strings


def test_yaml_is_read_with_libyaml_where_pyyaml_has_it() -> None:
    if not yaml.__with_libyaml__:
        pytest.skip("this PyYAML was built without libyaml")
    loader: object = source._Loader  # as an object: its declared type is SafeLoader
    assert loader is yaml.CSafeLoader
