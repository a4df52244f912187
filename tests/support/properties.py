"""How many examples a property test tries. The number a test states is its thorough run's,
which ``make bench-check`` makes (``LIFEBOAT_PROPERTY_DEPTH=full``); ``make test`` tries a
quarter of it (never fewer than 100), so the suite stays within its time on two cores while
the long searches still run before a release."""

from __future__ import annotations

import os

FULL = os.environ.get("LIFEBOAT_PROPERTY_DEPTH") == "full"


def examples(thorough: int) -> int:
    return thorough if FULL else max(100, thorough // 4)
