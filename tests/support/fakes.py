"""Test doubles for what Lambda hands the handler: a context and a metric sink. (A settable
clock and an Auto Scaling recorder are ``lifeboat_local.replay``'s ``SimulatedClock`` and
``RecordedLifecycle``, which replay itself uses.)"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import NamedTuple

from tests.support.events import ACCOUNT, REGION


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
