"""A wake-up: work that must happen later (``lifeboat.wakeup.codec`` says how it travels).

The data alone, which both the queue's codec (``lifeboat.wakeup.codec``) and the wire format's
pydantic models (``lifeboat.wakeup.format``, loaded with the first wake-up) build on.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum

from lifeboat.model.notice import Notice
from lifeboat.model.target import ClaimRef

MARKER = "lifeboat-wakeup"
VERSION = 1
# The most instances a remainder may name: lifeboat.flow.split.NOTICES_PER_MESSAGE (a test keeps
# the two equal; this module cannot import that one, which imports it).
MAX_REMAINDER = 50


class Task(StrEnum):
    DECIDE = "decide"  # a deferred voluntary notice: decide again against today's cluster
    FINISH_REPLACEMENT = "finish-replacement"  # delete the old claim once replaced
    # The when-ready hand-over (lifeboat.marks.handover): delete the old claim once its
    # replacement is initialized, give up after ``handover.PATIENCE``.
    HAND_OVER = "hand-over"
    CONTINUE_DRAIN = "continue-drain"  # evictions a PDB held back
    ROTATE = "rotate"  # look at a rotation again (lifeboat.rotation); about no one instance
    # The instances of a large notice one message did not take on (lifeboat.flow.split).
    REMAINDER = "remainder"
    # A node only cordoned for a rebalance recommendation, still running long after: uncordon.
    RELEASE_CORDON = "release-cordon"
    # Instances of an instance status sweep one message did not take on (lifeboat.flow.split):
    # EC2 is asked again about them; the wake-up names them and carries nothing EC2 said.
    SWEEP_PART = "sweep-part"


@dataclass(frozen=True)
class Wakeup:
    """Lifeboat's own deferred work: a task on a notice, due at an instant."""

    task: Task
    notice: Notice
    due: datetime
    replacement: str | None = None
    old_nodeclaim: str | None = None
    old_nodeclaim_uid: str | None = None
    started: datetime | None = None
    attempt: int = 0
    # The instance's cluster, known when scheduled: a terminated instance may no longer be
    # described by EC2 when its follow-up comes due.
    cluster: str | None = None
    # ``REMAINDER``: the instances it names (``notice`` is their event, about no instance);
    # ``SWEEP_PART``: the instances EC2 is asked about again (``notice`` is the sweep's).
    instances: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """Unique per wake-up, so a scheduler can be asked twice without two schedules."""
        key = f"{self.notice.dedup_key}#{self.task}#{self.due.strftime('%Y%m%dT%H%M%S')}"
        if self.instances:
            # Remainders of one event differ only in the instances they name.
            key += "#" + hashlib.sha256(",".join(self.instances).encode()).hexdigest()[:32]
        return key

    @property
    def old_claim(self) -> ClaimRef | None:
        """The NodeClaim a replacement stands in for (``FINISH_REPLACEMENT``)."""
        if not self.old_nodeclaim:
            return None
        return ClaimRef(self.old_nodeclaim, self.old_nodeclaim_uid)

    def again(self, due: datetime) -> Wakeup:
        return replace(self, due=due, attempt=self.attempt + 1)
