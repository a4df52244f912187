"""An injected clock for code that waits: ``sleep`` moves ``clock``, so nothing waits in real
time and every deadline is judged on the same clock the code reads."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta


@dataclass
class InjectedTime:
    """A clock and a sleep that moves it; ``on_sleep`` runs after each sleep with the number
    of sleeps so far (the world changing while the code waits)."""

    now: datetime
    slept: list[float] = field(default_factory=list)
    on_sleep: Callable[[int], None] = lambda _: None

    def clock(self) -> datetime:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += timedelta(seconds=seconds)
        self.on_sleep(len(self.slept))
