"""``lifeboat.telemetry.recorder``: the Events ``kubectl describe node`` shows. Their names
come from the notice and the outcome, so a redelivered message meets 409 AlreadyExists
instead of adding a second Event (core/v1 Event names are unique per namespace)."""

from __future__ import annotations

from datetime import timedelta

from lifeboat.decide.model import Decision, Step
from lifeboat.events.notice import Kind
from lifeboat.model.report import Outcome
from lifeboat.telemetry.recorder import event_reason, node_event
from tests.support.events import SAMPLE_TIME, notice

NODE = {"metadata": {"name": "ip-10-0-1-1.ec2.internal", "uid": "node-uid"}}
ACTED = Decision(Outcome.ACTED, "tainted, cordoned", steps=(Step.TAINT_AND_CORDON,))


def test_the_reason_says_deferred_forced_or_released() -> None:
    spot = notice(Kind.SPOT_INTERRUPTION)
    base = Kind.SPOT_INTERRUPTION.event_reason
    assert event_reason(spot, ACTED) == base
    assert event_reason(spot, Decision(Outcome.ACTED, "x", forced=True)) == f"{base}Forced"
    deferred = Decision(Outcome.DEFERRED, "budget", deferred_until=SAMPLE_TIME)
    assert event_reason(spot, deferred) == f"{base}Deferred"
    released = Decision(Outcome.ACTED, "over", steps=(Step.RESTORE,))
    assert event_reason(spot, released) == f"{base}Released"


def test_the_same_decision_twice_is_one_event_name_and_another_is_not() -> None:
    spot = notice(Kind.SPOT_INTERRUPTION)
    first = node_event(NODE, spot, ACTED, SAMPLE_TIME)
    again = node_event(NODE, spot, ACTED, SAMPLE_TIME + timedelta(minutes=1))
    other = node_event(NODE, notice(Kind.SPOT_INTERRUPTION, event_id="evt-2"), ACTED, SAMPLE_TIME)
    partial = node_event(NODE, spot, ACTED, SAMPLE_TIME, part="interrupted")
    names = [e["metadata"]["name"] for e in (first, again, other, partial)]
    assert names[0] == names[1]
    assert len(set(names)) == 3


def test_an_event_is_about_the_node_and_warns_for_involuntary_notices() -> None:
    spot = node_event(NODE, notice(Kind.SPOT_INTERRUPTION), ACTED, SAMPLE_TIME)
    rebalance = node_event(NODE, notice(Kind.REBALANCE_RECOMMENDATION), ACTED, SAMPLE_TIME)
    assert spot["involvedObject"] == {
        "apiVersion": "v1",
        "kind": "Node",
        "name": "ip-10-0-1-1.ec2.internal",
        "uid": "node-uid",
    }
    assert spot["metadata"]["namespace"] == "default"  # where kubectl describe node looks
    assert (spot["type"], rebalance["type"]) == ("Warning", "Normal")
    assert spot["message"] == "acted: tainted, cordoned"
    long = Decision(Outcome.ACTED, "x" * 5000)
    assert (
        len(node_event(NODE, notice(Kind.SPOT_INTERRUPTION), long, SAMPLE_TIME)["message"]) == 1024
    )
