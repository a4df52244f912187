"""AWS faults the soak injects, at Lifeboat's own seams (the instance directory and the
idempotency ledger are parameters of the pipeline) or with botocore's ``before-call`` hook:
nothing of Lifeboat is patched.

DescribeInstances is throttled on some batches; the ledger on some calls, either before the
action ran (PutItem) or after it (UpdateItem of the result: the action ran, the message
fails, and the retry runs it again, which ``act`` must make harmless). ``ledger="dynamodb"``
uses the real ``PowertoolsLedger`` on moto; ``ledger="memory"`` uses ``MemoryLedger`` behind
a wrapper that throttles the same way and one that fails a concurrent duplicate as
Powertools does (moto costs ~16 ms per ledger entry, too slow for 2,000 events).
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from botocore.exceptions import ClientError

from bench.cluster import REGION
from bench.harness import LambdaContext
from lifeboat.model.instances import InstanceDirectory, InstanceInfo
from lifeboat.model.ledger import Ledger, MemoryLedger
from lifeboat.model.report import Report

from .config import SoakConfig

IDEMPOTENCY_TABLE = "lifeboat-soak-idempotency"


def throttled(operation: str, code: str = "ThrottlingException") -> ClientError:
    return ClientError(
        {
            "Error": {"Code": code, "Message": "Rate exceeded (injected by the soak)"},
            "ResponseMetadata": {"HTTPStatusCode": 400},
        },
        operation,
    )


class FaultSchedule:
    """Which calls fail: one in every ``round(1 / rate)`` calls, at a seeded random place
    in each such window. The number of faults follows the number of calls, not the luck of
    independent draws (how a run is cut into batches depends on timing, and a short soak
    must still meet its faults), while where they fall still varies. Not thread-safe: the
    callers hold their own lock."""

    def __init__(self, rate: float, rng: random.Random) -> None:
        self._window = max(1, round(1 / rate)) if rate > 0 else 0
        self._rng = rng
        self._calls = 0
        self._at = rng.randrange(self._window) if self._window else -1

    def fails(self) -> bool:
        if not self._window:
            return False
        position = self._calls % self._window
        if position == 0 and self._calls:
            self._at = self._rng.randrange(self._window)
        self._calls += 1
        return position == self._at


class ThrottledDirectory:
    """An instance directory whose DescribeInstances is throttled on some calls (after
    botocore's own retries gave up: what reaches Lifeboat is the ClientError)."""

    def __init__(self, inner: InstanceDirectory, rate: float, rng: random.Random) -> None:
        self._inner = inner
        self._faults = FaultSchedule(rate, rng)
        self._lock = threading.Lock()
        self.calls = 0
        self.throttled = 0

    def describe(self, instance_ids: Sequence[str]) -> dict[str, InstanceInfo]:
        with self._lock:
            self.calls += 1
            fail = self._faults.fails()
            self.throttled += fail
        if fail:
            raise throttled("DescribeInstances", "RequestLimitExceeded")
        return self._inner.describe(instance_ids)


class ThrottledLedger:
    """A ledger whose store is throttled on some calls: before the action (nothing done,
    nothing recorded) or after it (the action ran but its completion was not recorded, so
    the retried message runs it again), as Powertools behaves on a throttled DynamoDB."""

    def __init__(self, inner: Ledger, rate: float, rng: random.Random) -> None:
        self._inner = inner
        self._faults = FaultSchedule(rate, rng)
        self._rng = rng
        self._lock = threading.Lock()
        self.before = 0
        self.after = 0

    def once(self, key: str, handle: Callable[[], Report]) -> Report | None:
        with self._lock:
            when = None
            if self._faults.fails():
                when = "before" if self._rng.random() < 0.5 else "after"
            if when == "before":
                self.before += 1
            elif when == "after":
                self.after += 1
        if when == "before":
            raise throttled("PutItem")
        if when is None:
            return self._inner.once(key, handle)

        def handle_then_fail() -> Report:
            handle()
            raise throttled("UpdateItem")

        return self._inner.once(key, handle_then_fail)


class InProgress(RuntimeError):
    """Powertools' IdempotencyAlreadyInProgressError, for the in-memory ledger."""


class InProgressGuard:
    """``MemoryLedger`` as Powertools behaves for a key being handled right now: the
    concurrent duplicate fails (and SQS retries it) instead of being told "already handled".

    ``MemoryLedger`` alone answers "duplicate" while the first handling is still running, so
    when that handling then fails, the duplicate has been deleted as handled: the soak saw
    it at 10,000 events (a duplicate in the same batch as a failing original).
    """

    def __init__(self, inner: Ledger) -> None:
        self._inner = inner
        self._running: set[str] = set()
        self._lock = threading.Lock()

    def once(self, key: str, handle: Callable[[], Report]) -> Report | None:
        with self._lock:
            if key in self._running:
                raise InProgress(f"{key} is being handled by another delivery")
            self._running.add(key)
        try:
            return self._inner.once(key, handle)
        finally:
            with self._lock:
                self._running.discard(key)


class DynamoThrottle:
    """botocore ``before-call`` hook: answers some DynamoDB calls with a throttling error."""

    OPERATIONS = ("PutItem", "UpdateItem", "DeleteItem", "GetItem")

    def __init__(self, rate: float, rng: random.Random) -> None:
        self._rate = rate
        self._rng = rng
        self._lock = threading.Lock()
        self.calls: Counter[str] = Counter()
        self.throttled: Counter[str] = Counter()

    def install(self, client: Any) -> None:
        for operation in self.OPERATIONS:
            client.meta.events.register(f"before-call.dynamodb.{operation}", self._hook(operation))

    def _hook(self, operation: str) -> Callable[..., Any]:
        def hook(**_: Any) -> Any:
            with self._lock:
                self.calls[operation] += 1
                if self._rng.random() >= self._rate:
                    return None
                self.throttled[operation] += 1
            parsed = {
                "Error": {"Code": "ProvisionedThroughputExceededException", "Message": "injected"},
                "ResponseMetadata": {"HTTPStatusCode": 400},
            }
            return SimpleNamespace(status_code=400, headers={}), parsed

        return hook


class OneCallAtATime:
    """A DynamoDB client whose item calls run one at a time.

    A real table applies a conditional write atomically; moto checks the condition and
    writes in two steps, so two threads can both win ``attribute_not_exists`` on one key
    (seen: 1 in ~300 races of two threads, enough for a concurrent duplicate to act twice
    in the soak). Serialising the calls restores what Powertools relies on."""

    ITEM_CALLS = frozenset({"put_item", "get_item", "update_item", "delete_item"})

    def __init__(self, client: Any) -> None:
        self._client = client
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._client, name)
        if name not in self.ITEM_CALLS:
            return attribute

        def call(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                return attribute(*args, **kwargs)

        return call


class ShortInvocation(LambdaContext):
    """A Lambda context whose invocation ends soon: Powertools expires an in-progress
    idempotency record with the invocation, and SQS redelivers a failed message only after
    its visibility timeout, which is longer (as AWS recommends)."""

    def __init__(self, remaining_ms: int) -> None:
        self.remaining_ms = remaining_ms

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


@dataclass
class LedgerUnderTest:
    ledger: Ledger
    throttled: Callable[[], dict[str, int]]  # injected faults so far, by where
    context: Any  # the Lambda context handle_batch is given
    visibility: float  # seconds a failed message stays invisible


@contextmanager
def ledger_for(config: SoakConfig, rng: random.Random) -> Iterator[LedgerUnderTest]:
    if config.ledger == "memory":
        memory = ThrottledLedger(InProgressGuard(MemoryLedger()), config.aws_fault_rate / 2, rng)
        yield LedgerUnderTest(
            memory,
            lambda: {"before_action": memory.before, "after_action": memory.after},
            None,
            0.0,
        )
        return
    import boto3
    from moto import mock_aws

    from lifeboat.aws.idempotency import PowertoolsLedger

    with mock_aws():
        client = boto3.client(
            "dynamodb",
            region_name=REGION,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        client.create_table(
            TableName=IDEMPOTENCY_TABLE,
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        throttle = DynamoThrottle(config.aws_fault_rate / 2, rng)
        throttle.install(client)
        powertools = PowertoolsLedger(IDEMPOTENCY_TABLE, boto3_client=OneCallAtATime(client))
        # A few seconds, not a Lambda's minutes: long enough that a batch on a busy machine
        # finishes inside its invocation, short enough that the soak does not wait long
        # for the records a throttled UpdateItem left in progress.
        context = ShortInvocation(remaining_ms=3000)
        powertools.register_lambda_context(context)
        yield LedgerUnderTest(powertools, lambda: dict(throttle.throttled), context, 3.1)
