"""``python -m bench.window_search``: CPU time of one deferral decision whose window search is long.

Issue 10.9: a deferral used to walk every budget window up to its deadline. The two cases the
issue names are timed through ``decide`` (the public policy entry point), so the same script
measures the code before and after the bound:

- ``freeze-*/2-14d`` / ``-60d``: a pool with an always-active budget ``"1"`` that one
  disrupting node uses up, plus a ``"0"`` freeze every other minute (``*/2 * * * *`` for 1m);
  scheduled maintenance 14 or 60 days away, so the decision waits for capacity.
- ``start-2400``: the sample pool ``general`` (``20%`` and a weekday business-hours freeze) with
  its 20 % used up, and an AWS Health startTime in the year 2400.

Each case is decided ``--repeat`` times; the median wall time is printed, and with ``--json``
written as ``{case: seconds}`` so two runs can be compared as a ratio.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from lifeboat.decide import decide
from lifeboat.model.notice import Kind, Notice
from lifeboat.model.settings import Settings
from lifeboat.model.target import ClaimRef, PoolCounts, Target

NOW = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)


def _pool(budgets: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "bench"},
        "spec": {"disruption": {"budgets": budgets}},
    }


def _node() -> dict[str, Any]:
    return {
        "metadata": {"name": "ip-10-0-0-1.ec2.internal", "labels": {}},
        "spec": {"providerID": "aws:///us-east-1a/i-0123456789abcdef0"},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


def _case(budgets: list[dict[str, str]], nodes: int, disrupting: int, deadline: datetime) -> Any:
    notice = Notice(
        kind=Kind.SCHEDULED_CHANGE,
        event_id="bench",
        event_time=NOW - timedelta(minutes=5),
        instance_id="i-0123456789abcdef0",
        deadline=deadline,
    )
    target = Target(
        "i-0123456789abcdef0",
        node=_node(),
        claim=ClaimRef("bench-abcde", "uid"),
        nodepool_name="bench",
        nodepool=_pool(budgets),
        counts=PoolCounts(node_count=nodes, disrupting=disrupting),
        pods=(),
    )
    return notice, target


FREEZE = [{"nodes": "1"}, {"nodes": "0", "schedule": "*/2 * * * *", "duration": "1m"}]
GENERAL = [{"nodes": "20%"}, {"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "8h"}]

CASES: Mapping[str, tuple[list[dict[str, str]], int, int, datetime]] = {
    "freeze-*/2-14d": (FREEZE, 10, 1, NOW + timedelta(days=14)),
    "freeze-*/2-60d": (FREEZE, 10, 1, NOW + timedelta(days=60)),
    "start-2400": (GENERAL, 6, 2, datetime(2400, 1, 1, 9, tzinfo=UTC)),
}


def run(repeat: int) -> dict[str, float]:
    settings = Settings()
    results: dict[str, float] = {}
    for name, (budgets, nodes, disrupting, deadline) in CASES.items():
        notice, target = _case(budgets, nodes, disrupting, deadline)
        times = []
        for _ in range(repeat):
            started = time.perf_counter()
            decision = decide(notice, target, settings, NOW)
            times.append(time.perf_counter() - started)
        results[name] = statistics.median(times)
        print(f"{name:<16} {results[name]:9.4f} s  {decision.outcome}: {decision.reason[-90:]}")
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", metavar="FILE", help="write {case: median seconds} here")
    args = parser.parse_args(argv)
    results = run(args.repeat)
    if args.json:
        with open(args.json, "w") as out:
            json.dump(results, out, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
