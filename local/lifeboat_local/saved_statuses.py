"""Saved ``DescribeInstanceStatus`` (and ``DescribeCapacityReservations``) answers, replayed
through the Lambda's own sweep.

The Lambda never takes an answer from its queue (a raw answer there is rejected): each sweep
request makes it ask EC2 itself (``lifeboat.aws.sweep``). ``lifeboat replay`` is the one place
that reads saved answers, and it reads them the Lambda's way: each answer in an event file
becomes a sweep request, and the pipeline's reader (:class:`SavedStatuses`, standing where
EC2 stands) hands it the saved pages. The same triage before the split, the same holds and
absence counting of a complete answer, the same sweep parts.

An answer is what boto3 returns (``InstanceStatuses``, ``NextToken``, ``ResponseMetadata``),
the AWS CLI's ``describe-instance-status`` output (the same, every page joined), or a list of
pages under ``Pages``. It is a whole answer (one that may end a maintenance by its silence)
when its last page names no ``NextToken``: an answer saved with filters narrower than the
sweep's is not, and says nothing of events it filtered out; give its pages under ``Pages``
with a ``NextToken`` on the last one to say so.

A saved ``DescribeCapacityReservations`` answer becomes a sweep request too, whose status
answer is empty and not whole (it says nothing of any instance's status, so nothing ends by
its silence) and whose capacity reservations are the saved ones (:class:`SavedReservations`).
"""

from __future__ import annotations

import json
from collections import deque
from typing import Any

from lifeboat.aws.sweep import sweep_request
from lifeboat.events.envelope import is_reservations_response, is_status_response
from lifeboat_local.event_times import body_time

# The id of the sweep request a saved answer becomes (numbered).
SAVED_ID = "saved-answer"


class SavedStatuses:
    """The sweep's reader over saved answers, one per sweep request, in order."""

    def __init__(self) -> None:
        # Per sweep request, in order: (its status pages, its capacity reservation pages).
        self._queued: deque[tuple[list[dict[str, Any]], list[dict[str, Any]]]] = deque()
        self._last: list[dict[str, Any]] = []
        self.reservations = SavedReservations()
        self._count = 0

    def sweep_body(self, body: str) -> str:
        """``body`` as the replay sends it: a saved answer becomes a sweep request (its
        pages queued for the sweep to read), anything else is left as it is."""
        try:
            message = json.loads(body)
        except (ValueError, RecursionError):
            return body
        if not isinstance(message, dict):
            return body
        # Kept as given: the sweep's parser rejects what is malformed, naming the field.
        if is_status_response(message):
            pages = message["Pages"] if "InstanceStatuses" not in message else [message]
            self._queued.append((pages, []))
        elif is_reservations_response(message):
            self._queued.append(([], [message]))
        else:
            return body
        self._count += 1
        request = sweep_request(f"{SAVED_ID}-{self._count}", _answer_time(message) or "")
        return json.dumps(request)

    def pages(self) -> list[dict[str, Any]]:
        pages, reservations = self._queued.popleft() if self._queued else ([], [])
        self._last = pages
        self.reservations.current = reservations
        return pages

    def complete(self, pages: list[dict[str, Any]]) -> bool:
        return bool(pages) and isinstance(pages[-1], dict) and not pages[-1].get("NextToken")

    def describe(self, instance_ids: list[str]) -> list[dict[str, Any]]:
        """A sweep part's instances, as the answer last read says (EC2 cannot be asked)."""
        wanted = set(instance_ids)
        statuses = [
            status
            for page in self._last
            if isinstance(page, dict)
            for status in page.get("InstanceStatuses") or []
            if isinstance(status, dict) and status.get("InstanceId") in wanted
        ]
        first = self._last[0] if self._last else None
        meta = first.get("ResponseMetadata") if isinstance(first, dict) else None
        page: dict[str, Any] = {"InstanceStatuses": statuses}
        if meta is not None:
            page["ResponseMetadata"] = meta
        return [page]


def _answer_time(message: dict[str, Any]) -> str:
    """When EC2 sent the answer (``lifeboat_local.event_times``), as an ISO 8601 time; ""
    when it does not say."""
    answered = body_time(json.dumps(message))
    return answered.isoformat() if answered is not None else ""


class SavedReservations:
    """The sweep's capacity reservation reader over saved answers: those of the sweep request
    whose status pages were read last (none for a saved status answer)."""

    def __init__(self) -> None:
        self.current: list[dict[str, Any]] = []

    def pages(self) -> list[dict[str, Any]]:
        pages, self.current = self.current, []
        return pages
