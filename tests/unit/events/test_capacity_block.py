"""``capacity-block-expiry``: EC2's Capacity Block warnings, and the sweep's view of the same
blocks, parsed as the EC2 user guide ("Monitor Capacity Blocks using EventBridge") and
Karpenter's ``capacityreservation/expiration`` controller (``CapacityReservationFromEC2``:
expiring from ``EndDate - 40m``) describe them. Pure: no AWS, no cluster."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from lifeboat.aws.capacity_blocks import find_instances
from lifeboat.aws.notify import CAPACITY_BLOCK_ENDING, EventBridgeNotifier
from lifeboat.decide.staleness import staleness
from lifeboat.events import Kind, MalformedMessage, Notice, parse_message
from lifeboat.events.capacity_block import EXPIRY_WARNINGS, read_reservations
from lifeboat.karpenter.replacement import CAPACITY_RESERVATION_ID_LABEL, replacement_nodeclaim
from lifeboat.model.instances import InstanceInfo, StaticInstanceDirectory
from lifeboat.model.report import Outcome, Report
from lifeboat.model.settings import Settings
from lifeboat.wakeup.codec import Task, Wakeup, decode, encode
from tests.support import cyaml
from tests.support.events import sample

BLOCK = "cr-0b1c2d3e4f5a60001"
OTHER = "cr-0b1c2d3e4f5a60002"
WARNED = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)
END = datetime(2026, 12, 1, 14, 45, tzinfo=UTC)


def warning(**detail: Any) -> dict[str, Any]:
    event = sample("capacity-block-expiry")
    event["detail"].update(detail)
    return event


def parse(event: dict[str, Any], at: datetime = WARNED) -> list[Notice]:
    return parse_message(json.dumps(event), received_at=at)


# --- the event ---------------------------------------------------------------------------


def test_the_warning_names_the_reservation_and_ec2s_termination_start() -> None:
    """EC2 guide: the warning comes 40 minutes before the end, instances "begin to terminate
    in 10 minutes": the deadline is ``end-date`` - 30 min; involuntary."""
    [notice] = parse(warning())
    assert notice.kind is Kind.CAPACITY_BLOCK_EXPIRY
    assert notice.reservation_id == BLOCK and notice.instance_id is None
    assert notice.deadline == END - timedelta(minutes=30)
    assert notice.involuntary and notice.ignore_reason is None


@pytest.mark.parametrize("detail_type", EXPIRY_WARNINGS)
def test_both_spellings_of_the_warning_are_read(detail_type: str) -> None:
    event = warning()
    event["detail-type"] = detail_type
    [notice] = parse(event)
    assert notice.kind is Kind.CAPACITY_BLOCK_EXPIRY and notice.ignore_reason is None


def test_without_end_date_the_end_is_forty_minutes_after_the_warning() -> None:
    event = warning()
    del event["detail"]["end-date"]
    [notice] = parse(event)
    assert notice.deadline == WARNED + timedelta(minutes=10)


@pytest.mark.parametrize(
    ("detail", "field"),
    [
        ({"capacity-reservation-id": "i-0a1b2c3d4e5f60001"}, "detail.capacity-reservation-id"),
        ({"capacity-reservation-id": 7}, "detail.capacity-reservation-id"),
        ({"end-date": "tomorrow"}, "detail.end-date"),
    ],
)
def test_a_bad_detail_is_rejected_naming_the_field_and_keeping_the_kind(
    detail: dict[str, Any], field: str
) -> None:
    with pytest.raises(MalformedMessage) as raised:
        parse(warning(**detail))
    assert raised.value.reason.startswith(f"{field}: ")
    assert raised.value.kind is Kind.CAPACITY_BLOCK_EXPIRY


def test_a_warning_for_a_block_already_ended_is_ignored() -> None:
    [notice] = parse(warning(**{"end-date": "2026-12-01T14:00:00Z"}))
    assert notice.ignore_reason is not None and "already ended" in notice.ignore_reason


def test_a_warning_far_ahead_of_the_end_is_not_obeyed() -> None:
    """Hostile or wrong input: EC2 warns 40 minutes before the end; a "warning" days ahead
    would take every node of the block out days early. The sweep covers the real end."""
    [notice] = parse(warning(**{"end-date": "2026-12-08T11:30:00Z"}))
    assert notice.ignore_reason is not None and "more than 2 hours" in notice.ignore_reason
    [near] = parse(warning(**{"end-date": "2026-12-01T16:05:00Z"}))  # two hours: still obeyed
    assert near.ignore_reason is None


def test_delivered_is_routed_and_ignored_with_its_reason() -> None:
    [notice] = parse(sample("capacity-block/delivered"))
    assert notice.kind is Kind.CAPACITY_BLOCK_EXPIRY
    assert notice.ignore_reason is not None
    assert "delivered" in notice.ignore_reason and "2026-12-01T14:45:00Z" in notice.ignore_reason


# --- one notice per instance -------------------------------------------------------------


def infos() -> StaticInstanceDirectory:
    return StaticInstanceDirectory(
        [
            InstanceInfo("i-0a1b2c3d4e5f60031", capacity_reservation_id=BLOCK),
            InstanceInfo("i-0a1b2c3d4e5f60032", capacity_reservation_id=BLOCK),
            InstanceInfo("i-0a1b2c3d4e5f60033", capacity_reservation_id=BLOCK),
            InstanceInfo("i-0a1b2c3d4e5f60034", capacity_reservation_id=OTHER),
            InstanceInfo("i-0a1b2c3d4e5f60001"),
        ]
    )


class CountingDirectory:
    def __init__(self) -> None:
        self.asked: list[str] = []

    def in_reservation(self, reservation_id: str) -> dict[str, InstanceInfo]:
        self.asked.append(reservation_id)
        return infos().in_reservation(reservation_id)


def test_the_blocks_instances_each_get_a_notice_and_the_other_reservation_none() -> None:
    directory = CountingDirectory()
    found: dict[str, InstanceInfo] = {}
    notices = find_instances(parse(warning()) * 2, directory, found)
    instances = [n.instance_id for n in notices]
    assert instances == ["i-0a1b2c3d4e5f60031", "i-0a1b2c3d4e5f60032", "i-0a1b2c3d4e5f60033"] * 2
    assert directory.asked == [BLOCK]  # one lookup per block, however often it is named
    assert sorted(found) == sorted({str(i) for i in instances})
    assert all(
        n.reservation_id == BLOCK and n.deadline == END - timedelta(minutes=30) for n in notices
    )


def test_a_block_with_no_instance_is_ignored_with_that_reason() -> None:
    event = warning(**{"capacity-reservation-id": "cr-0b1c2d3e4f5a69999"})
    [notice] = find_instances(parse(event), infos(), {})
    assert notice.ignore_reason is not None and "no instance runs in it" in notice.ignore_reason


def test_the_ledger_key_is_the_same_for_the_event_and_the_sweep() -> None:
    """Deduplicated as Karpenter's controller and EC2's event would be by one handler: the
    instance and the instant EC2 starts terminating it, whoever told first."""
    from_event = find_instances(parse(warning()), infos(), {})
    swept = read_reservations(sample("status/describe-capacity-reservations"), now=WARNED)
    from_sweep = find_instances(swept, infos(), {})
    assert [n.ledger_key for n in from_event] == [n.ledger_key for n in from_sweep]
    assert from_event[0].event_id != from_sweep[0].event_id


# --- the sweep's DescribeCapacityReservations --------------------------------------------


def reservation(**fields: Any) -> dict[str, Any]:
    entry = {
        "CapacityReservationId": BLOCK,
        "State": "active",
        "ReservationType": "capacity-block",
        "EndDate": END,
    }
    entry.update(fields)
    return entry


@pytest.mark.parametrize(
    ("now", "ending"),
    [
        (END - timedelta(minutes=41), False),
        (END - timedelta(minutes=40), True),  # CapacityReservationFromEC2: !Before(end-40m)
        (END - timedelta(minutes=1), True),
        (END, False),  # the provider's filterReservations drops an end that has passed
    ],
)
def test_a_block_is_ending_from_forty_minutes_before_its_end(now: datetime, ending: bool) -> None:
    notices = read_reservations({"CapacityReservations": [reservation()]}, now=now)
    assert bool(notices) is ending


@pytest.mark.parametrize(
    "fields",
    [
        {"ReservationType": "default"},  # only capacity blocks expire this way
        {"State": "expired"},
        {"EndDate": None},
    ],
)
def test_other_reservations_are_not_ending(fields: dict[str, Any]) -> None:
    assert read_reservations({"CapacityReservations": [reservation(**fields)]}, now=WARNED) == []


def test_the_sample_response_names_only_the_ending_block() -> None:
    notices = read_reservations(sample("status/describe-capacity-reservations"), now=WARNED)
    assert [n.reservation_id for n in notices] == [BLOCK]
    assert notices[0].deadline == END - timedelta(minutes=30)


def test_a_saved_reservations_answer_on_the_queue_is_rejected_not_obeyed() -> None:
    """A DescribeCapacityReservations answer carries no account or region, and a copy of
    EC2's word is not EC2's word: the Lambda asks EC2 itself at each sweep (as issue 33 has
    it for DescribeInstanceStatus answers); only lifeboat replay reads saved answers."""
    body = json.dumps(sample("status/describe-capacity-reservations"))
    with pytest.raises(MalformedMessage, match="never taken from the queue"):
        parse_message(body, received_at=WARNED)


# --- staleness, wake-ups, replacement, notification --------------------------------------


def test_a_notice_long_past_its_termination_start_is_stale() -> None:
    [notice, *_] = find_instances(parse(warning()), infos(), {})
    settings = Settings()
    assert staleness(notice, None, settings, WARNED) is None
    late = END + settings.stale_notice_after
    stale = staleness(notice, None, settings, late)
    assert stale is not None and "past its deadline" in stale.reason


def test_a_wake_up_keeps_the_reservation() -> None:
    [notice, *_] = find_instances(parse(warning()), infos(), {})
    wakeup = Wakeup(Task.CONTINUE_DRAIN, notice, due=WARNED + timedelta(minutes=1))
    assert decode(json.loads(encode(wakeup))).notice.reservation_id == BLOCK


def gpu_pool(
    capacity_types: list[str], reservation_values: list[str] | None = None
) -> dict[str, Any]:
    requirements: list[dict[str, Any]] = [
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": capacity_types}
    ]
    if reservation_values is not None:
        requirements.append(
            {"key": CAPACITY_RESERVATION_ID_LABEL, "operator": "In", "values": reservation_values}
        )
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "gpu", "uid": "u-1"},
        "spec": {"template": {"spec": {"requirements": requirements}}},
    }


GPU_NODE = {
    "metadata": {
        "name": "ip-10-0-1-31.ec2.internal",
        "labels": {"karpenter.sh/capacity-type": "reserved", CAPACITY_RESERVATION_ID_LABEL: BLOCK},
    },
    "status": {},
}


def test_the_replacement_never_asks_for_the_expiring_block() -> None:
    built = replacement_nodeclaim(
        gpu_pool(["reserved", "on-demand"]),
        GPU_NODE,
        "gpu-p5a01",
        "k",
        reservation_reclaimed=True,
        reservation_id=BLOCK,
    )
    assert built.claim is not None
    requirements = built.claim["spec"]["requirements"]
    assert {
        "key": CAPACITY_RESERVATION_ID_LABEL,
        "operator": "NotIn",
        "values": [BLOCK],
    } in requirements


def test_a_pool_that_allows_only_the_expiring_block_gets_no_replacement_and_says_why() -> None:
    built = replacement_nodeclaim(
        gpu_pool(["reserved"], [BLOCK]),
        GPU_NODE,
        "gpu-p5a01",
        "k",
        reservation_reclaimed=True,
        reservation_id=BLOCK,
    )
    assert built.claim is None
    assert f"{CAPACITY_RESERVATION_ID_LABEL} {BLOCK} is the only value" in built.note


def test_an_acted_node_of_an_ending_block_is_published_as_capacity_block_ending() -> None:
    [notice, *_] = find_instances(parse(warning()), infos(), {})
    report = Report.for_notice(
        notice, Outcome.ACTED, "r", node="ip-10-0-1-31.ec2.internal", actions=({"type": "cordon"},)
    )
    entries = EventBridgeNotifier(None).entries([report])
    assert [e["DetailType"] for e in entries] == [CAPACITY_BLOCK_ENDING, "Lifeboat Node Action"]
    detail = json.loads(entries[0]["Detail"])
    assert detail["capacity_reservation_id"] == BLOCK
    assert detail["termination_starts"] == (END - timedelta(minutes=30)).isoformat()
    assert detail["end_date"] == END.isoformat()
    ignored = replace(report, outcome=Outcome.IGNORED, actions=())
    assert EventBridgeNotifier(None).entries([ignored]) == []


def test_the_pod_warnings_right_is_events_create_bound_per_namespace_only() -> None:
    """Least privilege: Events live in their object's namespace, so warning pods needs
    ``events: create`` there; deploy/pod-warnings.yaml gives it by RoleBinding (one namespace
    at a time), never cluster-wide, and deploy/rbac.yaml stays as it was."""

    from tests.support.paths import ROOT

    documents = list(cyaml.safe_load_all((ROOT / "deploy" / "pod-warnings.yaml").read_text()))
    kinds = sorted(d["kind"] for d in documents if d)
    assert kinds == ["ClusterRole", "RoleBinding"]
    [role] = [d for d in documents if d and d["kind"] == "ClusterRole"]
    assert role["rules"] == [{"apiGroups": [""], "resources": ["events"], "verbs": ["create"]}]
    [binding] = [d for d in documents if d and d["kind"] == "RoleBinding"]
    assert binding["metadata"]["namespace"] == "ml"
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "lifeboat"}
    ]
