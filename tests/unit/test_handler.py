"""``lifeboat.handler.handle_batch`` on a fake pipeline, and the Lambda entry point
``functions/interruption/app.py`` with its Powertools wiring, on the Kubernetes emulator."""

from __future__ import annotations

import importlib.util
import json
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError
from cfnlint.decode import decode_str  # type: ignore[import-untyped]

import lifeboat.service
from kubemu import Emulator, load_cluster_file
from lifeboat.handler import handle_batch
from lifeboat.kube import KubeApi, RetryPolicy
from lifeboat.ledger import MemoryLedger
from lifeboat.pipeline import MessageResult, OneCluster, Pipeline
from lifeboat.report import Outcome, Report
from lifeboat.service import Service
from lifeboat.settings import Settings, load_settings
from lifeboat_local.directory import directory_from_objects

ROOT = Path(__file__).resolve().parents[2]
EVENTS = ROOT / "events"
NOW = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)
EVENT_TIME = NOW - timedelta(seconds=3)


# --- fakes ----------------------------------------------------------------------------------


@dataclass
class FakePipeline:
    """Answers each body with the result scripted for it."""

    results: dict[str, MessageResult]
    clock: Any = lambda: NOW
    seen: list[Sequence[Any]] = field(default_factory=list)

    def process(self, bodies: Sequence[Any]) -> list[MessageResult]:
        self.seen.append(list(bodies))
        return [self.results[body] for body in bodies]


@dataclass
class Metrics:
    emitted: list[tuple[str, float, str, dict[str, str]]] = field(default_factory=list)

    def emit(self, name: str, value: float, unit: str, dimensions: dict[str, str]) -> None:
        self.emitted.append((name, value, unit, dimensions))

    def named(self, name: str) -> list[tuple[float, str, dict[str, str]]]:
        return [(v, u, d) for n, v, u, d in self.emitted if n == name]


def record(message_id: str, body: str) -> dict[str, Any]:
    return {
        "messageId": message_id,
        "receiptHandle": f"handle-{message_id}",
        "body": body,
        "attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": "1796133720412"},
        "messageAttributes": {},
        "md5OfBody": "0" * 32,
        "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:lifeboat-queue",
        "awsRegion": "us-east-1",
    }


def report(outcome: Outcome, kind: str = "spot-interruption", **fields: Any) -> Report:
    fields.setdefault("event_time", EVENT_TIME)
    return Report("ev-1", kind, outcome, f"because {outcome}", instance_id="i-1", **fields)


ACTED = report(
    Outcome.ACTED,
    actions=({"type": "taint", "key": "k", "effect": "NoSchedule"}, {"type": "cordon"}),
)
DEFERRED = report(Outcome.DEFERRED, kind="rebalance-recommendation", deferred_until=NOW)
UNMANAGED = report(Outcome.IGNORED, kind="state-change", unmanaged=True)
REJECTED = Report.rejected("detail.instance-id: field required", "ev-bad")


def pipeline_for(**bodies: MessageResult) -> tuple[FakePipeline, dict[str, Any]]:
    event = {"Records": [record(f"m-{body}", body) for body in bodies]}
    return FakePipeline(dict(bodies)), event


# --- handle_batch -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "event",
    [
        {},
        {"records": []},
        {"Records": "nope"},
        {"Records": None},
        {"Records": []},
        {"Records": ["not a record"]},
        [],
        "text",
    ],
)
def test_an_event_that_is_not_an_sqs_batch_raises_a_clear_error(event: Any) -> None:
    pipeline = FakePipeline({})
    with pytest.raises(ValueError, match="Invalid event format: expected an SQS batch event"):
        handle_batch(event, None, pipeline)  # type: ignore[arg-type]
    assert pipeline.seen == []


def test_every_body_goes_to_one_pipeline_call_in_order() -> None:
    pipeline, event = pipeline_for(a=MessageResult([ACTED]), b=MessageResult([DEFERRED]))
    assert handle_batch(event, None, pipeline) == {"batchItemFailures": []}  # type: ignore[arg-type]
    assert pipeline.seen == [["a", "b"]]


def test_rejected_records_are_deleted_and_logged_as_warnings(
    caplog: pytest.LogCaptureFixture,
) -> None:
    pipeline, event = pipeline_for(good=MessageResult([ACTED]), bad=MessageResult([REJECTED]))
    with caplog.at_level(logging.INFO, logger="lifeboat"):
        response = handle_batch(event, None, pipeline)  # type: ignore[arg-type]
    assert response == {"batchItemFailures": []}
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    decision = warnings[0].decision  # type: ignore[attr-defined]
    assert decision["outcome"] == "rejected"
    assert decision["reason"] == "detail.instance-id: field required"
    infos = [r for r in caplog.records if r.levelno == logging.INFO]
    assert [r.decision["outcome"] for r in infos] == ["acted"]  # type: ignore[attr-defined]


def test_a_record_that_raised_is_a_batch_item_failure_and_only_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    pipeline, event = pipeline_for(
        ok=MessageResult([ACTED]),
        boom=MessageResult(error=RuntimeError("api server said 500")),
        skip=MessageResult([UNMANAGED]),
    )
    with caplog.at_level(logging.INFO, logger="lifeboat"):
        response = handle_batch(event, None, pipeline)  # type: ignore[arg-type]
    assert response == {"batchItemFailures": [{"itemIdentifier": "m-boom"}]}
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert any(getattr(r, "message_id", None) == "m-boom" for r in errors)
    assert any("api server said 500" in getattr(r, "error", "") for r in errors)


def test_metrics_per_report() -> None:
    pipeline, event = pipeline_for(
        a=MessageResult([ACTED, DEFERRED]),
        b=MessageResult([UNMANAGED]),
        c=MessageResult([REJECTED]),
    )
    metrics = Metrics()
    handle_batch(event, None, pipeline, metrics=metrics)  # type: ignore[arg-type]

    kinds = sorted(d["kind"] for _, _, d in metrics.named("NoticesReceived"))
    assert kinds == ["rebalance-recommendation", "spot-interruption", "state-change", "unsupported"]
    outcomes = sorted(d["outcome"] for _, _, d in metrics.named("Outcomes"))
    assert outcomes == ["acted", "deferred", "ignored", "rejected"]
    assert sorted(d["action"] for _, _, d in metrics.named("Actions")) == ["cordon", "taint"]
    # Latency only for what was acted on: from the event's time to now, in milliseconds.
    assert metrics.named("ReactionLatency") == [
        (3000.0, "Milliseconds", {"kind": "spot-interruption"})
    ]
    assert metrics.named("UnmanagedInstances") == [(1, "Count", {"kind": "state-change"})]
    assert all(unit == "Count" for n, _, unit, _ in metrics.emitted if n != "ReactionLatency")


def test_metrics_are_emitted_for_the_reports_of_a_failed_record_too() -> None:
    """A message can act on one instance and fail on the next: what was done is counted."""
    pipeline, event = pipeline_for(
        x=MessageResult([ACTED], error=RuntimeError("second failed")),
        y=MessageResult([DEFERRED]),
    )
    metrics = Metrics()
    response = handle_batch(event, None, pipeline, metrics=metrics)  # type: ignore[arg-type]
    assert response == {"batchItemFailures": [{"itemIdentifier": "m-x"}]}
    assert [d["outcome"] for _, _, d in metrics.named("Outcomes")] == ["acted", "deferred"]


def test_when_every_record_fails_the_invocation_fails() -> None:
    """Powertools' default, kept on purpose: the whole batch returns to the queue either
    way, and a failed invocation shows on the function's Errors alarm at once instead of
    only when messages reach the dead-letter queue."""
    pipeline, event = pipeline_for(
        x=MessageResult(error=RuntimeError("api down")),
        y=MessageResult(error=RuntimeError("api down")),
    )
    with pytest.raises(BatchProcessingError, match="All records failed"):
        handle_batch(event, None, pipeline)  # type: ignore[arg-type]


def test_the_latency_clock_defaults_to_the_pipelines_and_can_be_overridden() -> None:
    pipeline, event = pipeline_for(a=MessageResult([ACTED]))
    metrics = Metrics()
    later = NOW + timedelta(seconds=60)
    handle_batch(event, None, pipeline, metrics=metrics, clock=lambda: later)  # type: ignore[arg-type]
    assert metrics.named("ReactionLatency")[0][0] == 63_000.0


# --- functions/interruption/app.py ----------------------------------------------------------

# Placeholders for what CloudFormation resolves (ARNs, names of created resources).
RESOLVED = {
    "LIFEBOAT_CLUSTERS": "prod",
    "LIFEBOAT_ACCOUNT_ID": "123456789012",
    "LIFEBOAT_REGION": "us-east-1",
    "LIFEBOAT_IDEMPOTENCY_TABLE": "lifeboat-IdempotencyTable-1",
    "LIFEBOAT_SCHEDULE_GROUP": "lifeboat-ScheduleGroup-1",
    "LIFEBOAT_SCHEDULER_ROLE_ARN": "arn:aws:iam::123456789012:role/lifeboat-SchedulerRole-1",
    "LIFEBOAT_QUEUE_ARN": "arn:aws:sqs:us-east-1:123456789012:lifeboat-Queue-1",
    "LIFEBOAT_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/lifeboat-Queue-1",
}


def template_environment() -> dict[str, str]:
    """The function's environment as template.yaml sets it, parameters at their defaults."""
    template, errors = decode_str((ROOT / "template.yaml").read_text())
    assert not errors, errors
    variables = template["Resources"]["InterruptionFunction"]["Properties"]["Environment"][
        "Variables"
    ]
    env: dict[str, str] = {}
    for name, value in variables.items():
        if isinstance(value, str):
            env[name] = value
        elif name in RESOLVED:
            env[name] = RESOLVED[name]
        else:
            parameter = template["Parameters"][value["Ref"]]
            env[name] = str(parameter["Default"])
    return env


class FakeLambdaContext:
    function_name = "lifeboat-InterruptionFunction-1"
    function_version = "$LATEST"
    memory_limit_in_mb = 512
    invoked_function_arn = (
        "arn:aws:lambda:us-east-1:123456789012:function:lifeboat-InterruptionFunction-1"
    )
    aws_request_id = "0f5e2c1a-1111-4000-8000-000000000001"
    log_group_name = "/aws/lambda/lifeboat"
    log_stream_name = "2026/12/01/[$LATEST]0123"

    def get_remaining_time_in_millis(self) -> int:
        return 58_000


@pytest.fixture
def lambda_env(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    env = template_environment()
    env.update(
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_SESSION_TOKEN="testing",
        AWS_DEFAULT_REGION="us-east-1",
        AWS_REGION="us-east-1",
    )
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return env


@pytest.fixture
def cluster() -> Iterator[tuple[Emulator, list[dict[str, Any]]]]:
    objects = load_cluster_file(EVENTS / "cluster.yaml")
    with Emulator(objects) as emulator:
        yield emulator, objects


def load_app(monkeypatch: pytest.MonkeyPatch, service: Service) -> ModuleType:
    """Import the entry point afresh, with ``build_service`` answering ``service``."""
    built: list[Service] = []

    def build_service(env: Any = None) -> Service:
        built.append(service)
        return service

    monkeypatch.setattr(lifeboat.service, "build_service", build_service)
    spec = importlib.util.spec_from_file_location(
        "lifeboat_interruption_app_under_test", ROOT / "functions" / "interruption" / "app.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.built = built  # type: ignore[attr-defined]
    return module


def emulated_pipeline(
    emulator: Emulator, objects: list[dict[str, Any]], settings: Settings
) -> Pipeline:
    """The pipeline the Lambda builds, on the emulator instead of EKS and EC2."""
    return Pipeline(
        clusters=OneCluster(KubeApi(emulator.api_client(), RetryPolicy(attempts=2))),
        directory=directory_from_objects(objects, cluster="prod"),
        settings=settings,
        clock=lambda: NOW,
        ledger=MemoryLedger(),
    )


def test_lambda_handler_runs_the_spot_sample_end_to_end(
    lambda_env: dict[str, str],
    cluster: tuple[Emulator, list[dict[str, Any]]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    emulator, objects = cluster
    settings = load_settings(lambda_env)
    assert settings.clusters == ("prod",)
    pipeline = emulated_pipeline(emulator, objects, settings)
    app = load_app(monkeypatch, Service(pipeline, settings))
    event = json.loads((EVENTS / "sqs" / "spot-interruption.json").read_text())

    response = app.lambda_handler(event, FakeLambdaContext())
    again = app.lambda_handler(event, FakeLambdaContext())

    assert response == {"batchItemFailures": []}
    assert again == {"batchItemFailures": []}
    assert len(app.built) == 1  # built on the first invocation, kept for the container
    node = emulator.get_object("Node", "ip-10-0-1-11.ec2.internal")
    assert node is not None and node["spec"].get("unschedulable") is True
    # Deleted (Karpenter's termination finalizer keeps it until the instance is gone).
    assert emulator.get_object("NodeClaim", "general-7xkqz")["metadata"]["deletionTimestamp"]

    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line[:1] == "{"]
    # Powertools Logger: structured decision lines with the Lambda context and correlation id.
    decisions = [line for line in lines if line.get("message") == "decision"]
    assert [d["decision"]["outcome"] for d in decisions] == ["acted", "ignored"]
    message_id = event["Records"][0]["messageId"]
    assert all(d["correlation_id"] == message_id for d in decisions)
    assert all(d["function_request_id"] == FakeLambdaContext.aws_request_id for d in decisions)
    # Powertools Metrics (EMF) in the template's namespace.
    emf = [line for line in lines if "_aws" in line]
    notices = [m for m in emf if "NoticesReceived" in m]
    assert notices and all(m["kind"] == "spot-interruption" for m in notices)
    namespaces = {metric["Namespace"] for m in emf for metric in m["_aws"]["CloudWatchMetrics"]}
    assert namespaces == {lambda_env["POWERTOOLS_METRICS_NAMESPACE"]}


def test_lambda_handler_returns_the_failed_record(
    lambda_env: dict[str, str],
    cluster: tuple[Emulator, list[dict[str, Any]]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    emulator, objects = cluster
    settings = load_settings(lambda_env)
    pipeline = emulated_pipeline(emulator, objects, settings)
    app = load_app(monkeypatch, Service(pipeline, settings))
    spot = json.loads((EVENTS / "sqs" / "spot-interruption.json").read_text())["Records"][0]
    state = json.loads((EVENTS / "sqs" / "state-change.json").read_text())["Records"][0]
    emulator.fail_next(500, times=10, verb="patch", name="ip-10-0-1-11.ec2.internal")

    response = app.lambda_handler({"Records": [spot, state]}, FakeLambdaContext())

    assert response == {"batchItemFailures": [{"itemIdentifier": spot["messageId"]}]}
    # The other one acted: its claim is being deleted.
    assert emulator.get_object("NodeClaim", "general-h9cfd")["metadata"]["deletionTimestamp"]


def test_wakeups_are_counted_apart_from_notices_and_add_no_reaction_latency() -> None:
    from lifeboat.observability import report_metrics
    from lifeboat.report import Outcome, Report

    sent = datetime(2026, 12, 1, 14, 0, tzinfo=UTC)
    notice = Report("e1", "rebalance-recommendation", Outcome.ACTED, "acted", event_time=sent)
    follow_up = Report(
        "e1",
        "rebalance-recommendation",
        Outcome.ACTED,
        "finished",
        event_time=sent,
        wakeup="finish-replacement",
    )
    seen: list[tuple[str, dict[str, str]]] = []

    class Sink:
        def emit(self, name: str, value: float, unit: str, dimensions: dict[str, str]) -> None:
            seen.append((name, dimensions))

    report_metrics([notice, follow_up], Sink(), sent + timedelta(hours=3))
    names = [name for name, _ in seen]
    assert names.count("NoticesReceived") == 1
    assert ("WakeupsHandled", {"task": "finish-replacement"}) in seen
    assert names.count("ReactionLatency") == 1
