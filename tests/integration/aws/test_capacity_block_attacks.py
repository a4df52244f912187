"""A hostile review of Capacity Blocks (issue 37): forged, stale, out of order, huge and
partial input, a crash between two steps, Karpenter acting first, on the emulator through
the real ``kubernetes`` client, EC2 through botocore's ``Stubber`` (an unexpected EC2 call
fails the test).

Ground truth: Karpenter's AWS provider ``pkg/controllers/capacityreservation/expiration``
(``Controller.Reconcile``) and ``pkg/apis/v1`` ``CapacityReservationFromEC2``; the EC2 user
guide's "Capacity Block Reservation Expiration Warning".
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from kubemu import Emulator, load_cluster_file
from lifeboat.events.notice import Kind
from lifeboat.model.instances import LIVE_STATES
from lifeboat.model.report import Report
from lifeboat.model.settings import Settings
from tests.integration.aws.test_capacity_block import (
    BLOCK,
    END,
    IN_BLOCK,
    NOW,
    Rig,
    capacity_block,
    ec2_instance,
)
from tests.support.events import sample
from tests.support.paths import EVENTS

BLOCK_KIND = str(Kind.CAPACITY_BLOCK_EXPIRY)


@pytest.fixture
def rig() -> Iterator[Rig]:
    objects = copy.deepcopy(load_cluster_file(EVENTS / "cluster.yaml"))
    with Emulator(objects) as emulator:
        made = Rig(emulator)
        yield made
        made.stubber.deactivate()


def warning(**detail: Any) -> dict[str, Any]:
    """EC2's sample warning with ``detail`` fields changed (None: removed)."""
    message = copy.deepcopy(sample("capacity-block-expiry"))
    for key, value in detail.items():
        if value is None:
            message["detail"].pop(key, None)
        else:
            message["detail"][key] = value
    return message


def expect_instances(rig: Rig, instances: list[dict[str, Any]], token: str | None = None) -> None:
    filters = [
        {"Name": "capacity-reservation-id", "Values": [BLOCK]},
        {"Name": "instance-state-name", "Values": list(LIVE_STATES)},
    ]
    expected: dict[str, Any] = {"Filters": filters}
    answer: dict[str, Any] = {"Reservations": [{"ReservationId": "r-01", "Instances": instances}]}
    if token:
        expected["NextToken"] = token
    rig.stubber.add_response("describe_instances", answer, expected)


def blocks(reports: list[Report]) -> list[Report]:
    return [r for r in reports if r.kind == BLOCK_KIND]


def test_a_warning_from_another_account_describes_nothing_and_acts_on_nothing(rig: Rig) -> None:
    """A forged (or misrouted) warning from another account is ignored before EC2 is asked
    for the reservation's instances: no DescribeInstances (the Stubber holds none), no node."""
    rig.pipeline.settings = Settings(account_id="123456789012", region="us-east-1")
    forged = {**sample("capacity-block-expiry"), "account": "999999999999"}
    [report] = blocks(rig.run(forged))
    assert report.outcome == "rejected" and "account 999999999999" in report.reason
    assert rig.replacements() == {}


def test_a_warning_from_another_region_describes_nothing(rig: Rig) -> None:
    rig.pipeline.settings = Settings(account_id="123456789012", region="us-east-1")
    [report] = blocks(rig.run({**sample("capacity-block-expiry"), "region": "eu-west-1"}))
    assert report.outcome == "rejected" and "region eu-west-1" in report.reason
    assert rig.replacements() == {}


def test_a_reservation_of_another_account_has_no_instance_here(rig: Rig) -> None:
    """DescribeInstances runs in this account: another account's block has none of ours."""
    expect_instances(rig, [])
    [report] = blocks(rig.run(sample("capacity-block-expiry")))
    assert report.outcome == "ignored" and "no instance runs in it" in report.reason


def test_an_end_date_in_the_past_is_ignored_without_asking_ec2(rig: Rig) -> None:
    past = (NOW - timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    [report] = blocks(rig.run(warning(**{"end-date": past})))
    assert report.outcome == "ignored" and "already ended" in report.reason


def test_an_end_date_far_in_the_future_is_not_obeyed(rig: Rig) -> None:
    [report] = blocks(rig.run(warning(**{"end-date": "2027-12-01T14:45:00Z"})))
    assert report.outcome == "ignored" and "more than 2 hours before the end" in report.reason
    assert rig.replacements() == {}


def test_a_malformed_end_date_is_rejected_naming_the_field(rig: Rig) -> None:
    [report] = rig.run(warning(**{"end-date": "tomorrow-ish"}))
    assert report.outcome == "rejected" and "end-date" in report.reason


def test_a_malformed_reservation_id_is_rejected_naming_the_field(rig: Rig) -> None:
    [report] = rig.run(warning(**{"capacity-reservation-id": "cr-../../etc"}))
    assert report.outcome == "rejected" and "capacity-reservation-id" in report.reason
    [missing] = rig.run(warning(**{"capacity-reservation-id": None}))
    assert missing.outcome == "rejected" and "capacity-reservation-id" in missing.reason


def test_a_missing_end_date_is_taken_as_forty_minutes_after_the_warning(rig: Rig) -> None:
    """The warning is sent 40 minutes before the end (the EC2 user guide)."""
    rig.expect_block_instances()
    reports = blocks(rig.run(warning(**{"end-date": None})))
    assert [r.outcome for r in reports] == ["acted"] * 3
    assert {r.deadline for r in reports} == {NOW + timedelta(minutes=10)}


def test_a_warning_redelivered_after_the_block_ended_is_never_forced(rig: Rig) -> None:
    """Redelivered after the end, while EC2 still lists the instances: stale (past end - 30
    min by more than stale_notice_after, ``lifeboat.decide.staleness``), so nothing is forced
    past the NodePool's budget (gpu allows 1): one node handled as a voluntary disruption,
    the other two let go with the reason."""
    rig.now = END + timedelta(minutes=5)
    rig.expect_block_instances()
    reports = blocks(rig.run(sample("capacity-block-expiry")))
    outcomes = sorted(str(r.outcome) for r in reports)
    assert outcomes == ["acted", "ignored", "ignored"], [r.reason for r in reports]
    for report in reports:
        assert "stale" in report.reason or "more than 600s" in report.reason, report.reason
    assert len(rig.replacements()) <= 1


def test_the_sweep_first_then_the_warning_acts_once(rig: Rig) -> None:
    rig.now = END - timedelta(minutes=40)
    first = blocks(rig.sweep(capacity_block(BLOCK, END)))
    assert [r.outcome for r in first] == ["acted"] * 3
    rig.now = END - timedelta(minutes=39)
    again = blocks(rig.warning())
    assert [r.outcome for r in again] == ["ignored"] * 3
    assert len(rig.replacements()) == 3
    assert rig.pod_warnings() == ["llm-train-0", "llm-train-1", "llm-train-2"]


def test_a_warning_after_the_claims_and_nodes_are_gone_makes_no_replacement(rig: Rig) -> None:
    """Karpenter's expiration controller deleted the claims and they are gone with their
    nodes; EC2 still lists the instances: nothing to act on, no claim made for them."""
    for node, claim, _ in IN_BLOCK.values():
        rig.emulator.delete_object("NodeClaim", claim)
        rig.emulator.delete_object("Node", node)
    reports = blocks(rig.warning())
    assert [r.outcome for r in reports] != ["acted"] * 3, [r.reason for r in reports]
    assert rig.replacements() == {}


def test_a_block_of_500_instances_over_two_pages_is_described_once(rig: Rig) -> None:
    """DescribeInstances paginated (NextToken): every page read, one notice per instance;
    instances of no managed node are ignored, not failed."""
    template = ec2_instance("i-0a1b2c3d4e5f60031")
    many = [
        {**template, "InstanceId": f"i-{n:017x}", "PrivateDnsName": f"ip-10-9-{n}.ec2.internal"}
        for n in range(500)
    ]
    filters = [
        {"Name": "capacity-reservation-id", "Values": [BLOCK]},
        {"Name": "instance-state-name", "Values": list(LIVE_STATES)},
    ]
    first = {"Reservations": [{"ReservationId": "r-1", "Instances": many[:250]}], "NextToken": "t"}
    second = {"Reservations": [{"ReservationId": "r-2", "Instances": many[250:]}]}
    rig.stubber.add_response("describe_instances", first, {"Filters": filters})
    rig.stubber.add_response("describe_instances", second, {"Filters": filters, "NextToken": "t"})
    [result] = rig.pipeline.process([json.dumps(sample("capacity-block-expiry"))])
    rig.stubber.assert_no_pending_responses()
    assert result.error is None, result.error
    reports = blocks(result.reports)
    assert len({r.instance_id for r in reports}) == 500 or any(
        "notices" in r.reason for r in reports
    )
    assert all(r.outcome != "acted" for r in reports)


def test_a_second_page_of_reservations_failing_is_reported_and_the_statuses_go_on(
    rig: Rig,
) -> None:
    """DescribeCapacityReservations throttled on its second page: reported, retried by the
    next sweep; the instance statuses are handled all the same."""
    from lifeboat.aws.capacity_blocks import PAGE_SIZE
    from lifeboat.aws.sweep import sweep_request
    from tests.integration.aws.test_capacity_block import NO_SETS
    from tests.integration.aws.test_instance_status import stub_sweep

    stub_sweep(rig.stubber, *NO_SETS)
    expected = {"Filters": [{"Name": "state", "Values": ["active"]}], "MaxResults": PAGE_SIZE}
    page = {"CapacityReservations": [capacity_block(BLOCK, END)], "NextToken": "n"}
    rig.stubber.add_response("describe_capacity_reservations", page, expected)
    rig.stubber.add_client_error("describe_capacity_reservations", "RequestLimitExceeded")
    reports = rig.run(sweep_request("sweep-partial", NOW.isoformat()))
    [blocked] = blocks(reports)
    assert blocked.outcome == "ignored" and "RequestLimitExceeded" in blocked.reason
    assert any(r.kind == "instance-impaired" for r in reports)


def test_a_nodepool_that_allows_only_the_expiring_block_says_no_replacement(rig: Rig) -> None:
    """Excluding the block (NotIn, as Karpenter's interruption controller marks it
    unavailable) leaves the NodePool nothing: said, and the nodes are still drained."""
    pool = rig.get("NodePool", "gpu")
    spec = copy.deepcopy(pool["spec"])
    requirements = spec["template"]["spec"].setdefault("requirements", [])
    requirements.append(
        {"key": "karpenter.k8s.aws/capacity-reservation-id", "operator": "In", "values": [BLOCK]}
    )
    rig.emulator.put_object({**pool, "spec": spec})
    reports = blocks(rig.warning())
    assert rig.replacements() == {}
    for report in reports:
        assert "only value the NodePool allows" in report.reason, report.reason
        assert "delete-nodeclaim" in [a["type"] for a in report.actions]


def test_a_node_group_node_in_the_block_is_cordoned_and_drained_without_a_claim(
    rig: Rig,
) -> None:
    """A managed node group's instance in the block: no NodeClaim to replace; cordoned and
    drained (the node group launches its replacement)."""
    node = next(
        n
        for n in rig.emulator.objects("Node")
        if (n["metadata"].get("labels") or {}).get("eks.amazonaws.com/nodegroup") == "system"
    )
    provider = node["spec"]["providerID"]
    instance_id = provider.rsplit("/", 1)[-1]
    described = {
        "InstanceId": instance_id,
        "InstanceType": "m5.large",
        "PrivateDnsName": node["metadata"]["name"],
        "Placement": {"AvailabilityZone": "us-east-1a"},
        "State": {"Code": 16, "Name": "running"},
        "CapacityReservationId": BLOCK,
        "Tags": [{"Key": "eks:nodegroup-name", "Value": "system"}],
    }
    expect_instances(rig, [described])
    [report] = blocks(rig.run(sample("capacity-block-expiry")))
    assert report.outcome == "acted", report.reason
    assert rig.replacements() == {}
    assert rig.get("Node", node["metadata"]["name"])["spec"].get("unschedulable")


def test_a_crash_between_the_replacement_and_the_delete_makes_no_second_replacement(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first delivery dies after creating the replacements, before deleting the old
    claims; SQS delivers the warning again (EC2 describes the block again): the replacements
    are found, not made twice, and the old claims are deleted this time."""
    from lifeboat.kube.client import KubeApi

    real_delete = KubeApi.delete_nodeclaim

    def crash(self: KubeApi, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("Lambda timed out")

    monkeypatch.setattr(KubeApi, "delete_nodeclaim", crash)
    rig.expect_block_instances()
    body = json.dumps(sample("capacity-block-expiry"))
    rig.pipeline.process([body])
    made = {old: c["metadata"]["name"] for old, c in rig.replacements().items()}
    assert made, "the first delivery made its replacements before dying"
    monkeypatch.setattr(KubeApi, "delete_nodeclaim", real_delete)
    rig.now = NOW + timedelta(seconds=40)
    rig.expect_block_instances()
    [result] = rig.pipeline.process([body], receives=[2])
    rig.stubber.assert_no_pending_responses()
    assert result.error is None, result.error
    again = {old: c["metadata"]["name"] for old, c in rig.replacements().items()}
    assert sorted(again) == sorted(claim for _, claim, _ in IN_BLOCK.values())
    assert all(again[old] == made[old] for old in made)
    assert (
        len(rig.emulator.objects("NodeClaim"))
        == len(
            [
                c
                for c in copy.deepcopy(load_cluster_file(EVENTS / "cluster.yaml"))
                if c["kind"] == "NodeClaim"
            ]
        )
        + 3
    )
    for _, claim, _ in IN_BLOCK.values():
        assert rig.get("NodeClaim", claim)["metadata"].get("deletionTimestamp")


def test_a_warning_without_end_date_after_the_sweep_makes_no_second_replacement(
    rig: Rig,
) -> None:
    """Without ``end-date`` the end is guessed (warning time + 40 min), so its ledger key
    differs from the sweep's (EndDate): the second telling must still find the replacements
    already made (``lifeboat.dev/replaces``) and not make three more."""
    rig.now = END - timedelta(minutes=40)
    first = blocks(rig.sweep(capacity_block(BLOCK, END)))
    assert [r.outcome for r in first] == ["acted"] * 3
    late = warning(**{"end-date": None})
    late["time"] = "2026-12-01T14:07:00Z"
    rig.now = END - timedelta(minutes=38)
    rig.expect_block_instances()
    rig.run(late)
    owners = [
        c["metadata"]["labels"]["lifeboat.dev/replaces"]
        for c in rig.emulator.objects("NodeClaim")
        if "lifeboat.dev/replaces" in (c["metadata"].get("labels") or {})
    ]
    assert sorted(owners) == sorted(claim for _, claim, _ in IN_BLOCK.values())
    # Known residual: the two keys differ, so the pods are warned a second time (an Event,
    # harmless); EC2's warning carries end-date in the user guide's sample, so this needs a
    # warning that lost it.


def test_describe_instances_throttled_for_an_ending_block_loses_nothing(rig: Rig) -> None:
    """The sweep finds an ending block but DescribeInstances of its instances is refused:
    nothing is acted on wrongly and nothing is lost (the message fails, SQS delivers it
    again, or the next sweep finds the block again); no replacement is made blind."""
    from lifeboat.aws.sweep import sweep_request
    from tests.integration.aws.test_capacity_block import NO_SETS
    from tests.integration.aws.test_instance_status import stub_sweep

    rig.now = END - timedelta(minutes=40)
    stub_sweep(rig.stubber, *NO_SETS)
    rig.expect_reservations(capacity_block(BLOCK, END))
    rig.stubber.add_client_error("describe_instances", "RequestLimitExceeded")
    [result] = rig.pipeline.process([json.dumps(sweep_request("sweep-t", rig.now.isoformat()))])
    acted = [r for r in result.reports if str(r.outcome) == "acted"]
    assert result.error is not None and not acted  # back to the queue, whole
    assert rig.replacements() == {}
