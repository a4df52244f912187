"""A sweep request and its parts, read: EC2 asked about instance health (``lifeboat.aws.sweep``),
the Capacity Blocks ending, the maintenance holds of marked nodes checked against a complete
answer, the hand-overs whose wake-ups no longer run found, and every notice triaged before
any split (``lifeboat.flow.sweep_triage``). Nothing is acted on here: what comes out is read
like any other message's notices.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

from lifeboat.aws.capacity_blocks import find_instances
from lifeboat.aws.sweep import sweep_request_problem
from lifeboat.events import parse_statuses
from lifeboat.events.capacity_block import read_reservations, unread_reservations
from lifeboat.events.instance_status import read_response
from lifeboat.flow.batch import MessageResult, Swept
from lifeboat.flow.config import FlowConfig
from lifeboat.flow.handover_sweep import orphaned
from lifeboat.flow.sweep_holds import ClusterHolds, listed_events, listing_failed, look_at, relisted
from lifeboat.flow.sweep_triage import Sorted, sort_out
from lifeboat.model.instances import InstanceInfo
from lifeboat.model.notice import Kind, MalformedMessage, Notice
from lifeboat.model.report import Outcome, Report
from lifeboat.wakeup.codec import Wakeup

# Clusters whose labelled nodes a sweep lists at once (lifeboat.aws.sweep.vanished).
SWEEP_LISTS_AT_ONCE = 8


class SweepReader:
    """Reads a sweep request (or a part of one) into the notices it calls for."""

    def __init__(self, config: FlowConfig) -> None:
        self._config = config

    def request(
        self, message: dict[str, Any], found: dict[str, InstanceInfo]
    ) -> Swept | MessageResult:
        """A sweep request, and the hand-overs whose own wake-ups no longer run, which each
        sweep takes over (lifeboat.flow.handover_sweep, issue 33.3)."""
        return self._with_hand_overs(self.statuses(message, found))

    def statuses(
        self, message: dict[str, Any], found: dict[str, InstanceInfo]
    ) -> Sorted | MessageResult:
        """A sweep request (a trigger from the stack's own schedule): EC2 asked now, every
        page of each filter set, and the answer's notices sorted before any split."""
        config = self._config
        problem = sweep_request_problem(message, config.sweep_schedule)
        if problem is not None:
            ident = message.get("id")
            raise MalformedMessage(problem, ident if isinstance(ident, str) else None)
        if config.statuses is None:
            reason = (
                "instance status sweep requested, but the sweep is off: this pipeline reads "
                "no EC2 status (InstanceStatusSweepMinutes=0)"
            )
            return MessageResult(
                [Report(None, str(Kind.INSTANCE_IMPAIRED), Outcome.IGNORED, reason)]
            )
        pages = config.statuses.pages()
        return self._swept(pages, found, whole=config.statuses.complete(pages), blocks=True)

    def part(self, wakeup: Wakeup, found: dict[str, InstanceInfo]) -> Swept | MessageResult:
        """A sweep's instances one message did not take on: EC2 asked about them again."""
        if self._config.statuses is None:
            reason = "sweep part, but this pipeline reads no EC2 status"
            return MessageResult([Report.for_notice(wakeup.notice, Outcome.IGNORED, reason)])
        pages = self._config.statuses.describe(list(wakeup.instances))
        part = self._swept(pages, found, whole=False)
        return Swept(part.notices, reports=part.reports, infos=part.infos)

    def _swept(
        self,
        pages: list[dict[str, Any]],
        found: dict[str, InstanceInfo],
        *,
        whole: bool,
        blocks: bool = False,
    ) -> Sorted:
        """EC2's answer read: with a sweep request's (``blocks``), the Capacity Blocks ending
        (each block's notice one per instance: lifeboat.aws.capacity_blocks); with a whole
        answer, the holds of the marked nodes first (ends first, so a maintenance EC2 moved
        is undone before the new start is acted on); then every notice triaged with one
        directory lookup."""
        config = self._config
        now = config.clock()
        notices = self._recheck_old(parse_statuses({"Pages": pages}, received_at=now), now)
        ends: list[Notice] = []
        reports: list[Report] = []
        if blocks:
            notices = notices + find_instances(self._ending_blocks(now), config.reservations, found)
        if whole:
            holds = self._holds(read_response({"Pages": pages}, received_at=now), now)
            ends = [n for found in holds for n in found.ends]
            reports = [r for found in holds for r in found.reports]
            by_instance = {i: h for found in holds for i, h in found.holds.items()}
            notices = relisted(notices, by_instance)
        notices = ends + notices
        wanted = sorted({n.instance_id for n in notices if n.instance_id} - found.keys())
        found.update(config.directory.describe(wanted) if wanted else {})
        return sort_out(notices, reports, dict(found), config.settings, now, config.managed)

    def _recheck_old(self, notices: list[Notice], now: datetime) -> list[Notice]:
        """An impairment EC2 reported longer ago than ``stale_notice_after`` (an answer
        that waited) is not acted on as it was read: EC2 is asked again about those
        instances, and what it says now replaces it (nothing, if they recovered)."""
        limit = self._config.settings.stale_notice_after
        old = {
            n.instance_id
            for n in notices
            if n.kind is Kind.INSTANCE_IMPAIRED
            and n.instance_id
            and n.deadline is not None
            and now - n.deadline > limit
        }
        statuses = self._config.statuses
        if not old or statuses is None:
            return notices
        again = parse_statuses({"Pages": statuses.describe(sorted(old))}, received_at=now)
        kept = [
            n for n in notices if n.kind is not Kind.INSTANCE_IMPAIRED or n.instance_id not in old
        ]
        fresh = [n for n in again if n.kind is Kind.INSTANCE_IMPAIRED and n.instance_id in old]
        if len(fresh) < len(old):  # said, so the message still ends in a report
            recovered = ", ".join(sorted(old - {n.instance_id for n in fresh}))
            why = f"EC2, asked again, no longer reports impaired: {recovered}"
            kept.append(Notice(Kind.INSTANCE_IMPAIRED, "instance-status", now, ignore_reason=why))
        return kept + fresh

    def _holds(self, statuses: list[Any], now: datetime) -> list[ClusterHolds]:
        """Each served cluster's nodes labelled ``lifeboat.dev/ec2-maintenance`` against a
        complete sweep (lifeboat.flow.sweep_holds): one LIST per cluster, side by side; a
        cluster that cannot be looked at is reported as an error, with its name."""
        config = self._config
        listed = listed_events(statuses)

        def one(cluster: str | None) -> ClusterHolds:
            try:
                kube = config.clusters.kube(cluster)
                return look_at(kube, cluster, listed, now, dry_run=config.settings.dry_run)
            except Exception as error:  # that cluster's ends wait for the next sweep
                return ClusterHolds(reports=[listing_failed(cluster, error, now)])

        try:
            clusters = config.served_clusters()
        except Exception as error:  # discovery failed: nothing ends this time, said so
            return [ClusterHolds(reports=[listing_failed(None, error, now)])]
        # The clusters are listed side by side: a sweep's time is not their sum.
        with ThreadPoolExecutor(max_workers=min(SWEEP_LISTS_AT_ONCE, len(clusters))) as pool:
            return list(pool.map(one, clusters))

    def _ending_blocks(self, now: datetime) -> list[Notice]:
        """The Capacity Blocks ending within 40 minutes (lifeboat.events.capacity_block)."""
        if self._config.capacity_reservations is None:
            return []
        try:
            pages = self._config.capacity_reservations.pages()
        except Exception as error:  # the instance statuses go on; the next sweep looks again
            return [unread_reservations(error, now)]
        return [n for page in pages for n in read_reservations(page, now=now)]

    def _with_hand_overs(self, found: Sorted | MessageResult) -> Swept | MessageResult:
        if not isinstance(found, Sorted):
            return found
        swept = Swept(found.notices, reports=found.reports, infos=found.infos)
        config = self._config
        now = config.clock()
        try:
            clusters = config.served_clusters()
        except Exception as error:  # discovery failed: the hand-overs wait, said so
            swept.problems.append(f"could not find the clusters served: {error}")
            return swept
        for cluster in clusters:
            try:
                wakeups, problems = orphaned(config.clusters.kube(cluster), cluster, now)
            except Exception as error:  # that cluster's hand-overs wait for the next sweep
                where = f"cluster {cluster}" if cluster else "the cluster"
                problems, wakeups = [f"could not list the hand-overs of {where}: {error}"], []
            swept.hand_overs += wakeups
            swept.problems += problems
        return swept
