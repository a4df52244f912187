"""Test doubles for what Lambda and AWS hand the handler: a context, a metric sink, a clock,
an Auto Scaling lifecycle recorder."""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple

from lifeboat.events.notice import LifecycleHook
from tests.support.events import ACCOUNT, REGION


@dataclass(frozen=True)
class AwsCredentials:
    """What the ``aws`` fixture puts in the environment (moto accepts any)."""

    access_key_id: str = "testing"
    secret_access_key: str = "testing"
    session_token: str = "testing"


@dataclass
class LambdaContext:
    """The attributes Powertools reads off a Lambda context (the Logger's fields, the
    idempotency utility's in-progress expiry)."""

    function_name: str = "lifeboat-InterruptionFunction-1"
    function_version: str = "$LATEST"
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = (
        f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:lifeboat-InterruptionFunction-1"
    )
    aws_request_id: str = "0f5e2c1a-1111-4000-8000-000000000001"
    log_group_name: str = "/aws/lambda/lifeboat"
    log_stream_name: str = "2026/12/01/[$LATEST]0123"
    remaining_ms: int = 58_000

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


class Metric(NamedTuple):
    name: str
    value: float
    unit: str
    dimensions: dict[str, str]


@dataclass
class RecordingMetrics:
    """A ``MetricSink`` that keeps every metric emitted (safe across threads)."""

    emitted: list[Metric] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def emit(self, name: str, value: float, unit: str, dimensions: dict[str, str]) -> None:
        with self._lock:
            self.emitted.append(Metric(name, value, unit, dict(dimensions)))

    def named(self, name: str) -> list[tuple[float, str, dict[str, str]]]:
        """(value, unit, dimensions) of each metric called ``name``, in order."""
        return [(m.value, m.unit, m.dimensions) for m in self.emitted if m.name == name]

    def count(self, name: str) -> int:
        return sum(1 for m in self.emitted if m.name == name)

    def outcomes(self) -> Counter[str]:
        """The ``Outcomes`` metric, counted by its ``outcome`` dimension."""
        return Counter(m.dimensions["outcome"] for m in self.emitted if m.name == "Outcomes")


@dataclass
class Clock:
    """The injectable clock, set by the test: ``clock.now = ...``."""

    now: datetime

    def __call__(self) -> datetime:
        return self.now


@dataclass
class RecordingLifecycle:
    """Stands in for ``AutoScalingLifecycle``: keeps (call, instance id) per call."""

    calls: list[tuple[str, str]] = field(default_factory=list)

    def complete(self, hook: LifecycleHook, result: str = "CONTINUE") -> None:
        self.calls.append(("complete", hook.instance_id))

    def heartbeat(self, hook: LifecycleHook) -> None:
        self.calls.append(("heartbeat", hook.instance_id))
