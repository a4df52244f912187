"""``python -m bench.budget_scan``: CPU time of one voluntary decision at the CRD's 50 budgets.

Issue 23.5: a NodePool may carry 50 budgets (the NodePool CRD's ``maxItems``); each decision
weighs them all, and a deferral searches their windows. Cases, decided through ``decide``:

- ``50-freezes-waiting``: ``"1"`` always, used up by one disrupting node, and 49 ``"0"``
  freezes of one minute at different minutes of every other hour (the decision waits for
  capacity, scheduled maintenance 14 days away: the window search runs);
- ``50-freezes-permitted``: the same budgets with nothing disrupting (the decision acts);
- ``50-percent-budgets``: 50 always-active percentage budgets (the allowance alone).

The target: under 50 ms each. The median of ``--repeat`` decisions is printed, and with
``--json`` written as ``{case: seconds}``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Mapping
from datetime import datetime, timedelta

from bench.window_search import NOW, _case
from lifeboat.decide import decide
from lifeboat.model.settings import Settings

TARGET_SECONDS = 0.050
FREEZES = [{"nodes": "1"}] + [
    {"nodes": "0", "schedule": f"{minute} */2 * * *", "duration": "1m"} for minute in range(49)
]
PERCENTS = [{"nodes": f"{percent}%"} for percent in range(1, 51)]

CASES: Mapping[str, tuple[list[dict[str, str]], int, int, datetime]] = {
    "50-freezes-waiting": (FREEZES, 10, 1, NOW + timedelta(days=14)),
    "50-freezes-permitted": (FREEZES, 10, 0, NOW + timedelta(days=14)),
    "50-percent-budgets": (PERCENTS, 200, 0, NOW + timedelta(days=14)),
}


def run(repeat: int) -> dict[str, float]:
    settings = Settings()
    results: dict[str, float] = {}
    for name, (budgets, nodes, disrupting, deadline) in CASES.items():
        assert len(budgets) == 50
        notice, target = _case(budgets, nodes, disrupting, deadline)
        times = []
        for _ in range(repeat):
            started = time.process_time()
            decision = decide(notice, target, settings, NOW)
            times.append(time.process_time() - started)
        results[name] = statistics.median(times)
        verdict = "ok" if results[name] < TARGET_SECONDS else "OVER 50 ms"
        print(
            f"{name:<22} {results[name] * 1000:8.1f} ms CPU  {verdict}  "
            f"{decision.outcome}: {decision.reason[-70:]}"
        )
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", metavar="FILE", help="write {case: median seconds} here")
    args = parser.parse_args(argv)
    results = run(args.repeat)
    if args.json:
        with open(args.json, "w") as out:
            json.dump(results, out, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
