"""What became of a notice: the outcome every report carries (``lifeboat.model.report``) and every
decision names (``lifeboat.decide``). A module of its own so that decide and report each
depend on it, not on one another."""

from __future__ import annotations

from enum import StrEnum


class Outcome(StrEnum):
    ACTED = "acted"
    DEFERRED = "deferred"
    IGNORED = "ignored"
    REJECTED = "rejected"
