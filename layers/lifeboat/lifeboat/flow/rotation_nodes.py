"""The pipeline's own steps lent to a rotation (``lifeboat.rotation``) for its nodes: imported
with a rotation's first message, as the rotation is, not at the cold start."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from lifeboat.decide import Decision
from lifeboat.flow.act import Actor
from lifeboat.flow.batch import Batch
from lifeboat.kube.client import KubeApi
from lifeboat.model.instances import InstanceDirectory
from lifeboat.model.notice import Notice
from lifeboat.model.report import Report
from lifeboat.model.settings import Settings
from lifeboat.model.target import Target
from lifeboat.wakeup.codec import Wakeup


@dataclass(frozen=True)
class RotationNodes:
    """The pipeline's triage, resolve, decide and act, lent to a rotation for its nodes: the
    pipeline hands over its own handling of a notice and of a wake-up, bound to the batch."""

    batch: Batch
    directory: InstanceDirectory
    settings: Settings
    handle: Callable[[Notice], Report]
    wake: Callable[[Wakeup], Report]

    def decide(self, notices: list[Notice]) -> list[Report]:
        infos = self.batch.infos
        wanted = sorted({n.instance_id for n in notices if n.instance_id} - infos.keys())
        if wanted:  # one DescribeInstances for the nodes a look starts
            infos.update(self.directory.describe(wanted))
        return [self.handle(notice) for notice in notices]

    def let_go(
        self, kube: KubeApi, notice: Notice, target: Target, decision: Decision, now: datetime
    ) -> None:
        """A node the rotation lets go: only its waiting mark is cleared, at ``now``."""
        Actor(kube, self.settings, None, clock=lambda: now).carry_out(notice, target, decision)
