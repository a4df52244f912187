"""``lifeboat.runtime.handler.handle_batch`` on a fake pipeline, and the Lambda entry point
``functions/interruption/app.py`` with its Powertools wiring, on the Kubernetes emulator."""

from __future__ import annotations

import importlib.util
import io
import json
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from types import ModuleType
from typing import Any

import pytest
from cfnlint.decode import decode_str  # type: ignore[import-untyped]

import lifeboat.runtime.service
from kubemu import Emulator, load_cluster_file
from lifeboat.flow.pipeline import MessageResult, OneCluster, Pipeline
from lifeboat.kube.client import KubeApi, RetryPolicy
from lifeboat.model.ledger import MemoryLedger
from lifeboat.model.report import Outcome, Report
from lifeboat.model.settings import Settings, load_settings
from lifeboat.runtime.handler import AllRecordsFailed, handle_batch
from lifeboat.runtime.service import Service
from lifeboat_local.directory import directory_from_objects
from tests.support.events import sqs_record
from tests.support.fakes import LambdaContext as FakeLambdaContext
from tests.support.fakes import RecordingMetrics as Metrics
from tests.support.paths import EVENTS, ROOT
from tests.support.present import present

NOW = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)
EVENT_TIME = NOW - timedelta(seconds=3)


# --- fakes ----------------------------------------------------------------------------------


@dataclass
class FakePipeline:
    """Answers each body with the result scripted for it."""

    results: dict[str, MessageResult]
    clock: Any = lambda: NOW
    seen: list[Sequence[Any]] = field(default_factory=list)

    def process(self, bodies: Sequence[Any], **_: Any) -> list[MessageResult]:
        self.seen.append(list(bodies))
        return [self.results[body] for body in bodies]


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
    event = {"Records": [sqs_record(body, f"m-{body}") for body in bodies]}
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

    outcomes = sorted((d["kind"], d["outcome"]) for _, _, d in metrics.named("Outcomes"))
    assert outcomes == [
        ("rebalance-recommendation", "deferred"),
        ("spot-interruption", "acted"),
        ("state-change", "ignored"),
        ("unsupported", "rejected"),
    ]
    # Every per-report metric carries the four dimensions an operator splits by.
    assert all(
        set(d) == {"cluster", "nodepool", "kind", "outcome"} for n, _, _, d in metrics.emitted
    )
    assert len(metrics.named("NodesTainted")) == len(metrics.named("NodesCordoned")) == 1
    # Latency only for what was acted on: from the event's time to now, in milliseconds.
    [(latency, unit, dimensions)] = metrics.named("ReactionLatency")
    assert (latency, unit, dimensions["kind"]) == (3000.0, "Milliseconds", "spot-interruption")
    [(_, _, unmanaged)] = metrics.named("UnmanagedInstances")
    assert unmanaged["kind"] == "state-change"
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
    """As Powertools' batch utility does, kept on purpose: the whole batch returns to the
    queue either way, and a failed invocation shows on the function's Errors alarm (and stops
    a canary deployment) at once instead of only when messages reach the dead-letter queue."""
    pipeline, event = pipeline_for(
        x=MessageResult(error=RuntimeError("api down")),
        y=MessageResult(error=RuntimeError("api down")),
    )
    metrics = Metrics()
    with pytest.raises(AllRecordsFailed, match="All records failed"):
        handle_batch(event, None, pipeline, metrics=metrics)  # type: ignore[arg-type]
    assert metrics.named("RecordFailures") == [(2, "Count", {})]


def test_the_latency_clock_defaults_to_the_pipelines_and_can_be_overridden() -> None:
    pipeline, event = pipeline_for(a=MessageResult([ACTED]))
    metrics = Metrics()
    later = NOW + timedelta(seconds=60)
    handle_batch(event, None, pipeline, metrics=metrics, clock=lambda: later)  # type: ignore[arg-type]
    assert metrics.named("ReactionLatency")[0][0] == 63_000.0


@dataclass
class TimedPipeline(FakePipeline):
    """Remembers how much of the invocation it was told was left."""

    told: list[float | None] = field(default_factory=list)

    def process(self, bodies: Sequence[Any], **kwargs: Any) -> list[MessageResult]:
        time_left = kwargs.get("time_left")
        self.told.append(None if time_left is None else time_left())
        return super().process(bodies)


def test_the_pipeline_is_told_how_much_of_the_invocation_is_left() -> None:
    """From the Lambda context, so a message naming many instances hands on what it
    cannot finish (lifeboat.flow.split); without a context, nothing is assumed."""
    pipeline = TimedPipeline({"a": MessageResult([ACTED])})
    _, event = pipeline_for(a=MessageResult([ACTED]))
    handle_batch(event, FakeLambdaContext(remaining_ms=42_500), pipeline)  # type: ignore[arg-type]
    handle_batch(event, None, pipeline)  # type: ignore[arg-type]
    assert pipeline.told == [42.5, None]


# --- functions/interruption/app.py ----------------------------------------------------------

# Placeholders for what CloudFormation resolves (ARNs, names of created resources).
RESOLVED = {
    "LIFEBOAT_CLUSTERS": "prod",
    # !If [SweepCapacityBlocks, ...]: the sweep and the Capacity Block kind are on by default.
    "LIFEBOAT_SWEEP_CAPACITY_BLOCKS": "true",
    "LIFEBOAT_ACCOUNT_ID": "123456789012",
    "LIFEBOAT_REGION": "us-east-1",
    "LIFEBOAT_IDEMPOTENCY_TABLE": "lifeboat-IdempotencyTable-1",
    "LIFEBOAT_SCHEDULE_GROUP": "lifeboat-ScheduleGroup-1",
    "LIFEBOAT_SCHEDULER_ROLE_ARN": "arn:aws:iam::123456789012:role/lifeboat-SchedulerRole-1",
    "LIFEBOAT_QUEUE_ARN": "arn:aws:sqs:us-east-1:123456789012:lifeboat-Queue-1",
    "LIFEBOAT_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/lifeboat-Queue-1",
    "LIFEBOAT_DEAD_LETTER_QUEUE_ARN": "arn:aws:sqs:us-east-1:123456789012:lifeboat-DLQ-1",
    "LIFEBOAT_NOTIFICATION_BUS": "default",
    "LIFEBOAT_SWEEP_SCHEDULE_ARN": (
        "arn:aws:scheduler:us-east-1:123456789012:schedule/lifeboat-ScheduleGroup-1/sweep"
    ),
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


@pytest.fixture
def lambda_env(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    env = template_environment()
    env.update(
        # Deployed to act (samconfig's production environment): the template's default,
        # for a deployment that says nothing, is a dry run.
        LIFEBOAT_DRY_RUN="false",
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

    monkeypatch.setattr(lifeboat.runtime.service, "build_service", build_service)
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
    # Built at import, in the init phase (what a SnapStart snapshot holds), once.
    assert len(app.built) == 1
    event = json.loads((EVENTS / "sqs" / "spot-interruption.json").read_text())

    response = app.lambda_handler(event, FakeLambdaContext())
    again = app.lambda_handler(event, FakeLambdaContext())

    assert response == {"batchItemFailures": []}
    assert again == {"batchItemFailures": []}
    assert len(app.built) == 1  # kept for the container
    node = emulator.get_object("Node", "ip-10-0-1-11.ec2.internal")
    assert node is not None and node["spec"].get("unschedulable") is True
    # Deleted (Karpenter's termination finalizer keeps it until the instance is gone).
    assert present(emulator.get_object("NodeClaim", "general-7xkqz"), "NodeClaim general-7xkqz")[
        "metadata"
    ]["deletionTimestamp"]

    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line[:1] == "{"]
    # Powertools Logger: structured decision lines with the Lambda context and correlation id.
    decisions = [line for line in lines if line.get("message") == "decision"]
    assert [d["decision"]["outcome"] for d in decisions] == ["acted", "ignored"]
    message_id = event["Records"][0]["messageId"]
    assert all(d["correlation_id"] == message_id for d in decisions)
    assert all(d["function_request_id"] == FakeLambdaContext.aws_request_id for d in decisions)
    # Powertools Metrics (EMF) in the template's namespace: per batch, one document for its
    # (like) notices, and once per environment the cold start.
    emf = [line for line in lines if "_aws" in line]
    namespaces = {metric["Namespace"] for m in emf for metric in m["_aws"]["CloudWatchMetrics"]}
    assert namespaces == {lambda_env["POWERTOOLS_METRICS_NAMESPACE"]}
    per_report = [m for m in emf if "Outcomes" in m]
    assert [(m["kind"], m["outcome"], m["cluster"], m["nodepool"]) for m in per_report] == [
        ("spot-interruption", "acted", "prod", "general"),
        ("spot-interruption", "ignored", "none", "none"),  # the duplicate: not resolved again
    ]
    assert per_report[0]["NodeClaimsCreated"] == [1.0] and per_report[0]["Outcomes"] == [1.0]
    assert [m["ColdStart"] for m in emf if "ColdStart" in m] == [[1.0]]
    assert len(emf) == 3  # the first batch: notices + cold start; the second: notices


def test_every_decision_line_carries_its_records_message_id(
    lambda_env: dict[str, str],
    cluster: tuple[Emulator, list[dict[str, Any]]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Per-record correlation ids: in a batch of two, each decision line names its own
    record's messageId (not the batch's first), so a Logs Insights query on one message
    finds its whole story."""
    emulator, objects = cluster
    settings = load_settings(lambda_env)
    app = load_app(monkeypatch, Service(emulated_pipeline(emulator, objects, settings), settings))
    spot = json.loads((EVENTS / "sqs" / "spot-interruption.json").read_text())["Records"][0]
    state = json.loads((EVENTS / "sqs" / "state-change.json").read_text())["Records"][0]
    assert spot["messageId"] != state["messageId"]
    # The Powertools logger's own handler may be bound to an earlier test's stdout (the
    # "lifeboat" logger outlives a test); read its lines, formatted by it, from a handler here.
    written = io.StringIO()
    handler = logging.StreamHandler(written)
    handler.setFormatter(app.logger.registered_formatter)
    logging.getLogger("lifeboat").addHandler(handler)
    try:
        response = app.lambda_handler({"Records": [spot, state]}, FakeLambdaContext())
    finally:
        logging.getLogger("lifeboat").removeHandler(handler)
    assert response == {"batchItemFailures": []}
    lines = [json.loads(line) for line in written.getvalue().splitlines() if line[:1] == "{"]
    decisions = {
        line["decision"]["kind"]: line["correlation_id"]
        for line in lines
        if line.get("message") == "decision"
    }
    assert decisions == {
        "spot-interruption": spot["messageId"],
        "state-change": state["messageId"],
    }


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
    assert present(emulator.get_object("NodeClaim", "general-h9cfd"), "NodeClaim general-h9cfd")[
        "metadata"
    ]["deletionTimestamp"]


def test_wakeups_are_counted_apart_from_notices_and_add_no_reaction_latency() -> None:
    from lifeboat.model.report import Outcome, Report
    from lifeboat.telemetry.observability import report_metrics

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
    sink = Metrics()
    report_metrics([notice, follow_up], sink, sent + timedelta(hours=3))
    seen = [(metric.name, metric.dimensions) for metric in sink.emitted]
    names = [name for name, _ in seen]
    assert names.count("Outcomes") == 2
    assert names.count("WakeupsHandled") == 1
    assert names.count("ReactionLatency") == 1


# --- early redelivery, notifications, tracing: around the pipeline, never failing it --------


@dataclass
class FakeRedelivery:
    asked: list[tuple[str, int]] = field(default_factory=list)

    def redeliver_in(self, receipt_handle: str, seconds: int) -> bool:
        self.asked.append((receipt_handle, seconds))
        return True


def test_a_failed_record_is_redelivered_early_and_backs_off() -> None:
    """deadline.redelivery_delay through the handler: near its deadline 1 s after the first
    delivery, 2 s after the second, ..., never closer than 5 s to the deadline; without a
    near deadline 10 s, 20 s, ... (issue 36.1: seconds, not the 380 s visibility timeout);
    once that backoff reaches the timeout, nothing is asked (the queue brings it back)."""
    near = MessageResult(error=RuntimeError("503"), deadline=NOW + timedelta(seconds=90))
    late = MessageResult(error=RuntimeError("503"), deadline=NOW + timedelta(seconds=7))
    far = MessageResult(error=RuntimeError("503"), deadline=NOW + timedelta(hours=2))
    none = MessageResult(error=RuntimeError("503"))
    worn = MessageResult(error=RuntimeError("503"))
    pipeline, event = pipeline_for(
        near=near, late=late, far=far, none=none, worn=worn, ok=MessageResult([ACTED])
    )
    for record, count in zip(event["Records"], ("3", "1", "1", "2", "7", "1"), strict=True):
        record["attributes"]["ApproximateReceiveCount"] = count
    redelivery = FakeRedelivery()
    response = handle_batch(event, None, pipeline, redelivery=redelivery)  # type: ignore[arg-type]
    assert {f["itemIdentifier"] for f in response["batchItemFailures"]} == {
        "m-near",
        "m-late",
        "m-far",
        "m-none",
        "m-worn",
    }
    assert redelivery.asked == [
        ("handle-m-near-1", 4),
        ("handle-m-late-1", 1),
        ("handle-m-far-1", 10),
        ("handle-m-none-1", 20),
    ]


@dataclass
class FakeNotifier:
    published: list[tuple[list[Report], list[str]]] = field(default_factory=list)
    fails: int = 0
    raises: bool = False

    def publish(self, reports: Any, *, message_ids: Sequence[str] = ()) -> int:
        if self.raises:
            raise RuntimeError("EventBridge is down")
        self.published.append((list(reports), list(message_ids)))
        return self.fails


def test_the_batchs_reports_are_offered_to_the_notifier_with_their_message_ids() -> None:
    pipeline, event = pipeline_for(a=MessageResult([ACTED]), b=MessageResult([DEFERRED, REJECTED]))
    notifier = FakeNotifier()
    handle_batch(event, None, pipeline, notifier=notifier)  # type: ignore[arg-type]
    [(reports, ids)] = notifier.published
    assert reports == [ACTED, DEFERRED, REJECTED]
    assert ids == ["m-a", "m-b", "m-b"]


@pytest.mark.parametrize("notifier", [FakeNotifier(fails=2), FakeNotifier(raises=True)])
def test_a_notification_that_cannot_be_published_never_fails_an_acted_record(
    notifier: FakeNotifier,
) -> None:
    pipeline, event = pipeline_for(a=MessageResult([ACTED]), b=MessageResult([ACTED]))
    metrics = Metrics()
    response = handle_batch(event, None, pipeline, notifier=notifier, metrics=metrics)  # type: ignore[arg-type]
    assert response == {"batchItemFailures": []}
    # Two acted reports: two refused entries, or two lost when the call itself failed.
    assert metrics.named("NotificationFailures") == [(2, "Count", {})]


@dataclass
class FakeTracer:
    annotated: list[tuple[str, list[str]]] = field(default_factory=list)
    raises: bool = False

    def annotate(self, message_id: str, reports: Any) -> None:
        if self.raises:
            raise RuntimeError("X-Ray daemon unreachable")
        self.annotated.append((message_id, [str(r.outcome) for r in reports]))


def test_a_traced_batch_annotates_each_records_reports_and_tracing_never_fails_it() -> None:
    pipeline, event = pipeline_for(a=MessageResult([ACTED]), b=MessageResult([DEFERRED]))
    tracer = FakeTracer()
    assert handle_batch(event, None, pipeline, tracer=tracer) == {"batchItemFailures": []}  # type: ignore[arg-type]
    assert tracer.annotated == [("m-a", ["acted"]), ("m-b", ["deferred"])]
    broken = FakeTracer(raises=True)
    assert handle_batch(event, None, pipeline, tracer=broken) == {"batchItemFailures": []}  # type: ignore[arg-type]


# --- EMF: one document per batch (per distinct dimensions) ------------------------------------


def _documents(reports: list[Report], *, cold: bool = False) -> list[dict[str, Any]]:
    from lifeboat.telemetry.observability import PowertoolsBatchMetrics, report_metrics

    out: list[str] = []
    sink = PowertoolsBatchMetrics("Lifeboat", out=out.append)
    if not cold:
        sink.flush()  # the environment's first flush carries the cold start
        out.clear()
    report_metrics(reports, sink, NOW)
    sink.flush()
    return [json.loads(line) for line in out]


def test_a_batch_of_like_notices_is_one_emf_document() -> None:
    """Before: about seven EMF documents per event. A batch of ten Spot warnings in one
    cluster and pool is one document, its counts summed and its latencies kept apart."""
    spot = replace(ACTED, cluster="prod", nodepool="general")
    [document] = _documents([spot] * 10)
    assert document["Outcomes"] == [10.0] and document["NodesTainted"] == [10.0]
    assert document["ReactionLatency"] == [3000.0] * 10
    directive = document["_aws"]["CloudWatchMetrics"][0]
    assert directive["Namespace"] == "Lifeboat"
    assert directive["Dimensions"] == [
        ["cluster", "nodepool", "kind", "outcome", "service"],
        ["service", "kind", "outcome"],
        ["service", "outcome"],
        ["service", "cluster"],
    ]
    assert (document["cluster"], document["nodepool"], document["kind"]) == (
        "prod",
        "general",
        "spot-interruption",
    )


def test_unlike_reports_are_one_document_per_dimension_combination() -> None:
    """EMF keeps one value per dimension per document, so reports that differ in cluster,
    pool, kind or outcome cannot share one: the batch writes one per combination."""
    documents = _documents(
        [
            replace(ACTED, cluster="prod", nodepool="general"),
            replace(ACTED, cluster="prod", nodepool="general"),
            replace(ACTED, cluster="stage", nodepool="general"),
            replace(DEFERRED, cluster="prod", nodepool="batch"),
        ]
    )
    keys = sorted((d["cluster"], d["nodepool"], d["outcome"], d["Outcomes"][0]) for d in documents)
    assert keys == [
        ("prod", "batch", "deferred", 1.0),
        ("prod", "general", "acted", 2.0),
        ("stage", "general", "acted", 1.0),
    ]


def test_more_latencies_than_emf_allows_are_split_over_documents() -> None:
    spot = replace(ACTED, cluster="prod", nodepool="general")
    documents = _documents([spot] * 250)
    assert [len(d["ReactionLatency"]) for d in documents] == [99, 99, 52]
    assert sum(d.get("Outcomes", [0.0])[0] for d in documents) == 250.0


def test_the_cold_start_is_counted_once_per_environment_and_again_after_a_restore() -> None:
    from lifeboat.telemetry.observability import PowertoolsBatchMetrics

    out: list[str] = []
    sink = PowertoolsBatchMetrics("Lifeboat", out=out.append)
    assert sink.flush() == 1 and json.loads(out[-1])["ColdStart"] == [1.0]
    assert sink.flush() == 0  # an idle warm batch writes nothing
    sink.after_restore()
    assert sink.flush() == 1 and json.loads(out[-1])["ColdStart"] == [1.0]
