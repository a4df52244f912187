"""Which hand-overs a sweep takes over (lifeboat.flow.handover_sweep.due; issue 33.3). Pure."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from lifeboat.events.notice import Kind, Notice
from lifeboat.flow.handover_sweep import due, left_on_replacements
from lifeboat.marks import handover
from lifeboat.wakeup.codec import Task, Wakeup, encode

BEGAN = datetime(2026, 12, 1, 18, 0, tzinfo=UTC)
UNTIL = BEGAN + handover.PATIENCE + handover.SWEEP_GRACE
OLD, NEW = "i-0a1b2c3d4e5f60002", "i-0a1b2c3d4e5f6ffff"


def _record(started: datetime = BEGAN) -> handover.Record:
    notice = Notice(Kind.REBALANCE_RECOMMENDATION, "rebalance-1", BEGAN, OLD)
    wakeup = Wakeup(
        Task.HAND_OVER,
        notice,
        UNTIL,
        replacement="general-new",
        old_nodeclaim="general-old",
        old_nodeclaim_uid="uid-old",
        started=started,
    )
    return handover.Record(started + handover.PATIENCE + handover.SWEEP_GRACE, encode(wakeup))


def _carrying(kind: str, record: handover.Record, instance: str = OLD) -> dict[str, Any]:
    obj: dict[str, Any] = {"kind": kind, "metadata": {"name": f"{kind}-{instance}"}}
    obj["spec"] = {"providerID": f"aws:///us-east-1a/{instance}"}
    obj["metadata"]["labels"] = {handover.HAND_OVER_LABEL: record.label}
    obj["metadata"]["annotations"] = {handover.HAND_OVER_ANNOTATION: record.wakeup}
    return obj


def test_nothing_is_taken_over_before_its_instant() -> None:
    marked = [_carrying("Node", _record()), _carrying("NodeClaim", _record(), NEW)]
    assert due(marked, None, UNTIL - timedelta(seconds=1)) == ([], [])


def test_one_hand_over_is_taken_over_once_though_each_object_wrote_it_at_its_own_time() -> None:
    """The node's record and the claim's are written a few milliseconds apart."""
    later = _record(BEGAN + timedelta(milliseconds=7))
    marked = [_carrying("Node", _record()), _carrying("NodeClaim", later, NEW)]
    (wakeup,), problems = due(marked, None, UNTIL + timedelta(minutes=1))
    assert problems == [] and wakeup.task is Task.HAND_OVER
    assert wakeup.due == UNTIL and wakeup.replacement == "general-new"


def test_the_copy_on_the_replacements_node_is_not_a_hand_over_of_its_own() -> None:
    """Registration copies the claim's labels and annotations onto the replacement's Node:
    that copy never starts a take-over (a released claim's copy would finish a hand-over
    already given up); once its claim no longer carries the record, it is only removed."""
    copy = _carrying("Node", _record(), NEW)
    claim = _carrying("NodeClaim", _record(), NEW)
    after = UNTIL + timedelta(minutes=1)
    assert due([copy], None, after) == ([], [])
    assert left_on_replacements([copy, claim], after) == []
    assert left_on_replacements([copy], after) == [copy]
    assert left_on_replacements([copy], UNTIL - timedelta(minutes=1)) == []


def test_a_record_of_another_kind_of_wake_up_is_a_problem_not_an_action() -> None:
    notice = Notice(Kind.REBALANCE_RECOMMENDATION, "rebalance-1", BEGAN, OLD)
    decide = handover.Record(UNTIL, encode(Wakeup(Task.DECIDE, notice, UNTIL)))
    wakeups, (problem,) = due([_carrying("Node", decide)], None, UNTIL)
    assert wakeups == [] and "holds a decide wake-up" in problem


def test_a_record_naming_another_cluster_is_a_problem() -> None:
    notice = Notice(Kind.REBALANCE_RECOMMENDATION, "rebalance-1", BEGAN, OLD)
    elsewhere = Wakeup(
        Task.HAND_OVER,
        notice,
        UNTIL,
        replacement="r",
        old_nodeclaim="o",
        old_nodeclaim_uid="u",
        started=BEGAN,
        cluster="other",
    )
    record = handover.Record(UNTIL, encode(elsewhere))
    wakeups, (problem,) = due([_carrying("Node", record)], "prod", UNTIL)
    assert wakeups == [] and "names cluster other, found in prod" in problem
