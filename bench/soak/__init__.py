"""The soak: thousands of mixed AWS warnings, with duplicates, pairs of different notices for
one instance, duplicated wake-ups and faults, through the real handler
(``lifeboat.runtime.handler.handle_batch``) fed by a simulated SQS queue; then an audit that every
message is accounted for and that no action was done twice, judged by what the API server
accepted: one old NodeClaim, at most one replacement.

``python -m bench.soak --events 10000`` (``make soak``) prints the accounting as JSON and
exits 1 on any violation; ``tests/integration/bench/test_soak.py`` runs 2,000 events in
``make test``. Modules: ``config`` (the knobs), ``world`` (the cluster, on
``bench.cluster``), ``messages`` (what is sent), ``faults`` (AWS faults and ledgers),
``queue`` (SQS and the Lambda service around ``handle_batch``), ``audit``, ``run``.

Nothing of Lifeboat is patched: faults enter through the pipeline's own parameters (the
instance directory, the ledger), botocore's event hooks and the emulator's fault injection;
each message's fate is read from what ``handle_batch`` returns and logs.
"""

from .config import START, SoakConfig
from .run import SoakResult, run_soak, unlucky

__all__ = ["START", "SoakConfig", "SoakResult", "run_soak", "unlucky"]
