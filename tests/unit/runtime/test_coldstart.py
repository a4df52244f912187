"""The Lambda entry point in a fresh interpreter, as Lambda starts it: what its import loads
(and does not), and X-Ray tracing, loaded only for a sampled invocation, whose subsegments
carry the annotations an operator searches by.

Each test runs a child Python (so ``sys.modules`` starts empty and the X-Ray SDK's global
patching of botocore and http.client stays out of this process). The X-Ray daemon is a UDP
socket on 127.0.0.1 that the child's SDK sends its segments to (``AWS_XRAY_DAEMON_ADDRESS``),
as the daemon beside a Lambda function receives them.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
FUNCTION_DIR = ROOT / "functions" / "interruption"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.coldstart import LAMBDA_ENV as COLD_START_ENV  # noqa: E402

# What template.yaml gives the function (bench/coldstart.py keeps the list), one cluster.
LAMBDA_ENV = {**COLD_START_ENV, "LIFEBOAT_CLUSTERS": "prod"}

IMPORT_APP = f"""
import json, sys
sys.path.insert(0, {str(FUNCTION_DIR)!r})
import app
assert app.service is not None, app.startup_error
print(json.dumps(sorted(sys.modules)))
"""

# SnapStart's hook before the snapshot (clusters left out: describing one is a network call).
BEFORE_SNAPSHOT = f"""
import json, sys
sys.path.insert(0, {str(FUNCTION_DIR)!r})
import app
assert app.service is not None, app.startup_error
app.service.clusters = None
before = set(sys.modules)
app.service.before_snapshot()
print(json.dumps(sorted(set(sys.modules) - before)))
"""

# A sampled invocation of the real entry point; the service is a stand-in whose pipeline
# answers with two reports (the X-Ray part is what is under test).
INVOKE_SAMPLED = f"""
import json, os, sys
from datetime import UTC, datetime
sys.path.insert(0, {str(FUNCTION_DIR)!r})
import lifeboat.runtime.service as service
from lifeboat.flow.pipeline import MessageResult
from lifeboat.model.report import Outcome, Report
from lifeboat.model.settings import Settings

class Pipeline:
    ledger = None
    clock = staticmethod(lambda: datetime(2026, 12, 1, 14, 2, 30, tzinfo=UTC))
    def process(self, bodies, **_):
        return [MessageResult([Report("e-1", "spot-interruption", Outcome.ACTED, "replacing",
                                      instance_id="i-0a1b2c3d4e5f60001", cluster="prod",
                                      nodepool="general")]),
                MessageResult([Report("e-2", "rebalance-recommendation", Outcome.DEFERRED,
                                      "waiting", cluster="prod", nodepool="batch")])]

service.build_service = lambda env=None: service.Service(Pipeline(), Settings())
import app
loaded_at_import = "aws_xray_sdk" in sys.modules
event = {{"Records": [{{"messageId": m, "body": "{{}}"}} for m in ("m-1", "m-2")]}}
class Context:
    function_name = "lifeboat-interruption"; memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:lifeboat"
    aws_request_id = "req-1"
    def get_remaining_time_in_millis(self): return 60000
os.environ["_X_AMZN_TRACE_ID"] = (
    "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=SAMPLED"
)
response = app.lambda_handler(event, Context())
print(json.dumps({{"response": response, "loaded_at_import": loaded_at_import,
                  "loaded_after": "aws_xray_sdk" in sys.modules}}))
"""


def _child(code: str, extra_env: dict[str, str] | None = None) -> Any:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "LIFEBOAT_", "_X_"))}
    env.pop("POWERTOOLS_TRACE_DISABLED", None)
    env.update(LAMBDA_ENV, **(extra_env or {}))
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_entry_point_loads_nothing_a_spot_batch_does_not_use() -> None:
    """issue: cold start. Not at import: the X-Ray SDK (loaded for sampled invocations),
    the kubernetes package's kubeconfig/watch/stream machinery and PyYAML (the Lambda only
    needs kubernetes.client), Powertools' batch utility (asyncio and every event source's
    data classes), the NodePool budget and cron code (voluntary notices only), the planned
    rotation (an operator's commands and their wake-ups only), the parsers of every kind but
    the Spot warning's (each imported by its kind's first message), the sweep's reader and
    the wake-ups' handler."""
    loaded = set(_child(IMPORT_APP))
    assert {"kubernetes.client.rest", "kubernetes.client.configuration"} <= loaded
    not_expected = {
        # The generated ApiClient (its pydantic response model, the generated models):
        # KubeApi sends and reads plain JSON through the REST layer.
        "kubernetes.client.api_client",
        "kubernetes.client.api_response",
        "kubernetes.client.models",
        # AWS's events are read without pydantic; wake-ups and rotation commands load it.
        "pydantic",
        "lifeboat.events.models",
        "lifeboat.wakeup.format",
        "aws_xray_sdk",
        "kubernetes.config",
        "kubernetes.watch",
        "kubernetes.stream",
        "yaml",
        "asyncio",
        "aws_lambda_powertools.utilities.batch",
        "lifeboat.karpenter.budgets",
        "lifeboat.karpenter.cron",
        "croniter",
        # A rotation's models, planning and state store: only for the rotation's messages.
        "lifeboat.rotation.request",
        "lifeboat.rotation.runner",
        "lifeboat.rotation.model",
        "lifeboat.flow.rotation_nodes",
        # Every other kind's parser: imported by its kind's first message
        # (lifeboat.events.registry).
        "lifeboat.events.rebalance_recommendation",
        "lifeboat.events.scheduled_change",
        "lifeboat.events.state_change",
        "lifeboat.events.capacity_reservation",
        "lifeboat.events.asg_lifecycle",
        "lifeboat.events.instance_impaired",
        "lifeboat.events.ec2_scheduled_event",
        # The sweep's reader (EC2's statuses, its holds, its triage, the hand-overs it takes
        # over) and the wake-ups' handler: imported by the first sweep or wake-up.
        "lifeboat.events.instance_status",
        "lifeboat.flow.sweep_request",
        "lifeboat.flow.sweep_holds",
        "lifeboat.flow.sweep_triage",
        "lifeboat.flow.handover_sweep",
        "lifeboat.flow.wake",
        "lifeboat.decide.wakeups",
    }
    assert loaded & not_expected == set()


def test_a_snapshot_holds_what_a_plain_cold_start_leaves_to_first_use() -> None:
    """issue 36: what start-up leaves to each kind's first message costs a SnapStart
    environment nothing: the hook before the snapshot imports it."""
    loaded = set(_child(BEFORE_SNAPSHOT))
    assert {
        "lifeboat.events.asg_lifecycle",
        "lifeboat.events.scheduled_change",
        "lifeboat.events.state_change",
        "lifeboat.events.capacity_reservation",
        "lifeboat.events.rebalance_recommendation",
        "lifeboat.events.instance_status",
        "lifeboat.flow.sweep_request",
        "lifeboat.flow.wake",
        "lifeboat.wakeup.format",
    } <= loaded


# Every kind of AWS warning, parsed in a fresh interpreter as the Lambda parses them; then a
# wake-up, the first message that needs pydantic.
PARSE_EVERY_KIND = f"""
import json, sys
from datetime import UTC, datetime
from pathlib import Path
sys.path.insert(0, {str(FUNCTION_DIR)!r})
import app
from lifeboat.events import parse_message
now = datetime(2026, 12, 1, 14, 3, tzinfo=UTC)
events = Path({str(ROOT / "events")!r})
kinds = []
for path in [*sorted(events.glob("*.json")), *sorted(events.glob("raw/*.json"))]:
    for notice in parse_message(path.read_text(), received_at=now):
        kinds.append(str(notice.kind))
before = "pydantic" in sys.modules
from lifeboat.wakeup.codec import Task, Wakeup, decode, encode
health = (events / "scheduled-change.json").read_text()
wakeup = Wakeup(Task.DECIDE, parse_message(health, received_at=now)[0], now)
assert decode(json.loads(encode(wakeup))) == wakeup
after = "pydantic" in sys.modules
print(json.dumps({{"kinds": sorted(set(kinds)), "before": before, "after": after}}))
"""


def test_no_aws_warning_loads_pydantic_a_wakeup_does() -> None:
    """issue: cold start. Deferring pydantic would be no gain if the first Spot warning
    loaded it anyway: every kind of AWS warning is read without it (lifeboat.events.base),
    and only Lifeboat's own wake-ups (and rotation commands) load it, when they come."""
    result = _child(PARSE_EVERY_KIND)
    assert {
        "spot-interruption",
        "rebalance-recommendation",
        "scheduled-change",
        "state-change",
        "capacity-reservation-interruption",
        "asg-termination",
    } <= set(result["kinds"])
    assert result["before"] is False
    assert result["after"] is True


def _daemon() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(0.5)
    return sock


def _segments(sock: socket.socket) -> list[dict[str, Any]]:
    received: list[dict[str, Any]] = []
    while True:
        try:
            data, _ = sock.recvfrom(65536)
        except TimeoutError:
            return received
        _header, _, body = data.decode().partition("\n")
        received.append(json.loads(body))


def _subsegments(segment: dict[str, Any]) -> list[dict[str, Any]]:
    found = [segment]
    for child in segment.get("subsegments", []):
        found += _subsegments(child)
    return found


def _invocation(sampled: bool) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(the child's result, every segment and subsegment the X-Ray daemon received)."""
    daemon = _daemon()
    try:
        port = daemon.getsockname()[1]
        result = _child(
            INVOKE_SAMPLED.replace("SAMPLED", "1" if sampled else "0"),
            {"AWS_XRAY_DAEMON_ADDRESS": f"127.0.0.1:{port}"},
        )
        segments = [s for seg in _segments(daemon) for s in _subsegments(seg)]
    finally:
        daemon.close()
    assert result["response"] == {"batchItemFailures": []}
    return result, segments


def test_a_sampled_invocation_is_traced_with_annotations_per_report() -> None:
    result, segments = _invocation(sampled=True)
    assert result["loaded_at_import"] is False and result["loaded_after"] is True
    annotated = {
        s["annotations"]["message_id"]: s["annotations"]
        for s in segments
        if "kind" in s.get("annotations", {})
    }
    assert annotated["m-1"] == {
        "kind": "spot-interruption",
        "cluster": "prod",
        "nodepool": "general",
        "outcome": "acted",
        "message_id": "m-1",
        "instance_id": "i-0a1b2c3d4e5f60001",
    }
    assert annotated["m-2"]["outcome"] == "deferred"
    assert any(s.get("name") == "## lambda_handler" for s in segments)


def test_an_unsampled_invocation_loads_no_tracer_and_sends_nothing() -> None:
    result, segments = _invocation(sampled=False)
    assert result["loaded_after"] is False
    assert segments == []
