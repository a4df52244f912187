"""The policy, pure: no I/O, the clock passed in.

- :func:`decide` judges a notice about an instance (``decide.notice``);
- :mod:`~lifeboat.decide.wakeups` judges Lifeboat's own follow-up work when it comes due;
- :func:`follow_ups` says which follow-ups a decision, once carried out, calls for;
- :mod:`~lifeboat.decide.model` holds the Decision, its Steps and the shared timings.

May import model/, events/, kube's pure views, marks/, karpenter/ and wakeup/'s model; never
aws/, flow/, telemetry/ or anything that does I/O (tests/unit/project/test_layer_rooms.py).
"""

from lifeboat.decide.followups import follow_ups
from lifeboat.decide.model import (
    FOLLOW_UP_INTERVAL,
    RECHECK_INTERVAL,
    VOLUNTARY_PATIENCE,
    Decision,
    Step,
    ignore,
)
from lifeboat.decide.notice import decide

__all__ = [
    "FOLLOW_UP_INTERVAL",
    "RECHECK_INTERVAL",
    "VOLUNTARY_PATIENCE",
    "Decision",
    "Step",
    "decide",
    "follow_ups",
    "ignore",
]
