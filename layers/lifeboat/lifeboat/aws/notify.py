"""Notifications: what Lifeboat did, as EventBridge events anyone can route.

Every action, every forced action and every give-up is put on the account's default event
bus with source ``lifeboat`` and one detail-type per kind of outcome
(:data:`DETAIL_TYPES`), so an operator routes what matters to them with an ordinary rule:
to SNS, a chat channel, a paging tool (template.yaml has an optional rule and topic).

Publishing is best effort: the actions were taken before, and failing the message now would
only repeat a decision already carried out. Entries go ten to a ``PutEvents`` call (its
limit); an entry EventBridge refuses, or a call that fails, is logged and counted
(``NotificationFailures``), never raised.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from lifeboat.events.capacity_block import TERMINATION_LEAD
from lifeboat.model.notice import Kind
from lifeboat.model.report import Outcome, Report

SOURCE = "lifeboat"
ACTION = "Lifeboat Node Action"
FORCED_ACTION = "Lifeboat Forced Node Action"
GIVE_UP = "Lifeboat Notice Given Up"
# A rotation paused at a checkpoint, failed, completed or rolled back (never "... Requested":
# those are the commands the stack's rotation rule takes in).
ROTATION_CHANGE = "Lifeboat Rotation Changed"
# A node of an ending Capacity Block acted on: published beside its action, with the
# reservation and the instant EC2 starts terminating, so a training job can checkpoint.
CAPACITY_BLOCK_ENDING = "Lifeboat Capacity Block Ending"
DETAIL_TYPES = (ACTION, FORCED_ACTION, GIVE_UP, ROTATION_CHANGE, CAPACITY_BLOCK_ENDING)
# PutEvents takes at most 10 entries a call.
ENTRIES_PER_CALL = 10

_log = logging.getLogger(__name__)


class Notifier(Protocol):
    def publish(self, reports: Iterable[Report], *, message_ids: Sequence[str] = ()) -> int:
        """Publish what deserves it; returns how many entries could not be published."""
        ...


def detail_type(report: Report) -> str | None:
    """The detail-type ``report`` is published under, or None when it is not published."""
    if report.gave_up:
        return GIVE_UP
    if report.rotation_change:
        return ROTATION_CHANGE
    if report.outcome is not Outcome.ACTED or not report.actions:
        return None
    return FORCED_ACTION if report.forced else ACTION


def block_ending(report: Report) -> dict[str, Any] | None:
    """The detail of the "Capacity Block Ending" event of ``report`` (None: not one): a
    node of an ending Capacity Block, acted on."""
    if report.kind != str(Kind.CAPACITY_BLOCK_EXPIRY) or report.outcome is not Outcome.ACTED:
        return None
    if report.instance_id is None or report.deadline is None:
        return None
    return {
        "capacity_reservation_id": report.reservation_id,
        "instance_id": report.instance_id,
        "node": report.node,
        "nodepool": report.nodepool,
        "cluster": report.cluster,
        "termination_starts": report.deadline.isoformat(),
        "end_date": (report.deadline + TERMINATION_LEAD).isoformat(),
        "event_id": report.event_id,
    }


def detail(report: Report, message_id: str | None = None) -> dict[str, Any]:
    """The event's ``detail``: the report as ``lifeboat replay --json`` prints it, and more."""
    fields = report.to_json()
    fields.update(
        cluster=report.cluster,
        forced=report.forced,
        gave_up=report.gave_up,
        wakeup=report.wakeup,
        rotation_change=report.rotation_change,
        event_time=report.event_time.isoformat() if report.event_time else None,
    )
    if message_id:
        fields["message_id"] = message_id
    return fields


class EventBridgeNotifier:
    """Publishes on an event bus (default: the account's default bus) with a boto3 client."""

    def __init__(self, client: Any, *, bus: str = "default", dry_run: bool = False) -> None:
        self._client = client
        self._bus = bus
        self._dry_run = dry_run

    def entries(self, reports: Iterable[Report], message_ids: Sequence[str] = ()) -> list[Any]:
        out = []
        for index, report in enumerate(reports):
            ending = block_ending(report)
            if ending is not None:
                out.append(self._entry(CAPACITY_BLOCK_ENDING, ending))
            kind = detail_type(report)
            if kind is None:
                continue
            body = detail(report, message_ids[index] if index < len(message_ids) else None)
            out.append(self._entry(kind, body))
        return out

    def _entry(self, kind: str, body: dict[str, Any]) -> dict[str, Any]:
        body["dry_run"] = self._dry_run
        return {
            "Source": SOURCE,
            "DetailType": kind,
            "Detail": json.dumps(body),
            "EventBusName": self._bus,
        }

    def publish(self, reports: Iterable[Report], *, message_ids: Sequence[str] = ()) -> int:
        entries = self.entries(reports, message_ids)
        failed = 0
        for start in range(0, len(entries), ENTRIES_PER_CALL):
            chunk = entries[start : start + ENTRIES_PER_CALL]
            try:
                answer = self._client.put_events(Entries=chunk)
            except Exception as error:  # best effort: botocore's errors, timeouts, throttling
                _log.warning("could not publish %d notification(s): %r", len(chunk), error)
                failed += len(chunk)
                continue
            refused = [
                result
                for result in answer.get("Entries", [])
                if result.get("ErrorCode") or not result.get("EventId")
            ]
            if answer.get("FailedEntryCount") or refused:
                count = max(int(answer.get("FailedEntryCount") or 0), len(refused))
                codes = sorted({str(r.get("ErrorCode")) for r in refused})
                _log.warning("EventBridge refused %d notification(s): %s", count, codes)
                failed += count
        return failed
