"""Cold start: a fresh interpreter that imports the Lambda's module (which builds the
service), against the floor of any function that uses EC2 and DynamoDB: a fresh interpreter
that imports boto3 and creates those two clients.

The two are run alternately (floor, function, floor, function, ...), so a change in the
machine's load touches both alike, and the target is the median of the per-pair ratios.
Each child times itself with ``time.perf_counter`` (wall) and ``time.process_time`` (CPU,
much less sensitive to other load), and refuses every socket connection and DNS lookup, so
a start-up that would reach the network fails loudly instead of being timed.

Both sides run from bytecode, as the floor's boto3 does in Lambda's runtime: the function's
own sources (the handler and the ``lifeboat`` package) are compiled before the runs. Else, on
a machine with ``PYTHONDONTWRITEBYTECODE`` set, they alone would be compiled from source by
every child while every installed package is read from its ``.pyc``, and the ratio would
measure the compiler (about 0.2 of the floor) rather than the start-up. The deployed layer
does not ship bytecode yet (``layers/lifeboat/Makefile`` installs with ``--no-compile``, and
``/opt`` is read-only, so Lambda compiles every module of the layer at each cold start):
this measures the start-up the function has once the layer does.
"""

from __future__ import annotations

import compileall
import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FUNCTION_DIR = ROOT / "functions" / "interruption"
PACKAGE_DIR = ROOT / "layers" / "lifeboat" / "lifeboat"

# What template.yaml gives the function, with values that point nowhere.
LAMBDA_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_REGION": "us-east-1",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_LAMBDA_FUNCTION_NAME": "lifeboat-interruption",
    "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "512",
    "LAMBDA_TASK_ROOT": str(FUNCTION_DIR),
    "POWERTOOLS_SERVICE_NAME": "lifeboat",
    "POWERTOOLS_METRICS_NAMESPACE": "Lifeboat",
    "LIFEBOAT_CLUSTERS": "bench",
    "LIFEBOAT_LEASE_NAMESPACE": "lifeboat",
    "LIFEBOAT_ACCOUNT_ID": "123456789012",
    "LIFEBOAT_REGION": "us-east-1",
    "LIFEBOAT_IDEMPOTENCY_TABLE": "lifeboat-idempotency",
    "LIFEBOAT_SCHEDULE_GROUP": "lifeboat",
    "LIFEBOAT_SCHEDULER_ROLE_ARN": "arn:aws:iam::123456789012:role/lifeboat-scheduler",
    "LIFEBOAT_QUEUE_ARN": "arn:aws:sqs:us-east-1:123456789012:lifeboat-interruptions",
    "LIFEBOAT_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/lifeboat",
    "LIFEBOAT_DEAD_LETTER_QUEUE_ARN": "arn:aws:sqs:us-east-1:123456789012:lifeboat-dlq",
    "LIFEBOAT_NOTIFICATION_BUS": "default",
}

_PRELUDE = r"""
import json, socket, sys, time
attempts = []
def _peak_kb():
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss over from the parent across exec.
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0
def _refuse(*args, **kwargs):
    attempts.append(repr(args[1:2] or args)[:120])
    raise OSError("network access at start-up (refused by the benchmark)")
socket.socket.connect = _refuse
socket.socket.connect_ex = _refuse
socket.getaddrinfo = _refuse
"""

# The function: import app.py as Lambda does (the module builds the service at import).
FUNCTION = (
    _PRELUDE
    + r"""
sys.path.insert(0, FUNCTION_DIR)
t0, c0 = time.perf_counter(), time.process_time()
import app
t1, c1 = time.perf_counter(), time.process_time()
error = None if app.service is not None else repr(app.startup_error)[:300]
print(json.dumps({"wall": t1 - t0, "cpu": c1 - c0, "network_attempts": attempts,
                  "error": error, "maxrss_kb": _peak_kb(),
                  "loaded": sorted(m for m in ("aws_xray_sdk", "kubernetes.config",
                                               "kubernetes.client.api_client", "pydantic",
                                               "asyncio", "yaml") if m in sys.modules)}))
"""
)

# The floor: what any function using EC2 and DynamoDB pays.
FLOOR = (
    _PRELUDE
    + r"""
t0, c0 = time.perf_counter(), time.process_time()
import boto3
session = boto3.Session()
session.client("ec2", region_name="us-east-1")
session.client("dynamodb", region_name="us-east-1")
t1, c1 = time.perf_counter(), time.process_time()
print(json.dumps({"wall": t1 - t0, "cpu": c1 - c0, "network_attempts": attempts,
                  "error": None, "maxrss_kb": _peak_kb(), "loaded": []}))
"""
)


def _child(code: str, importtime: bool = False) -> tuple[dict[str, Any], str]:
    code = code.replace("FUNCTION_DIR", repr(str(FUNCTION_DIR)))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "LIFEBOAT_"))}
    env.pop("_X_AMZN_TRACE_ID", None)
    env.update(LAMBDA_ENV)
    command = [sys.executable, *(["-X", "importtime"] if importtime else []), "-c", code]
    done = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"cold start child failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def top_imports(stderr: str, count: int = 10) -> list[dict[str, Any]]:
    """Where import time goes: ``-X importtime`` self times, added up per top-level package
    (cumulative times would charge everything to whichever module happened to import first)."""
    totals: dict[str, int] = {}
    pattern = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|\s*(\S+)")
    for line in stderr.splitlines():
        match = pattern.match(line)
        if match:
            name = match.group(3).split(".")[0]
            totals[name] = totals.get(name, 0) + int(match.group(1))
    ranked = sorted(totals.items(), key=lambda kv: -kv[1])[:count]
    return [{"module": name, "ms": round(us / 1000, 1)} for name, us in ranked]


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def compile_sources() -> None:
    """Bytecode for the function's own sources (installed packages have theirs already)."""
    for directory in (FUNCTION_DIR, PACKAGE_DIR):
        if not compileall.compile_dir(directory, quiet=1):
            raise RuntimeError(f"cold start: {directory} does not compile")


def cold_start(runs: int = 7) -> dict[str, Any]:
    compile_sources()
    floors: list[dict[str, Any]] = []
    functions: list[dict[str, Any]] = []
    for _ in range(runs):
        floors.append(_child(FLOOR)[0])
        functions.append(_child(FUNCTION)[0])
    _profile, stderr = _child(FUNCTION, importtime=True)
    wall_ratios = [f["wall"] / b["wall"] for f, b in zip(functions, floors, strict=True)]
    cpu_ratios = [f["cpu"] / b["cpu"] for f, b in zip(functions, floors, strict=True)]
    return {
        "runs": runs,
        "python": sys.version.split()[0],
        "floor": "import boto3; Session().client('ec2'); Session().client('dynamodb')",
        "floor_ms": _ms(statistics.median(b["wall"] for b in floors)),
        "function_ms": _ms(statistics.median(f["wall"] for f in functions)),
        "ratio": round(statistics.median(wall_ratios), 3),
        "floor_cpu_ms": _ms(statistics.median(b["cpu"] for b in floors)),
        "function_cpu_ms": _ms(statistics.median(f["cpu"] for f in functions)),
        "cpu_ratio": round(statistics.median(cpu_ratios), 3),
        "network_calls_at_start": sorted({a for f in functions for a in f["network_attempts"]}),
        "start_errors": sorted({f["error"] for f in functions if f["error"]}),
        # Modules the function must not load at start-up, found loaded (should be empty).
        "deferred_modules_loaded": sorted({m for f in functions for m in f["loaded"]}),
        "slowest_imports": top_imports(stderr),
        "maxrss_mb": round(statistics.median(f["maxrss_kb"] for f in functions) / 1024, 1),
    }
