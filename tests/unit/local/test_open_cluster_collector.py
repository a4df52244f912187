"""Opening a cluster file runs no cyclic collection between the first object parsed and the
cluster served (issue 36, item 3): each would scan the millions of containers a large file
has just become, to find no cycles, as parsed JSON and YAML have none. Once the cluster is
served its objects are frozen (``gc.freeze``): collections during the replay leave them out.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lifeboat_local.source import open_cluster


def _node(n: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"node-{n}", "labels": {"zone": "a", "n": str(n)}},
        "spec": {"providerID": f"aws:///us-east-1a/i-{n:017x}"},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """The generation of every cyclic collection started while the fixture is active."""
    started: list[int] = []

    def note(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started.append(info["generation"])

    gc.callbacks.append(note)
    try:
        yield started
    finally:
        gc.callbacks.remove(note)


def test_no_collection_while_a_cluster_file_is_read_and_served(
    tmp_path: Path, collections: list[int]
) -> None:
    # 2,000 nodes: tens of thousands of containers, far past the 700 allocations that start
    # a collection of the youngest generation whenever the collector is enabled.
    path = tmp_path / "cluster.json"
    path.write_text(
        json.dumps({"apiVersion": "v1", "kind": "List", "items": [_node(n) for n in range(2000)]})
    )
    assert gc.isenabled()
    collections.clear()  # those that writing the file started
    with open_cluster(path, None) as source:
        assert collections == []
        assert gc.isenabled()  # enabled again for the replay, the cluster frozen
        assert gc.get_freeze_count() > 2000 * 5
        assert source.emulator is not None
        assert len(source.emulator.view("Node")) == 2000
    assert gc.get_freeze_count() == 0  # handed back to the collector after
