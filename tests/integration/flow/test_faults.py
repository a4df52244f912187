"""Fault handling: what Lifeboat does when the Kubernetes API or AWS misbehaves.

Kubernetes: 429/5xx/timeouts are retried a bounded number of times with jittered backoff
(counted in the emulator's request log), and only by ``KubeApi``'s policy (urllib3's own
hidden retries are off); a failure that outlasts the policy fails the record, which goes back
to the queue rather than being deleted; a 409 on the node patch is re-read and retried; a
create that may have been done is not blindly resent. AWS: a throttled DescribeInstances
fails the records that needed it (each retried), a throttled ledger fails the record.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from kubemu import Emulator
from kubemu.dispatch import Drop, Response
from lifeboat.flow.pipeline import OneCluster, Pipeline
from lifeboat.kube import nodes
from lifeboat.kube.client import KubeApi, KubeError, RetryPolicy, retrying_for
from lifeboat.marks import node_marks
from lifeboat.model.deadline import HANDLING_MARGIN
from lifeboat.model.instances import Ec2InstanceDirectory, InstanceInfo, StaticInstanceDirectory
from lifeboat.model.ledger import MemoryLedger
from lifeboat.model.settings import Settings
from lifeboat.runtime.handler import AllRecordsFailed, handle_batch
from tests.support import kube
from tests.support.aws import create_idempotency_table
from tests.support.events import sample
from tests.support.events import sqs_batch as _batch
from tests.support.fakes import LambdaContext as _Context
from tests.support.present import present

NOW = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)
INSTANCE = "i-0a1b2c3d4e5f60001"
NODE = "ip-10-0-1-11.ec2.internal"
CLAIM = "general-7xkqz"
CLAIM_UID = "0b7e6a1c-5d2f-4c3a-9e1b-000000000101"
SPOT = sample("spot-interruption")


def _objects() -> list[dict[str, Any]]:
    pool = kube.nodepool(uid="pool-uid", requirements=[], budgets=[{"nodes": "10%"}])
    # As on a live cluster, the claim carries Karpenter's termination finalizer: deleting it
    # does not garbage-collect its Node while Karpenter drains it.
    claim, node = kube.nodeclaim_and_node(
        name=CLAIM,
        uid=CLAIM_UID,
        instance_id=INSTANCE,
        node_name=NODE,
        nodepool_uid="pool-uid",
    )
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "lifeboat"}}
    return [namespace, pool, claim, node]


INFO = InstanceInfo(INSTANCE, node_name=NODE, nodeclaim=CLAIM, nodepool="general")


@pytest.fixture
def emu() -> Iterator[Emulator]:
    with Emulator(_objects()) as emulator:
        yield emulator


def _kube(emu: Emulator, sleeps: list[float] | None = None, **policy: Any) -> KubeApi:
    retry = RetryPolicy(**{"attempts": 4, "base_delay": 0.01, "max_delay": 0.05, **policy})
    sleep = sleeps.append if sleeps is not None else (lambda _: None)
    return KubeApi(emu.api_client(), retry, sleep=sleep, rng=random.Random(3))


def _pipeline(kube: KubeApi, directory: Any = None, ledger: Any = None) -> Pipeline:
    return Pipeline(
        clusters=OneCluster(kube),
        directory=directory or StaticInstanceDirectory([INFO]),
        settings=Settings(),
        clock=lambda: NOW,
        ledger=ledger if ledger is not None else MemoryLedger(),
    )


def _failed(event: dict[str, Any], pipeline: Pipeline) -> set[str]:
    """The message ids that go back to the queue. When every record of a batch failed, the
    handler raises ``AllRecordsFailed`` instead of listing them: the invocation fails and
    Lambda returns the whole batch, which is the same for SQS."""
    try:
        response = handle_batch(event, None, pipeline)
    except AllRecordsFailed:
        return {record["messageId"] for record in event["Records"]}
    return {item["itemIdentifier"] for item in response["batchItemFailures"]}


def _calls(emu: Emulator, verb: str, resource: str) -> int:
    return sum(1 for entry in emu.request_log if entry[0] == verb and entry[2] == resource)


def _replacements(emu: Emulator) -> list[dict[str, Any]]:
    return [
        claim
        for claim in emu.objects("NodeClaim")
        if nodes.labels_of(claim).get(node_marks.REPLACES_LABEL) == CLAIM
    ]


# -- KubeApi: bounded, jittered, and the only layer that retries ----------------------------


@pytest.mark.parametrize("status", [429, 500, 503])
def test_transient_status_is_retried_then_succeeds(emu: Emulator, status: int) -> None:
    sleeps: list[float] = []
    kube = _kube(emu, sleeps)
    emu.fail_next(status, times=2, verb="get", resource="nodes")
    assert kube.get_node(NODE) is not None
    assert _calls(emu, "get", "nodes") == 3
    assert len(sleeps) == 2


@pytest.mark.parametrize("status", [429, 500, 503])
def test_persistent_status_gives_up_after_the_policy_attempts(emu: Emulator, status: int) -> None:
    sleeps: list[float] = []
    kube = _kube(emu, sleeps, attempts=4)
    emu.fail_next(status, times=100, verb="get", resource="nodes")
    with pytest.raises(KubeError) as raised:
        kube.get_node(NODE)
    assert raised.value.status == status
    # Exactly the policy's attempts: urllib3 would otherwise have retried a 429 GET itself,
    # sleeping the full Retry-After each time (it made 16 requests and slept 12 s before).
    assert _calls(emu, "get", "nodes") == 4
    assert len(sleeps) == 3


def test_backoff_is_jittered_and_bounded(emu: Emulator) -> None:
    sleeps: list[float] = []
    kube = _kube(emu, sleeps, attempts=8, base_delay=0.01, max_delay=0.04)
    emu.fail_next(500, times=7, verb="get", resource="nodes")
    assert kube.get_node(NODE) is not None
    caps = [min(0.04, 0.01 * 2**attempt) for attempt in range(1, 8)]
    assert all(0 <= delay <= cap for delay, cap in zip(sleeps, caps, strict=True))
    assert len(set(sleeps)) == len(sleeps), "full jitter: no two delays alike"


def test_a_429_is_not_slept_out_by_the_transport(emu: Emulator) -> None:
    """urllib3 would honour the 429's ``Retry-After: 1`` by sleeping and resending itself;
    the policy's own retry is the only one: one sleep, through the injected ``sleep``, of the
    server's Retry-After (longer than the policy's jittered backoff), then the second
    request."""
    sleeps: list[float] = []
    kube = KubeApi(emu.api_client(), RetryPolicy(attempts=2, base_delay=0.001), sleep=sleeps.append)
    emu.fail_next(429, times=1, verb="get", resource="nodes")  # answered with Retry-After: 1
    assert kube.get_node(NODE) is not None
    assert sleeps == [1.0]
    assert _calls(emu, "get", "nodes") == 2


def test_a_retry_after_longer_than_the_policy_allows_fails_outside_a_window(
    emu: Emulator,
) -> None:
    """Outside a deadline's window a Retry-After longer than ``max_retry_after`` is not slept
    out (the message's redelivery takes over); inside one that leaves room, it is."""
    sleeps: list[float] = []
    policy = RetryPolicy(attempts=4, base_delay=0.001, max_retry_after=0.5)
    kube = KubeApi(emu.api_client(), policy, sleep=sleeps.append)
    emu.fail_next(429, times=1, verb="get", resource="nodes")  # Retry-After: 1
    with pytest.raises(KubeError) as raised:
        kube.get_node(NODE)
    assert raised.value.status == 429 and raised.value.retry_after == 1.0
    assert sleeps == []
    emu.fail_next(429, times=1, verb="get", resource="nodes")
    with retrying_for(timedelta(seconds=5)):
        assert kube.get_node(NODE) is not None
    assert sleeps == [1.0]


def test_timeouts_are_retried_by_the_policy_and_bounded(emu: Emulator) -> None:
    sleeps: list[float] = []
    kube = _kube(emu, sleeps, attempts=3, request_timeout=0.1)
    emu.set_fault_rate(rate=0.0, timeout_rate=1.0, timeout_delay=0.4)
    with pytest.raises(KubeError) as raised:
        kube.get_node(NODE)
    assert raised.value.status == 0  # no answer
    # The server logs a request when its handler thread reads it, which on a busy machine
    # may come after the client gave up on it: wait (bounded) for the log to settle.
    settle = time.monotonic() + 2.0
    while _calls(emu, "get", "nodes") < 3 and time.monotonic() < settle:
        time.sleep(0.05)
    assert _calls(emu, "get", "nodes") == 3  # not 3 x 4: urllib3 does not retry underneath
    assert len(sleeps) == 2


def test_a_timeout_then_an_answer_succeeds(emu: Emulator) -> None:
    # A timeout long enough for a loaded machine to answer the retry in time.
    kube = _kube(emu, attempts=3, request_timeout=0.5)
    backend = emu._backend
    original = backend.handle
    dropped: list[str] = []

    def drop_first(
        method: str, path: str, query: dict[str, str], content_type: str, raw: bytes
    ) -> Response | Drop:
        if method == "PATCH" and not dropped:
            dropped.append(path)
            return Drop(1.0)
        return original(method, path, query, content_type, raw)

    backend.handle = drop_first  # type: ignore[method-assign]
    operations = [{"op": "add", "path": "/spec/unschedulable", "value": True}]
    kube.patch_node(NODE, operations)
    assert dropped
    assert present(emu.get_object("Node", NODE), "the node")["spec"]["unschedulable"] is True


def test_a_create_whose_answer_was_lost_is_resent_and_finds_the_claim(emu: Emulator) -> None:
    """The server created the claim but its answer was lost (timeout). The replacement is
    named after the old claim, so resending the POST is safe: it is answered 409
    AlreadyExists and ``act`` takes the claim as made. One replacement, no failed message."""
    kube = _kube(emu, request_timeout=0.1)
    backend = emu._backend
    original = backend.handle
    lost: list[int] = []

    def serve_then_drop(
        method: str, path: str, query: dict[str, str], content_type: str, raw: bytes
    ) -> Response | Drop:
        result = original(method, path, query, content_type, raw)
        if method == "POST" and path.endswith("/nodeclaims") and not lost:
            assert isinstance(result, Response), "the server answered the create"
            lost.append(result.code)
            return Drop(0.3)
        return result

    backend.handle = serve_then_drop  # type: ignore[method-assign]
    pipeline = _pipeline(kube)
    assert _failed(_batch(SPOT), pipeline) == set()
    assert lost == [201] and len(_replacements(emu)) == 1
    assert _calls(emu, "create", "nodeclaims") == 2
    old = emu.get_object("NodeClaim", CLAIM)  # and the old claim is being deleted
    assert old is not None and old["metadata"]["deletionTimestamp"]


@pytest.mark.parametrize("status", [429, 503])
def test_a_generate_name_create_is_resent_only_when_refused(emu: Emulator, status: int) -> None:
    """A ``generateName`` POST makes a new object each time it is accepted: after a 429 it
    certainly was not, so it is resent; after a 5xx it may have been, so it is not."""
    kube = _kube(emu)
    emu.fail_next(status, times=1, verb="create", resource="nodeclaims")
    if status == 429:
        created = kube.create_nodeclaim({**_replacement_body()})
        assert created["metadata"]["name"].startswith("general-")
        assert _calls(emu, "create", "nodeclaims") == 2
    else:
        with pytest.raises(KubeError):
            kube.create_nodeclaim({**_replacement_body()})
        assert _calls(emu, "create", "nodeclaims") == 1


@pytest.mark.parametrize("status", [429, 503])
def test_a_named_create_is_resent_after_any_transient_failure(emu: Emulator, status: int) -> None:
    """A named POST cannot make a second object (a repeat is 409), so it is retried."""
    kube = _kube(emu)
    emu.fail_next(status, times=1, verb="create", resource="nodeclaims")
    body = _replacement_body()
    body["metadata"] = {"name": "general-0123456789", "labels": {node_marks.REPLACES_LABEL: CLAIM}}
    created = kube.create_nodeclaim(body)
    assert created["metadata"]["name"] == "general-0123456789"
    assert _calls(emu, "create", "nodeclaims") == 2


def _replacement_body() -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {"generateName": "general-", "labels": {node_marks.REPLACES_LABEL: CLAIM}},
        # What the NodeClaim CRD requires.
        "spec": {
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "d"},
            "requirements": [],
        },
    }


# -- through the handler: a failure is never reported as success ----------------------------


@pytest.mark.parametrize(
    ("verb", "resource"),
    [("get", "nodes"), ("patch", "nodes"), ("delete", "nodeclaims")],
)
def test_a_persistent_500_fails_the_record(emu: Emulator, verb: str, resource: str) -> None:
    kube = _kube(emu)
    emu.fail_next(500, times=1000, verb=verb, resource=resource)
    other = {**SPOT, "id": "another-event", "detail": {**SPOT["detail"], "instance-id": "i-0ff"}}
    failed = _failed(_batch(SPOT, other), _pipeline(kube))
    # The spot event fails and returns to the queue; its batch-mate (an unknown instance,
    # ignored) is deleted.
    assert failed == {"m-0"}
    assert _calls(emu, verb, resource) in (1, 4)  # 1: a create is not resent after a 5xx
    emu.clear_faults()
    assert _failed(_batch(SPOT), _pipeline(kube)) == set()
    assert len(_replacements(emu)) == 1


def test_an_event_that_cannot_be_recorded_does_not_fail_the_acted_record(
    emu: Emulator, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The Kubernetes Event is the audit trail of actions already taken: failing the record
    # for it would redo the decision and schedule its follow-ups twice.
    # (The Lambda's Powertools logger, if another test loaded it, stops propagation.)
    monkeypatch.setattr(logging.getLogger("lifeboat"), "propagate", True)
    caplog.set_level(logging.WARNING, logger="lifeboat.telemetry.recorder")
    emu.fail_next(500, times=1000, verb="create", resource="events")
    assert _failed(_batch(SPOT), _pipeline(_kube(emu))) == set()
    assert len(_replacements(emu)) == 1
    assert _calls(emu, "create", "events") == 4  # retried like any request, then given up
    assert "could not record the decision" in caplog.text


def test_a_409_on_the_node_patch_is_reread_and_retried(emu: Emulator) -> None:
    kube = _kube(emu)
    emu.fail_next(409, times=1, verb="patch", resource="nodes")
    assert _failed(_batch(SPOT), _pipeline(kube)) == set()
    node_calls = [(e[0], e[4]) for e in emu.request_log if e[2] == "nodes"]
    assert node_calls == [("get", NODE), ("patch", NODE), ("get", NODE), ("patch", NODE)]
    keys = [t["key"] for t in nodes.taints(present(emu.get_object("Node", NODE), "the node"))]
    assert keys == ["lifeboat.dev/spot-interruption"]


def test_a_concurrent_taint_change_is_kept(emu: Emulator) -> None:
    """Another controller taints the node between Lifeboat's read and its patch: the JSON
    patch's test fails (422), Lifeboat re-reads, and both taints survive."""
    kube = _kube(emu)
    backend = emu._backend
    original = backend.handle
    raced: list[bool] = []

    def race(
        method: str, path: str, query: dict[str, str], content_type: str, raw: bytes
    ) -> Response | Drop:
        if method == "PATCH" and path.endswith(NODE) and not raced:
            raced.append(True)
            node = present(emu.get_object("Node", NODE), "the node")
            node["spec"]["taints"] = [{"key": "example.com/maintenance", "effect": "NoSchedule"}]
            emu.put_object(node)
        return original(method, path, query, content_type, raw)

    backend.handle = race  # type: ignore[method-assign]
    assert _failed(_batch(SPOT), _pipeline(kube)) == set()
    keys = sorted(t["key"] for t in nodes.taints(present(emu.get_object("Node", NODE), "the node")))
    assert keys == ["example.com/maintenance", "lifeboat.dev/spot-interruption"]
    assert _calls(emu, "patch", "nodes") == 2


# -- AWS --------------------------------------------------------------------------------------


def _throttle(client: Any, operation: str, code: str, times: int = 1000) -> list[str]:
    seen: list[str] = []

    def hook(**_: Any) -> Any:
        if len(seen) >= times:
            return None
        seen.append(operation)
        error = {"Code": code, "Message": "Rate exceeded"}
        return _Http(), {"Error": error, "ResponseMetadata": {"HTTPStatusCode": 400}}

    client.meta.events.register(
        f"before-call.{client.meta.service_model.endpoint_prefix}.{operation}", hook
    )
    return seen


class _Http:
    status_code = 400
    headers: dict[str, str] = {}


def test_throttled_describe_instances_fails_its_records_not_the_invocation(
    emu: Emulator, aws: None
) -> None:
    """A DescribeInstances that still fails (here refused before botocore could retry it)
    fails each record that needed it, as batch item failures: the invocation returns, so
    the records come back as the handler arranged (early near a deadline:
    tests/integration/flow/test_throttled_lookups.py), never reported as done nor ignored as
    unknown instances. (Before: the error escaped handle_batch and failed the invocation.)"""
    ec2 = boto3.client("ec2", region_name="us-east-1")
    seen = _throttle(ec2, "DescribeInstances", "RequestLimitExceeded")
    kube = _kube(emu)
    pipeline = _pipeline(kube, directory=Ec2InstanceDirectory(ec2))
    with pytest.raises(AllRecordsFailed):
        handle_batch(_batch(SPOT, SPOT, SPOT), None, pipeline)
    assert seen == ["DescribeInstances"]
    assert emu.request_log == []  # nothing was done to the cluster


def _dynamodb_ledger() -> tuple[Any, Any]:
    """A moto DynamoDB client and the Powertools ledger on a fresh table of it."""
    from lifeboat.aws.idempotency import PowertoolsLedger

    ddb = boto3.client("dynamodb", region_name="us-east-1")
    create_idempotency_table(ddb, "ledger")
    return ddb, PowertoolsLedger("ledger", boto3_client=ddb)


def test_a_throttled_ledger_fails_the_record_and_a_retry_acts_once(
    emu: Emulator, aws: None
) -> None:
    ddb, ledger = _dynamodb_ledger()
    # The completion is not recorded: the action ran, the record must still fail.
    seen = _throttle(ddb, "UpdateItem", "ProvisionedThroughputExceededException", times=1)
    ledger.register_lambda_context(_Context(remaining_ms=1))
    pipeline = _pipeline(_kube(emu), ledger=ledger)
    assert _failed(_batch(SPOT), pipeline) == {"m-0"}
    assert seen == ["UpdateItem"]
    assert len(_replacements(emu)) == 1
    time.sleep(0.01)  # the in-progress record expires with the invocation
    ledger.register_lambda_context(_Context(remaining_ms=60_000))
    assert _failed(_batch(SPOT), pipeline) == set()
    assert len(_replacements(emu)) == 1  # acted again, harmlessly: no second replacement
    # A third delivery is a duplicate.
    emu.reset_counts()
    assert _failed(_batch(SPOT), pipeline) == set()
    assert _calls(emu, "patch", "nodes") == 0 and _calls(emu, "create", "nodeclaims") == 0


def test_a_ledger_throttled_before_acting_fails_the_record_untouched(
    emu: Emulator, aws: None
) -> None:
    ddb, ledger = _dynamodb_ledger()
    ledger.register_lambda_context(_Context(remaining_ms=60_000))
    _throttle(ddb, "PutItem", "ThrottlingException", times=1)
    pipeline = _pipeline(_kube(emu), ledger=ledger)
    assert _failed(_batch(SPOT), pipeline) == {"m-0"}
    assert _calls(emu, "patch", "nodes") == 0
    assert _failed(_batch(SPOT), pipeline) == set()
    assert len(_replacements(emu)) == 1


def test_memory_ledger_does_not_call_a_running_handling_done() -> None:
    ledger = MemoryLedger()
    inside, release = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def slow_then_fail() -> Any:
        inside.set()
        release.wait(5)
        raise RuntimeError("the first handling failed")

    def first() -> None:
        try:
            ledger.once("event#i-1", slow_then_fail)
        except RuntimeError as error:
            errors.append(error)

    thread = threading.Thread(target=first)
    thread.start()
    assert inside.wait(5)
    answer: object  # what the duplicate was told: a Report, or the refusal's text
    try:
        answer = ledger.once("event#i-1", lambda: pytest.fail("ran twice at once"))
    except Exception:
        answer = "retry later"
    finally:
        release.set()
        thread.join()
    assert errors, "the first handling failed"
    assert answer == "retry later", "the duplicate was told the event was already handled"


# -- a near deadline: retry inside the invocation, and come back early ----------------------
#
# A Spot warning's deadline is its event time + 2 minutes; the queue's visibility timeout is
# 380 s. The regression these guard against: with the API server answering 503 for a few
# seconds, the message failed after the policy's 4 attempts (about a second of backoff) and
# came back 380 s later, long after the instance was gone.

SPOT_TIME = datetime(2026, 12, 1, 14, 2, tzinfo=UTC)  # events/spot-interruption.json
SPOT_DEADLINE = SPOT_TIME + timedelta(minutes=2)


@dataclass
class Ticking:
    """A monotonic clock that only the client's sleeps move, with things that happen at
    given instants on it (an outage's end): nothing waits in real time."""

    now: float = 0.0
    slept: list[float] = field(default_factory=list)
    at: list[tuple[float, Callable[[], None]]] = field(default_factory=list)

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds
        for moment, happen in [a for a in self.at if a[0] <= self.now]:
            self.at.remove((moment, happen))
            happen()


def _outage(emu: Emulator, seconds: float, ticking: Ticking, **where: Any) -> None:
    """The API server answers 503 to matching requests for ``seconds`` on ``ticking``."""
    emu.fail_next(503, times=10**9, **where)
    ticking.at.append((ticking.now + seconds, emu.clear_faults))


def _production_pipeline(emu: Emulator, ticking: Ticking) -> Pipeline:
    """The policy and jitter production uses (``RetryPolicy()``), on ``ticking``'s time."""
    kube = KubeApi(emu.api_client(), RetryPolicy(), sleep=ticking.sleep, rng=random.Random(7))
    pipeline = _pipeline(kube)
    pipeline.monotonic = ticking.monotonic
    return pipeline


@pytest.mark.parametrize("outage", [0.5, 1.5, 3.0])
def test_a_spot_warning_outlasts_an_api_outage_within_the_invocation(
    emu: Emulator, outage: float
) -> None:
    """kube.RetryPolicy + deadline.retry_window: a 503 outage of 0.5-3 s, a minute and a
    half before the deadline, is retried through, and the warning is acted on at once."""
    ticking = Ticking()
    pipeline = _production_pipeline(emu, ticking)
    pipeline.clock = lambda: SPOT_TIME + timedelta(seconds=20)
    _outage(emu, outage, ticking, verb="patch", resource="nodes")
    assert _failed(_batch(SPOT), pipeline) == set()
    assert ticking.now >= outage  # it did wait the outage out
    assert _calls(emu, "patch", "nodes") > 1
    assert len(_replacements(emu)) == 1
    keys = [t["key"] for t in nodes.taints(present(emu.get_object("Node", NODE), "the node"))]
    assert keys == ["lifeboat.dev/spot-interruption"]


def test_without_a_near_deadline_the_policy_attempts_still_bound_the_retries(
    emu: Emulator,
) -> None:
    """A warning whose deadline has passed (or that has none) gains nothing from waiting:
    the policy's 4 attempts apply and the record fails fast, sparing the API server."""
    pipeline = _pipeline(_kube(emu))  # clock NOW: the sample's deadline passed a minute ago
    emu.fail_next(503, times=10**9, verb="patch", resource="nodes")
    assert _failed(_batch(SPOT), pipeline) == {"m-0"}
    assert _calls(emu, "patch", "nodes") == 4


def test_the_in_process_window_stops_short_of_the_deadline(emu: Emulator) -> None:
    """8 s before the deadline the window is 3 s (deadline.HANDLING_MARGIN is 5 s): a
    persistent outage fails the record within about 3 s (the last backoff that would cross
    the window's end is not slept), not after 20, having tried more than the 4 attempts.
    Measured on the injected clock the client's sleeps move."""
    ticking = Ticking()
    pipeline = _production_pipeline(emu, ticking)
    pipeline.clock = lambda: SPOT_DEADLINE - timedelta(seconds=8)
    emu.fail_next(503, times=10**9, verb="patch", resource="nodes")
    assert _failed(_batch(SPOT), pipeline) == {"m-0"}
    window = 8 - HANDLING_MARGIN.total_seconds()
    assert sum(ticking.slept) <= window  # never slept past the window's end ...
    # ... and gave up only when the next backoff (at most max_delay) would have crossed it.
    assert sum(ticking.slept) > window - RetryPolicy().max_delay
    assert _calls(emu, "patch", "nodes") == len(ticking.slept) + 1 > 4


@pytest.fixture
def sqs_queue(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, str]]:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        url = sqs.create_queue(QueueName="lifeboat", Attributes={"VisibilityTimeout": "380"})[
            "QueueUrl"
        ]
        yield sqs, url


def _received_batch(sqs: Any, url: str, wait: int = 0) -> dict[str, Any]:
    """What the event source mapping hands the function: received messages as records."""
    messages = sqs.receive_message(
        QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"], WaitTimeSeconds=wait
    ).get("Messages", [])
    return {
        "Records": [
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": m["Attributes"],
                "eventSource": "aws:sqs",
            }
            for m in messages
        ]
    }


def test_a_spot_warning_that_fails_near_its_deadline_comes_back_within_seconds(
    emu: Emulator, sqs_queue: tuple[Any, str]
) -> None:
    """handler + redelivery.SqsRedelivery on moto SQS: the failed record's visibility is
    shortened (sqs:ChangeMessageVisibility) so it returns before the deadline, not after
    the queue's 380 s; on its next delivery the API server is back and it is acted on.

    Relies on moto honouring ChangeMessageVisibility and visibility timeouts in real time,
    as SQS does."""
    from lifeboat.aws.redelivery import SqsRedelivery

    sqs, url = sqs_queue
    sqs.send_message(QueueUrl=url, MessageBody=json.dumps(SPOT))
    clock = {"now": SPOT_DEADLINE - timedelta(seconds=8)}
    pipeline = _production_pipeline(emu, Ticking())
    pipeline.clock = lambda: clock["now"]
    redelivery = SqsRedelivery(sqs, url)
    emu.fail_next(503, times=10**9, verb="patch", resource="nodes")

    first = _received_batch(sqs, url)
    with pytest.raises(Exception, match="All records failed"):
        handle_batch(first, None, pipeline, redelivery=redelivery)
    emu.clear_faults()
    clock["now"] += timedelta(seconds=4)
    # Without the redelivery the message would stay invisible for 380 s.
    again = _received_batch(sqs, url, wait=3)
    assert [r["messageId"] for r in again["Records"]] == [r["messageId"] for r in first["Records"]]
    assert again["Records"][0]["attributes"]["ApproximateReceiveCount"] == "2"
    assert handle_batch(again, None, pipeline, redelivery=redelivery) == {"batchItemFailures": []}
    assert len(_replacements(emu)) == 1


def test_a_failure_without_a_near_deadline_comes_back_after_the_distant_backoff(
    emu: Emulator, sqs_queue: tuple[Any, str]
) -> None:
    """A message whose deadline has passed is not hurried as a near one is: it comes back
    after the distant backoff's 10 s (lifeboat.model.deadline.redelivery_delay, issue
    36.1), not within the seconds a near deadline's 1, 2, 4 s backoff gives."""
    from lifeboat.aws.redelivery import SqsRedelivery

    sqs, url = sqs_queue
    sqs.send_message(QueueUrl=url, MessageBody=json.dumps(SPOT))
    pipeline = _pipeline(_kube(emu))  # NOW: after the sample's deadline
    emu.fail_next(503, times=10**9, verb="patch", resource="nodes")
    with pytest.raises(Exception, match="All records failed"):
        handle_batch(_received_batch(sqs, url), None, pipeline, redelivery=SqsRedelivery(sqs, url))
    assert _received_batch(sqs, url, wait=2)["Records"] == []


def test_a_persistent_500_keeps_the_policy_attempts_even_near_a_deadline(emu: Emulator) -> None:
    """A 500 is the server's own error and often persistent (a failing webhook): retrying it
    for the whole window would only hold the invocation; outages (503, 429, 502, 504, no
    answer) are what the window is for."""
    pipeline = _pipeline(_kube(emu))
    pipeline.clock = lambda: SPOT_TIME + timedelta(seconds=20)
    emu.fail_next(500, times=10**9, verb="patch", resource="nodes")
    assert _failed(_batch(SPOT), pipeline) == {"m-0"}
    assert _calls(emu, "patch", "nodes") == 4
