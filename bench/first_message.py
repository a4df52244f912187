"""The first Spot warning after a cold start, against the second: what start-up left for the
first message to pay.

Deferring an import only helps if the first message does not load it anyway; otherwise the
cost moves from the init phase to the first warning, where it counts against the same
two-minute deadline. So a fresh interpreter imports the Lambda's module as the cold start
does (timed, network refused), then handles one Spot warning through
``app.lambda_handler`` and then another (each timed), with AWS served by a moto server and
the cluster by the Kubernetes API emulator, both on 127.0.0.1. ``extra_ms`` is the first
warning's time beyond the second's: the one-time work (lazy clients, first connections,
modules loaded on first use, listed in ``loaded_by_first``). Its wall time includes the
moto server's own first-request work (in the bench's process); ``extra_cpu_ms``, the
child's CPU, is the function's share.

Only ``eks:DescribeCluster`` is skipped (a network round trip, not start-up code, and moto's
clusters have no reachable endpoint): its answer, the emulator's endpoint, is given to the
service's ``EksAuth``, so the first warning still makes the cluster's client and the STS
client and mints the token, as a real first warning does (the emulator ignores the token).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from bench.cluster import CLUSTER, REGION, Cluster, build_cluster
from bench.coldstart import _PRELUDE, FUNCTION_DIR, LAMBDA_ENV, compile_sources
from bench.events import spot_interruption, sqs_record
from kubemu import Emulator
from lifeboat.model.notice import Kind

_CHILD = (
    "import socket\n"
    "_ALLOWED = (socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo)\n"
    + _PRELUDE
    + r"""
sys.path.insert(0, FUNCTION_DIR)
t0, c0 = time.perf_counter(), time.process_time()
import app
t1, c1 = time.perf_counter(), time.process_time()
assert app.service is not None, app.startup_error
socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo = _ALLOWED

# The cluster as eks:DescribeCluster would have described it (a network call, not measured):
# the first warning still makes the client, the STS client and mints the token, as it would.
from lifeboat.kube.eks_auth import ClusterInfo
app.service.clusters._auth.remember(ClusterInfo(
    name=CLUSTER, endpoint=EMULATOR, ca_data="unused: the emulator speaks plain HTTP"))

class Context:
    function_name = "lifeboat-interruption"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:lifeboat"
    aws_request_id = "bench"
    def get_remaining_time_in_millis(self):
        return 60000

def invoke(event):
    w, c = time.perf_counter(), time.process_time()
    response = app.lambda_handler(event, Context())
    assert response == {"batchItemFailures": []}, response
    return time.perf_counter() - w, time.process_time() - c

before = set(sys.modules)
first = invoke(EVENTS[0])
loaded = sorted(m for m in set(sys.modules) - before if "." not in m or m.startswith(
    ("lifeboat.", "aws_lambda_powertools.", "kubernetes.", "botocore.", "pydantic")))
second = invoke(EVENTS[1])
print(json.dumps({"import": [t1 - t0, c1 - c0], "first": first, "second": second,
                  "loaded_by_first": loaded}))
"""
)


@dataclass(frozen=True)
class Stage:
    """The AWS and Kubernetes endpoints the children talk to, and the warnings to send."""

    aws_url: str
    emulator: Emulator
    events: list[dict[str, Any]]
    cluster: Cluster


@contextmanager
def stage(runs: int) -> Iterator[Stage]:
    """A moto server holding the cluster's instances and the idempotency table, and the
    emulator serving the cluster; two Spot warnings (distinct instances) per run."""
    import logging

    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        aws_url = f"http://{host}:{port}"
        session = boto3.Session(
            aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION
        )
        ec2 = session.client("ec2", endpoint_url=aws_url)
        session.client("dynamodb", endpoint_url=aws_url).create_table(
            TableName=LAMBDA_ENV["LIFEBOAT_IDEMPOTENCY_TABLE"],
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        cluster = build_cluster(2 * runs + 2, pools=2, pods_per_node=1, asg_nodes=0, ec2=ec2)
        machines = cluster.karpenter
        events = [
            {"Records": [sqs_record(spot_interruption(machine))]}
            for machine in machines[: 2 * runs]
        ]
        with Emulator(cluster.objects) as emulator:
            yield Stage(aws_url, emulator, events, cluster)
    finally:
        server.stop()


def _check_acted(where: Stage, count: int) -> None:
    """Each warning was acted on (its node tainted), not ignored: an ignored warning would
    time nothing worth timing."""
    from lifeboat.kube.client import KubeApi
    from lifeboat.marks.node_marks import taint_key

    kube = KubeApi(where.emulator.api_client())
    key = taint_key(Kind.SPOT_INTERRUPTION)
    for machine in where.cluster.karpenter[:count]:
        node = kube.get_node(machine.node_name) or {}
        taints = (node.get("spec") or {}).get("taints") or []
        if not any(taint.get("key") == key for taint in taints):
            raise RuntimeError(f"first-message bench: node {machine.node_name} was not tainted")


def _child(code: str, env_extra: dict[str, str], python: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "LIFEBOAT_"))}
    env.pop("_X_AMZN_TRACE_ID", None)
    env.update(LAMBDA_ENV, **env_extra)
    done = subprocess.run(
        [python, "-c", code], env=env, capture_output=True, text=True, timeout=180, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"first-message child failed: {done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def first_message(
    runs: int = 5, *, function_dir: str = str(FUNCTION_DIR), python: str = sys.executable
) -> dict[str, Any]:
    """Median over ``runs`` fresh interpreters of: the import, the first and the second
    Spot warning (ms, wall and CPU). ``function_dir``/``python``: another checkout's handler
    and virtualenv, to compare with (``python -m bench.first_message --help``)."""
    compile_sources()
    results = []
    with stage(runs) as where:
        for run in range(runs):
            code = (
                _CHILD.replace("FUNCTION_DIR", repr(function_dir))
                .replace("EMULATOR", repr(where.emulator.url))
                .replace("CLUSTER", repr(CLUSTER))
                .replace("EVENTS", json.dumps(where.events[2 * run : 2 * run + 2]))
            )
            results.append(_child(code, {"AWS_ENDPOINT_URL": where.aws_url}, python))
        _check_acted(where, 2 * runs)

    def median_ms(key: str, index: int) -> float:
        return round(float(statistics.median(r[key][index] for r in results)) * 1000, 1)

    extra = [r["first"][0] - r["second"][0] for r in results]
    extra_cpu = [r["first"][1] - r["second"][1] for r in results]
    return {
        "runs": runs,
        "import_ms": median_ms("import", 0),
        "first_ms": median_ms("first", 0),
        "second_ms": median_ms("second", 0),
        "extra_ms": round(statistics.median(extra) * 1000, 1),
        "first_cpu_ms": median_ms("first", 1),
        "second_cpu_ms": median_ms("second", 1),
        "extra_cpu_ms": round(statistics.median(extra_cpu) * 1000, 1),
        "loaded_by_first": sorted({m for r in results for m in r["loaded_by_first"]}),
    }


def main() -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--function-dir", default=str(FUNCTION_DIR))
    parser.add_argument("--python", default=sys.executable, help="another checkout's venv")
    args = parser.parse_args()
    result = first_message(args.runs, function_dir=args.function_dir, python=args.python)
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
