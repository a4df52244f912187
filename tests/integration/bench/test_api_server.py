"""``bench.api_server.ServedEmulator``: the storms' emulator in a process of its own (issue
36), used through the real ``kubernetes`` client over HTTP as the in-process one is, and
answering the bench's questions (request log with times, objects, faults) from there.
Marked ``bench`` (``make bench-check``): each test spawns the server's interpreter."""

from __future__ import annotations

import time

import pytest
from kubernetes import client

from bench.api_server import ServedEmulator, ServerError
from bench.cluster import build_cluster

pytestmark = pytest.mark.bench


def test_the_served_emulator_answers_as_the_in_process_one() -> None:
    cluster = build_cluster(4, pools=1, pods_per_node=1, asg_nodes=0)
    name = cluster.machines[0].node_name
    with ServedEmulator(cluster.objects, latency=0.0) as emulator:
        api = client.CoreV1Api(emulator.api_client())
        emulator.reset_counts()
        before = time.perf_counter()
        api.patch_node(name, {"spec": {"unschedulable": True}})
        after = time.perf_counter()
        [((verb, _group, resource, _ns, patched), (arrived, answered))] = (
            emulator.timed_request_log()
        )
        assert (verb, resource, patched) == ("patch", "nodes", name)
        # The server's perf_counter is this process's clock (CLOCK_MONOTONIC).
        assert answered is not None
        assert before <= arrived <= answered <= after
        assert emulator.request_log == [("patch", "", "nodes", "", name)]
        assert emulator.answers["200"] == 1
        assert emulator.latency == 0.0
        node = emulator.get_object("Node", name)
        assert node is not None and node["spec"]["unschedulable"] is True
        assert len(emulator.objects("Node")) == 4


def test_an_error_in_the_server_is_raised_in_the_bench() -> None:
    with ServedEmulator([]) as emulator:
        with pytest.raises(ServerError, match="put_object: ValueError: unsupported"):
            emulator.put_object({"apiVersion": "v9", "kind": "Nothing", "metadata": {}})
        assert emulator.objects("Node") == []  # the server goes on
