"""Injected failures: scripted ones (fail_next) and seeded random ones (set_fault_rate)."""

from __future__ import annotations

import random
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from .errors import ApiError

_MESSAGES = {
    429: "Too many requests, please try again later.",
    500: "Internal error occurred: injected by the emulator",
    503: "The server is currently unable to handle the request (injected by the emulator)",
    504: "The server was unable to return a response in the time allotted (injected)",
}


def injected_error(status: int) -> ApiError:
    """The Status a real server sends for `status`; 429 carries Retry-After as upstream."""
    if status == 429:
        return ApiError(
            429, _MESSAGES[429], details={"retryAfterSeconds": 1}, headers={"Retry-After": "1"}
        )
    return ApiError(status, _MESSAGES.get(status, f"injected failure {status}"))


@dataclass
class _ScriptedFailure:
    status: int
    remaining: int
    verb: str | None
    resource: str | None
    name: str | None

    def matches(self, verb: str, resource: str, name: str) -> bool:
        return (
            self.verb in (None, verb)
            and self.resource in (None, resource)
            and self.name in (None, name)
        )


@dataclass(frozen=True)
class Fault:
    """What to do to one request: answer `status`, or (status None) hang `delay` s and drop."""

    status: int | None
    delay: float = 0.0


class FaultInjector:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._scripted: list[_ScriptedFailure] = []
        self._random = random.Random(0)
        self._rate = 0.0
        self._statuses: tuple[int, ...] = ()
        self._timeout_rate = 0.0
        self._timeout_delay = 2.0

    def fail_next(
        self, status: int, times: int, verb: str | None, resource: str | None, name: str | None
    ) -> None:
        with self._lock:
            self._scripted.append(_ScriptedFailure(status, times, verb, resource, name))

    def set_rate(
        self, rate: float, seed: int, statuses: Sequence[int], timeout_rate: float, delay: float
    ) -> None:
        with self._lock:
            self._random = random.Random(seed)
            self._rate = rate
            self._statuses = tuple(statuses)
            self._timeout_rate = timeout_rate
            self._timeout_delay = delay

    def clear(self) -> None:
        with self._lock:
            self._scripted.clear()
            self._rate = self._timeout_rate = 0.0

    def next_fault(self, verb: str, resource: str, name: str) -> Fault | None:
        """Scripted failures first (in the order given), then one seeded random draw."""
        with self._lock:
            for failure in self._scripted:
                if failure.matches(verb, resource, name):
                    failure.remaining -= 1
                    if failure.remaining <= 0:
                        self._scripted.remove(failure)
                    return Fault(failure.status)
            if not self._rate and not self._timeout_rate:
                return None
            # One draw per request keeps a seeded run reproducible request by request.
            draw = self._random.random()
            if draw < self._timeout_rate:
                return Fault(None, self._timeout_delay)
            if draw < self._timeout_rate + self._rate and self._statuses:
                return Fault(self._random.choice(self._statuses))
            return None
