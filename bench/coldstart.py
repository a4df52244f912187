"""Cold start: importing the Lambda's module, and building the service, in a fresh interpreter.

Each sample is a new ``python`` process (so nothing is cached in ``sys.modules``); the child
times itself with ``time.perf_counter`` and refuses every socket connection and DNS lookup,
so a build that would reach the network at start-up fails loudly instead of being timed.
"""

from __future__ import annotations

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
}

CHILD = r"""
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
sys.path.insert(0, FUNCTION_DIR)
t0, c0 = time.perf_counter(), time.process_time()
import app
t1, c1 = time.perf_counter(), time.process_time()
built = None
error = None
if BUILD:
    try:
        app.service()
    except Exception as exc:
        error = repr(exc)[:300]
    built = time.perf_counter()
c2 = time.process_time()
print(json.dumps({"import": t1 - t0, "build": (built - t1) if built else None,
                  "import_cpu": c1 - c0, "total_cpu": c2 - c0,
                  "network_attempts": attempts, "error": error,
                  "maxrss_kb": _peak_kb()}))
"""


def _child(build: bool, importtime: bool = False) -> tuple[dict[str, Any], str]:
    code = CHILD.replace("FUNCTION_DIR", repr(str(FUNCTION_DIR))).replace("BUILD", repr(build))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "LIFEBOAT_"))}
    env.update(LAMBDA_ENV)
    command = [sys.executable, *(["-X", "importtime"] if importtime else []), "-c", code]
    done = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"cold start child failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def _interpreter_start() -> float:
    import time

    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - started


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


def cold_start(runs: int = 5) -> dict[str, Any]:
    import_only = [_child(False)[0] for _ in range(runs)]
    imports = [i["import"] for i in import_only]
    builds = [_child(True)[0] for _ in range(runs)]
    _profile, stderr = _child(True, importtime=True)
    network = sorted({a for b in builds for a in b["network_attempts"]})
    errors = sorted({b["error"] for b in builds if b["error"]})
    totals = [b["import"] + (b["build"] or 0.0) for b in builds]
    return {
        "runs": runs,
        "python": sys.version.split()[0],
        "interpreter_start_ms": round(
            statistics.median(_interpreter_start() for _ in range(3)) * 1000, 1
        ),
        "import_ms": round(statistics.median(imports) * 1000, 1),
        "import_and_build_ms": round(statistics.median(totals) * 1000, 1),
        # CPU seconds of the child: far less sensitive to other load on the machine.
        "import_cpu_ms": round(statistics.median(i["import_cpu"] for i in import_only) * 1000, 1),
        "import_and_build_cpu_ms": round(
            statistics.median(b["total_cpu"] for b in builds) * 1000, 1
        ),
        "build_only_ms": round(statistics.median(b["build"] or 0.0 for b in builds) * 1000, 1),
        "network_calls_at_build": network,
        "build_errors": errors,
        "slowest_imports": top_imports(stderr),
        # The Lambda process after import + build (the bench process holds much more).
        "maxrss_after_build_mb": round(statistics.median(b["maxrss_kb"] for b in builds) / 1024, 1),
    }
