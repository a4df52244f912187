"""``python -m bench.soak --events 10000``: the soak at a larger scale (``make soak``).

Mixed events from the samples, 5 % duplicates, pairs of different notices for one instance,
wake-ups delivered twice, 5 % Kubernetes faults (429, 500, 503, a few timeouts), 5 % AWS
faults (DescribeInstances and the idempotency ledger throttled), through
``lifeboat.runtime.handler.handle_batch`` and a simulated SQS queue with a dead-letter queue; prints
the accounting (lost, repeated actions, replacements per old NodeClaim, outcomes, runtime)
as JSON and exits 1 if any invariant failed. ``--ledger dynamodb`` uses the real
PowertoolsLedger on moto (slow: ~16 ms per entry).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from .config import SoakConfig
from .run import run_soak


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__)
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--nodes", type=int, default=None, help="default: events / 7, at least 300")
    parser.add_argument("--ledger", choices=("memory", "dynamodb"), default="memory")
    parser.add_argument("--workers", type=int, default=SoakConfig.workers)
    parser.add_argument("--seed", type=int, default=SoakConfig.seed)
    parser.add_argument("--follow-minutes", type=int, default=10)
    args = parser.parse_args(argv)
    config = SoakConfig(
        events=args.events,
        nodes=args.nodes or max(300, args.events // 7),
        ledger=args.ledger,
        workers=args.workers,
        seed=args.seed,
        follow_minutes=args.follow_minutes,
    )
    result = run_soak(config)
    print(json.dumps(result.summary(), indent=2))
    for problem in [*result.replacement_violations, *result.violations][:50]:
        print("VIOLATION:", problem)
    return 1 if result.violations or result.replacement_violations else 0


if __name__ == "__main__":
    sys.exit(main())
