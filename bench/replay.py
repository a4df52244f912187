"""Replay of a large cluster file: ``lifeboat replay`` of one Spot warning against a 5,000-node
cluster, as YAML and as JSON, against the floor of (a 10-node replay + ``json.load`` of the
5,000-node file): what any tool that reads the file and replays one event must pay.

Each measure runs in a fresh interpreter, as a user runs ``lifeboat replay`` (or a script
that loads the file with ``json.load``): in the bench's own process ``json.load`` took
between 0.3 and 1.2 s depending on the heap the earlier measures left (the garbage collector
scans it), so the floor, not the replay, decided the ratio. A replay is timed from the
import of the command line's entry point (``lifeboat_local.cli.main``) to its return, output
discarded; ``json.load`` from opening the file. Interpreter start-up is in neither. Each
measure is the median of a few runs.

The YAML file is written as exporters write one (``kubectl get -o yaml``, ``--state-out``):
no anchors or aliases. Until issue 36 it was PyYAML's dump of the bench's objects, which
share parts between objects, so it held 20,000 aliases no export holds, and rapidyaml's
alias resolution (0.3 s of lookups) was a third of what the YAML ratio measured beyond
JSON. That file is still replayed and reported (``yaml_aliased_*``), for information.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from bench.cluster import build_cluster
from kubemu.clusterfile import as_list, dump_cluster_file

SPOT = Path(__file__).resolve().parent.parent / "events" / "spot-interruption.json"
AT = "2026-12-01T14:02:30Z"  # 30 s after the sample's event time


def _write(folder: Path, nodes: int, pools: int, pods_per_node: int) -> tuple[Path, Path, str]:
    """The cluster as ``kubectl get -o yaml`` and ``-o json`` write it (and ``--state-out``:
    ``dump_cluster_file``): every object whole, no YAML anchors or aliases."""
    cluster = build_cluster(nodes, pools=pools, pods_per_node=pods_per_node)
    document = as_list(cluster.objects)
    as_yaml, as_json = folder / f"cluster-{nodes}.yaml", folder / f"cluster-{nodes}.json"
    dump_cluster_file(document, as_yaml)
    as_json.write_text(json.dumps(document))
    return as_yaml, as_json, cluster.karpenter[0].instance_id


def _write_aliased(folder: Path, nodes: int, pools: int, pods_per_node: int) -> Path:
    """The same cluster as PyYAML's own dumper writes it: the parts ``build_cluster`` shares
    between objects (a node's conditions with its claim, every claim's nodeClassRef and
    requirements) as anchors and 20,000 aliases at 5,000 nodes. No exporter writes that
    (kubectl and ``--state-out`` do not); measured for information: the cost of a file
    with aliases, which the reader bounds from the text before rapidyaml copies them."""
    cluster = build_cluster(nodes, pools=pools, pods_per_node=pods_per_node)
    aliased = folder / f"cluster-{nodes}-aliased.yaml"
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    aliased.write_text(yaml.dump(as_list(cluster.objects), Dumper=dumper, sort_keys=False))
    return aliased


_REPLAY = """
import contextlib, io, sys, time
started, cpu = time.perf_counter(), time.process_time()
from lifeboat_local.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main(sys.argv[1:])
if code == 0:
    print(time.perf_counter() - started, time.process_time() - cpu)
else:
    print(-code)
"""
_JSON_LOAD = """
import json, sys, time
started, cpu = time.perf_counter(), time.process_time()
with open(sys.argv[1]) as handle:
    json.load(handle)
print(time.perf_counter() - started, time.process_time() - cpu)
"""


def _fresh(script: str, *args: str) -> tuple[float, float]:
    """Seconds ``script`` reports, wall and CPU (its process's, every thread), run in a new
    interpreter with this one's path."""
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
        timeout=600,
    )
    said = [float(word) for word in done.stdout.strip().splitlines()[-1].split()]
    if said[0] < 0:
        raise RuntimeError(f"{args[0] if args else script} exited {-said[0]:.0f}: {done.stderr}")
    return said[0], said[1]


def _replay(cluster: Path, event: Path) -> tuple[float, float]:
    return _fresh(_REPLAY, "replay", str(event), "--cluster", str(cluster), "--at", AT, "--json")


def _json_load(path: Path) -> tuple[float, float]:
    return _fresh(_JSON_LOAD, str(path))


def _median(values: list[float]) -> float:
    return statistics.median(values)


def _medians(
    runs: int, measures: dict[str, Callable[[], tuple[float, float]]]
) -> tuple[dict[str, float], dict[str, float]]:
    """The median wall and CPU seconds of each measure, the measures taken in turn ``runs``
    times (so a change in the machine's load touches them alike)."""
    wall: dict[str, list[float]] = {name: [] for name in measures}
    cpu: dict[str, list[float]] = {name: [] for name in measures}
    for _ in range(runs):
        for name, measure in measures.items():
            seconds, cpu_seconds = measure()
            wall[name].append(seconds)
            cpu[name].append(cpu_seconds)
    return (
        {name: _median(values) for name, values in wall.items()},
        {name: _median(values) for name, values in cpu.items()},
    )


def replay_large_cluster(
    nodes: int = 5000, small: int = 10, runs: int = 3, pools: int = 20, pods_per_node: int = 3
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="lifeboat-bench-replay-") as scratch:
        folder = Path(scratch)
        big_yaml, big_json, instance = _write(folder, nodes, pools, pods_per_node)
        big_aliased = _write_aliased(folder, nodes, pools, pods_per_node)
        _, small_json, small_instance = _write(folder, small, pools, pods_per_node)
        assert instance == small_instance  # the same node is interrupted in both clusters
        event = folder / "spot.json"
        body = json.loads(SPOT.read_text())
        body["detail"]["instance-id"] = instance
        event.write_text(json.dumps(body))
        medians, cpus = _medians(
            runs,
            {
                "small": lambda: _replay(small_json, event),
                "json_load": lambda: _json_load(big_json),
                "json": lambda: _replay(big_json, event),
                "yaml": lambda: _replay(big_yaml, event),
                "yaml_aliased": lambda: _replay(big_aliased, event),
            },
        )
        floor = medians["small"] + medians["json_load"]
        cpu_floor = cpus["small"] + cpus["json_load"]
        return {
            "nodes": nodes,
            "objects": nodes * (2 + pods_per_node),
            "file_mb": {
                "yaml": round(big_yaml.stat().st_size / 2**20, 1),
                "json": round(big_json.stat().st_size / 2**20, 1),
            },
            "runs": runs,
            "small_replay_s": round(medians["small"], 3),
            "json_load_s": round(medians["json_load"], 3),
            "floor_s": round(floor, 3),
            "yaml_replay_s": round(medians["yaml"], 3),
            "json_replay_s": round(medians["json"], 3),
            "yaml_ratio": round(medians["yaml"] / floor, 2),
            "json_ratio": round(medians["json"] / floor, 2),
            # Information, no target: the same YAML with aliases (see _write_aliased).
            "yaml_aliased_mb": round(big_aliased.stat().st_size / 2**20, 1),
            "yaml_aliased_replay_s": round(medians["yaml_aliased"], 3),
            "yaml_aliased_ratio": round(medians["yaml_aliased"] / floor, 2),
            # Information: the same ratios in CPU time (each process's, every thread), much
            # less sensitive than wall time to what else the machine runs.
            "cpu_floor_s": round(cpu_floor, 3),
            "yaml_cpu_ratio": round(cpus["yaml"] / cpu_floor, 2),
            "json_cpu_ratio": round(cpus["json"] / cpu_floor, 2),
            "yaml_aliased_cpu_ratio": round(cpus["yaml_aliased"] / cpu_floor, 2),
        }
