"""What ``lifeboat windows`` shows, as data: each NodePool's budgets, allowance and windows
over the horizon. Read by the text and JSON views (``lifeboat_local.windows``) and the chart
(``lifeboat_local.svg``), which each depend on this module, not on one another."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from lifeboat.karpenter.budgets import LIFEBOAT_REASON, Allowance, Budget, Segment
from lifeboat.model.settings import Settings

HOUR = timedelta(hours=1)
DAY = timedelta(days=1)


@dataclass(frozen=True)
class PoolWindows:
    """Everything ``lifeboat windows`` shows about one NodePool."""

    name: str
    node_count: int
    disrupting: int
    allowance: Allowance
    budgets: tuple[Budget, ...] = ()
    # Over the horizon; empty when the budgets are invalid.
    segments: tuple[Segment, ...] = ()
    error: str | None = None  # invalid budgets: the pool is blocked throughout
    opted_out: bool = False  # lifeboat.dev/disabled: Lifeboat leaves the pool alone

    @property
    def blocked(self) -> bool:
        return self.error is not None


@dataclass(frozen=True)
class Windows:
    at: datetime
    end: datetime  # at + days: the horizon is [at, end)
    chart_start: datetime  # midnight UTC of ``at``
    chart_end: datetime  # the midnight at or after ``end``
    pools: tuple[PoolWindows, ...] = field(default_factory=tuple)
    reason: str = LIFEBOAT_REASON
    settings: Settings = field(default_factory=Settings)

    @property
    def days(self) -> float:
        return (self.end - self.at) / DAY

    @property
    def invalid(self) -> list[PoolWindows]:
        return [pool for pool in self.pools if pool.blocked]


def allowed_text(limit: int | None, disrupting: int) -> str:
    return "no limit" if limit is None else str(max(0, limit - disrupting))


def limit_text(limit: int | None) -> str:
    return "no limit" if limit is None else str(limit)
