"""``python -m bench.soak --events 10000``: the soak of ``tests/integration/test_soak.py`` at
a larger scale. Mixed events from the samples, 5 % duplicates, 5 % Kubernetes faults (429,
500, 503, a few timeouts), 5 % AWS faults (DescribeInstances and the idempotency ledger
throttled), through ``lifeboat.handler.handle_batch`` and a simulated SQS queue with a
dead-letter queue; prints the accounting (lost, repeated actions, outcomes, runtime) as JSON
and exits 1 if any invariant failed. ``--ledger dynamodb`` uses the real PowertoolsLedger on
moto (slow: ~16 ms per entry).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    from tests.integration.soak_harness import main as soak_main

    return soak_main(argv)


if __name__ == "__main__":
    sys.exit(main())
