"""The soak's knobs, and the fixed facts of its world."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from lifeboat.runtime.service import BATCH_WORKERS

# A Tuesday, 14:05 UTC: the "general" pool's business-hours freeze is on, so voluntary
# notices there are deferred while other pools act within their budgets.
START = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)


@dataclass
class SoakConfig:
    events: int = 2000
    nodes: int = 240
    # Re-sent messages (same body, new message id): half in the same batch, half later.
    duplicate_rate: float = 0.05
    # Pairs of different notices for one instance (Spot + state change, Spot + capacity
    # reservation, Spot + rebalance, rebalance + scheduled change), as a share of events.
    pair_rate: float = 0.06
    # Wake-ups delivered twice (the second right behind the first).
    wakeup_duplicate_rate: float = 0.2
    kube_fault_rate: float = 0.05
    # What a faulted request is answered. A 429 carries Retry-After: 1, as API Priority and
    # Fairness sends it, and Lifeboat waits that second: real time, not CPU.
    kube_fault_statuses: tuple[int, ...] = (429, 500, 503)
    kube_timeout_rate: float = 0.0005
    # The emulator hangs this long on a dropped request; the client gives up sooner.
    timeout_delay: float = 0.6
    request_timeout: float = 0.3
    # Split between DescribeInstances (per batch) and the ledger (per notice).
    aws_fault_rate: float = 0.05
    batch_size: int = 10
    max_receive: int = 5
    # Messages of a batch handled at once: as many as the Lambda handles.
    workers: int = BATCH_WORKERS
    poison_nodes: int = 2
    seed: int = 20261201
    ledger: str = "memory"  # or "dynamodb": PowertoolsLedger on moto
    # Simulated minutes of wake-ups (deferred notices looked at again, drains continuing) to
    # follow: past the first 5-minute recheck of the notices waiting for capacity.
    follow_minutes: int = 6
