"""The emulator's clock: the wall clock plus an offset that tests and replays move forward.

Everything time-based in the emulator reads it: creationTimestamp and deletionTimestamp, a
Terminating pod's end of grace period, the ages in server-side tables. Time flows as on a
real server (a pod deleted with 30 s of grace is gone 30 s later), and a test or
``lifeboat replay --follow`` jumps it with :meth:`Clock.advance` or :meth:`Clock.set`
instead of sleeping.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta


class Clock:
    def __init__(self) -> None:
        self._offset = timedelta(0)
        # Set: time stands still at this instant until moved (a replay's simulated time).
        self._frozen: datetime | None = None
        self._lock = threading.Lock()

    def now(self) -> datetime:
        frozen = self._frozen
        return frozen if frozen is not None else datetime.now(UTC) + self._offset

    def advance(self, seconds: float) -> None:
        """Moves time forward (never back) by ``seconds``."""
        if seconds < 0:
            raise ValueError("the emulator's clock only moves forward")
        with self._lock:
            if self._frozen is not None:
                self._frozen += timedelta(seconds=seconds)
            else:
                self._offset += timedelta(seconds=seconds)

    def set(self, moment: datetime, *, frozen: bool = False) -> None:
        """From now on ``now()`` reads ``moment`` and flows on from there; ``frozen``: it
        stays at ``moment`` until moved again, so that what happens at an instant (a pod's
        grace period ending) does not depend on how long the machine took to get there."""
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        with self._lock:
            self._frozen = moment if frozen else None
            self._offset = moment - datetime.now(UTC)


def rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(text: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
