"""A sweep's notices sorted before anything is split: those of the managed clusters go on.

``DescribeInstanceStatus`` answers for the whole region: the instances of other workloads
and of unmanaged clusters come in the same answer, in EC2's order. Each notice is triaged
(account, region, managed tag, served cluster: ``lifeboat.flow.routing.triage``) here, with
one directory lookup for the whole answer, before the pipeline splits what one message acts
on (``lifeboat.flow.split``): the split then counts only instances Lifeboat will act on, and
55 impaired instances of other workloads listed first cannot push 5 managed nodes out of
the message. What triage ends is reported here, with no ledger: the next sweep reports it
again, and a report is not a duplicate of the one a minute before.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from datetime import datetime

from lifeboat.flow.routing import NotYetKnown, triage
from lifeboat.model.instances import InstanceInfo
from lifeboat.model.notice import Notice
from lifeboat.model.report import Outcome, Report
from lifeboat.model.settings import Settings

Managed = Callable[[str | None], Collection[str] | None]


@dataclass(frozen=True)
class Sorted:
    """A sweep's (or a sweep part's) work: the notices that go on to their clusters, the
    reports already decided, and the instance facts looked up for them (the batch reuses
    them instead of describing the instances again)."""

    notices: list[Notice]
    reports: list[Report] = field(default_factory=list)
    infos: dict[str, InstanceInfo] = field(default_factory=dict)


def sort_out(
    notices: list[Notice],
    reports: list[Report],
    infos: dict[str, InstanceInfo],
    settings: Settings,
    now: datetime,
    managed: Managed,
) -> Sorted:
    """``notices`` triaged: the ones that go on, in their order, and a report for each of
    the others (after ``reports``, the sweep's own)."""
    going: list[Notice] = []
    decided = list(reports)
    for notice in notices:
        info = infos.get(notice.instance_id or "")
        try:
            checked = triage(
                notice, info, settings, now, managed(info.cluster if info is not None else None)
            )
        except NotYetKnown as unknown:
            why = f"{unknown}; the next sweep reports it again"
            decided.append(Report.for_notice(notice, Outcome.IGNORED, why))
            continue
        if checked.outcome is None:
            going.append(notice)
            continue
        decided.append(
            Report.for_notice(
                notice,
                checked.outcome,
                checked.reason,
                unmanaged=checked.unmanaged,
                cluster=checked.cluster,
            )
        )
    return Sorted(going, decided, infos)
