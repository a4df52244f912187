"""Cluster files load fast and alike: JSON through the json module, YAML through libyaml's
parser where PyYAML has it, and the same cluster gives the same objects either way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from kubemu import clusterfile, load_cluster_file

ROOT = Path(__file__).resolve().parents[3]
SAMPLE = ROOT / "events" / "cluster.yaml"


def test_yaml_is_read_with_libyaml_where_pyyaml_has_it() -> None:
    if not yaml.__with_libyaml__:
        pytest.skip("this PyYAML was built without libyaml")
    # As objects: mypy knows only the declared SafeLoader/SafeDumper types, not the C classes.
    loader: object = clusterfile._LOADER
    dumper: object = clusterfile._DUMPER
    assert loader is yaml.CSafeLoader
    # Written by libyaml's emitter, shared values spelled out (ExportDumper: no aliases).
    assert isinstance(dumper, type) and issubclass(dumper, yaml.CSafeDumper)
    assert dumper is clusterfile.ExportDumper


def test_the_same_cluster_as_yaml_and_as_json_gives_the_same_objects(tmp_path: Path) -> None:
    """What `kubectl get -o yaml` and `-o json` print for one cluster load identically:
    YAML timestamps become the RFC 3339 strings the API (and the JSON file) carries."""
    from_yaml = load_cluster_file(SAMPLE)
    as_json = tmp_path / "cluster.json"
    as_json.write_text(json.dumps(clusterfile.as_list(from_yaml)))
    assert sorted(map(json.dumps, load_cluster_file(as_json))) == sorted(map(json.dumps, from_yaml))
    assert all(isinstance(o["metadata"].get("creationTimestamp", ""), str) for o in from_yaml)


def test_a_json_file_is_parsed_by_the_json_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_yaml(*args: object, **kwargs: object) -> None:
        raise AssertionError("a JSON cluster file went through the YAML parser")

    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(clusterfile.as_list(load_cluster_file(SAMPLE))))
    monkeypatch.setattr(yaml, "load_all", no_yaml)  # the module clusterfile reads with
    assert [o["kind"] for o in load_cluster_file(path)]


def test_flow_style_yaml_that_is_not_json_still_loads_as_yaml(tmp_path: Path) -> None:
    path = tmp_path / "flow.yaml"
    path.write_text(
        "{apiVersion: v1, kind: List, items: [{apiVersion: v1, kind: Node, "
        "metadata: {name: n1}, spec: {unschedulable: yes}}]}\n"
    )
    [node] = load_cluster_file(path)
    assert node["spec"]["unschedulable"] is True  # YAML 1.1, as Kubernetes reads it
