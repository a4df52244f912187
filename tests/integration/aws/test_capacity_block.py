"""An ending Capacity Block, end to end (issue 37): EC2's warning, or the sweep alone, through
triage, resolve, decide, act and the ledger, on the emulator through the real ``kubernetes``
client, EC2 through boto3.

The sample cluster's NodePool ``gpu`` runs three p5 nodes in the block cr-0b1c2d3e4f5a60001
(ending 14:45) and one in the block cr-0b1c2d3e4f5a60002. Done when: the three acted on at
the warning, deadline end - 30 min, three replacements none asking for the expiring block,
the fourth untouched; the same found by the sweep alone; the Event on the pods.

Ground truth: the EC2 user guide ("Monitor Capacity Blocks using EventBridge": the warning 40
minutes before the end, termination from 30 minutes before) and Karpenter's AWS provider
(``pkg/controllers/capacityreservation/expiration/controller.go`` and
``CapacityReservationFromEC2``: a ``capacity-block`` reservation is expiring from 40 minutes
before its ``EndDate``; its provider asks ``DescribeCapacityReservations`` for ``state``
``active``). moto does not filter DescribeInstances by ``capacity-reservation-id`` nor know
Capacity Blocks: botocore's ``Stubber`` answers, checking every request (filters, paging) and
every response against EC2's service model; an unexpected call fails the test, which is how
"one DescribeInstances per block" is proved.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.stub import Stubber

from kubemu import Emulator, load_cluster_file
from lifeboat.aws.capacity_blocks import PAGE_SIZE, Ec2CapacityReservations
from lifeboat.aws.sweep import Ec2InstanceStatuses, sweep_request
from lifeboat.events.notice import Kind
from lifeboat.flow.pipeline import OneCluster, Pipeline
from lifeboat.karpenter.replacement import CAPACITY_RESERVATION_ID_LABEL
from lifeboat.kube.client import KubeApi, RetryPolicy
from lifeboat.marks import node_marks
from lifeboat.model.instances import LIVE_STATES, Ec2InstanceDirectory
from lifeboat.model.ledger import MemoryLedger
from lifeboat.model.report import Report
from lifeboat.model.settings import Settings
from lifeboat.telemetry.recorder import POD_WARNING_REASON
from lifeboat.wakeup.codec import MemoryWakeups
from tests.integration.aws.test_instance_status import ec2_client, stub_sweep
from tests.support.events import sample
from tests.support.paths import EVENTS

NOW = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)  # the warning's time
END = datetime(2026, 12, 1, 14, 45, tzinfo=UTC)
BLOCK = "cr-0b1c2d3e4f5a60001"
OTHER = "cr-0b1c2d3e4f5a60002"
IN_BLOCK = {  # instance -> (node, NodeClaim, training pod)
    "i-0a1b2c3d4e5f60031": ("ip-10-0-1-31.ec2.internal", "gpu-p5a01", "llm-train-0"),
    "i-0a1b2c3d4e5f60032": ("ip-10-0-1-32.ec2.internal", "gpu-p5a02", "llm-train-1"),
    "i-0a1b2c3d4e5f60033": ("ip-10-0-1-33.ec2.internal", "gpu-p5a03", "llm-train-2"),
}
OTHER_NODE, OTHER_CLAIM = "ip-10-0-1-34.ec2.internal", "gpu-p5b01"
TAINT = node_marks.taint_key(Kind.CAPACITY_BLOCK_EXPIRY)
NO_SETS: tuple[list[list[dict[str, Any]]], ...] = ([[]], [[]], [[]])


def ec2_instance(instance_id: str) -> dict[str, Any]:
    """One of DescribeInstances' ``Instances``, as EC2 describes a Karpenter node in a block."""
    node, claim, _ = IN_BLOCK[instance_id]
    return {
        "InstanceId": instance_id,
        "InstanceType": "p5.48xlarge",
        "PrivateDnsName": node,
        "Placement": {"AvailabilityZone": "us-east-1a"},
        "State": {"Code": 16, "Name": "running"},
        "CapacityReservationId": BLOCK,
        "Tags": [
            {"Key": "karpenter.sh/nodeclaim", "Value": claim},
            {"Key": "karpenter.sh/nodepool", "Value": "gpu"},
        ],
    }


def capacity_block(reservation: str, end: datetime) -> dict[str, Any]:
    return {
        "CapacityReservationId": reservation,
        "InstanceType": "p5.48xlarge",
        "AvailabilityZone": "us-east-1a",
        "State": "active",
        "ReservationType": "capacity-block",
        "InstanceMatchCriteria": "targeted",
        "StartDate": end - timedelta(days=7),
        "EndDate": end,
    }


class Rig:
    def __init__(self, emulator: Emulator) -> None:
        self.emulator = emulator
        self.now = NOW
        self.ec2 = ec2_client()
        self.stubber = Stubber(self.ec2)
        self.stubber.activate()
        directory = Ec2InstanceDirectory(self.ec2)
        self.pipeline = Pipeline(
            clusters=OneCluster(KubeApi(emulator.api_client(), RetryPolicy(attempts=2))),
            directory=directory,
            settings=Settings(),
            clock=lambda: self.now,
            wakeups=MemoryWakeups(),
            ledger=MemoryLedger(),
            statuses=Ec2InstanceStatuses(self.ec2),
            reservations=directory,
            capacity_reservations=Ec2CapacityReservations(self.ec2),
        )

    def expect_block_instances(self) -> None:
        """One DescribeInstances, filtered by the reservation and the live states."""
        filters = [
            {"Name": "capacity-reservation-id", "Values": [BLOCK]},
            {"Name": "instance-state-name", "Values": list(LIVE_STATES)},
        ]
        instances = [ec2_instance(i) for i in IN_BLOCK]
        reservations = [{"ReservationId": "r-0a1b2c3d4e5f60031", "Instances": instances}]
        self.stubber.add_response(
            "describe_instances", {"Reservations": reservations}, {"Filters": filters}
        )

    def expect_reservations(self, *blocks: dict[str, Any]) -> None:
        expected = {"Filters": [{"Name": "state", "Values": ["active"]}], "MaxResults": PAGE_SIZE}
        answer = {"CapacityReservations": list(blocks)}
        self.stubber.add_response("describe_capacity_reservations", answer, expected)

    def run(self, message: dict[str, Any]) -> list[Report]:
        [result] = self.pipeline.process([json.dumps(message)])
        assert result.error is None, result.error
        self.stubber.assert_no_pending_responses()
        return result.reports

    def warning(self) -> list[Report]:
        self.expect_block_instances()
        return self.run(sample("capacity-block-expiry"))

    def sweep(self, *blocks: dict[str, Any], ending: bool = True) -> list[Report]:
        """A sweep request, EC2 describing ``blocks`` (and, when one is ``ending``, the
        instances of the block, asked for after: the Stubber answers in order)."""
        stub_sweep(self.stubber, *NO_SETS)
        self.expect_reservations(*blocks)
        if ending:
            self.expect_block_instances()
        return self.run(sweep_request(f"sweep-{self.now.isoformat()}", self.now.isoformat()))

    def get(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
        found = self.emulator.get_object(kind, name, namespace) if namespace else None
        found = found or self.emulator.get_object(kind, name)
        assert found is not None, (kind, name)
        return found

    def pod_warnings(self) -> list[str]:
        return sorted(
            e["involvedObject"]["name"]
            for e in self.emulator.objects("Event")
            if e.get("reason") == POD_WARNING_REASON
        )

    def replacements(self) -> dict[str, dict[str, Any]]:
        """Each new NodeClaim by the claim it replaces."""
        return {
            c["metadata"]["labels"][node_marks.REPLACES_LABEL]: c
            for c in self.emulator.objects("NodeClaim")
            if node_marks.REPLACES_LABEL in (c["metadata"].get("labels") or {})
        }


@pytest.fixture
def rig() -> Iterator[Rig]:
    objects = copy.deepcopy(load_cluster_file(EVENTS / "cluster.yaml"))
    with Emulator(objects) as emulator:
        made = Rig(emulator)
        yield made
        made.stubber.deactivate()


def assert_the_three_acted_on_and_the_fourth_untouched(rig: Rig, reports: list[Report]) -> None:
    acted = [r for r in reports if r.kind == str(Kind.CAPACITY_BLOCK_EXPIRY)]
    assert sorted(r.instance_id or "" for r in acted) == sorted(IN_BLOCK)
    for report in acted:
        assert report.outcome == "acted", report.reason
        assert report.deadline == END - timedelta(minutes=30)
        assert "capacity block cr-0b1c2d3e4f5a60001 ends 2026-12-01T14:45:00Z" in report.reason
        types = [a["type"] for a in report.actions]
        # Replacement first, then the old claim's deletion (Karpenter drains the node).
        assert types.index("create-nodeclaim") < types.index("delete-nodeclaim")
    replacements = rig.replacements()
    assert sorted(replacements) == sorted(claim for _, claim, _ in IN_BLOCK.values())
    for replacement in replacements.values():
        asked = [
            r
            for r in replacement["spec"]["requirements"]
            if r["key"] == CAPACITY_RESERVATION_ID_LABEL
        ]
        assert asked == [
            {"key": CAPACITY_RESERVATION_ID_LABEL, "operator": "NotIn", "values": [BLOCK]}
        ]
    for node, claim, _ in IN_BLOCK.values():
        assert rig.get("NodeClaim", claim)["metadata"].get("deletionTimestamp")
        assert TAINT in {t["key"] for t in rig.get("Node", node)["spec"].get("taints", [])}
    other = rig.get("Node", OTHER_NODE)
    assert not other["spec"].get("unschedulable")
    assert TAINT not in {t["key"] for t in other["spec"].get("taints", [])}
    assert not rig.get("NodeClaim", OTHER_CLAIM)["metadata"].get("deletionTimestamp")
    # The training pods of the three nodes are warned; the fourth's is not.
    assert rig.pod_warnings() == ["llm-train-0", "llm-train-1", "llm-train-2"]


def test_the_warning_acts_on_the_blocks_three_nodes_and_not_the_fourth(rig: Rig) -> None:
    """EC2's warning names the reservation: its instances are found in one DescribeInstances
    (the Stubber holds exactly one), each acted on as an involuntary notice."""
    reports = rig.warning()
    assert_the_three_acted_on_and_the_fourth_untouched(rig, reports)
    event = next(
        e
        for e in rig.emulator.objects("Event")
        if e["involvedObject"]["name"] == "llm-train-0" and e["reason"] == POD_WARNING_REASON
    )
    assert event["type"] == "Warning" and event["metadata"]["namespace"] == "ml"
    assert (
        "EC2 terminates node ip-10-0-1-31.ec2.internal from 2026-12-01T14:15:00Z"
        in (event["message"])
    )


def test_the_sweep_alone_finds_the_same_block_forty_minutes_before_its_end(rig: Rig) -> None:
    """Karpenter's expiration controller: DescribeCapacityReservations (state active), a
    capacity-block reservation expiring from EndDate - 40m. The block ending in days is not."""
    rig.now = END - timedelta(minutes=40)
    reports = rig.sweep(capacity_block(BLOCK, END), capacity_block(OTHER, END + timedelta(days=11)))
    assert_the_three_acted_on_and_the_fourth_untouched(rig, reports)


def test_a_sweep_before_the_forty_minutes_does_nothing(rig: Rig) -> None:
    rig.now = END - timedelta(minutes=41)
    reports = rig.sweep(capacity_block(BLOCK, END), ending=False)  # no DescribeInstances
    assert [r.kind for r in reports] == ["instance-impaired"]  # the statuses' own report
    assert rig.replacements() == {}


def test_the_event_and_the_sweep_act_once_whichever_comes_first(rig: Rig) -> None:
    """The ledger key (instance and termination start) is the same for both: the second
    telling is a duplicate, no second replacement, no second pod warning."""
    first = rig.warning()
    rig.now = NOW + timedelta(minutes=1)
    again = rig.sweep(capacity_block(BLOCK, END))
    blocks = [r for r in again if r.kind == str(Kind.CAPACITY_BLOCK_EXPIRY)]
    assert [r.outcome for r in blocks] == ["ignored"] * 3
    assert all("duplicate delivery" in r.reason for r in blocks)
    assert len(rig.replacements()) == 3 and len(first) == 3
    assert rig.pod_warnings() == ["llm-train-0", "llm-train-1", "llm-train-2"]


def test_a_failed_describe_capacity_reservations_spoils_no_sweep(rig: Rig) -> None:
    """The instance statuses are handled; the blocks are looked for at the next sweep."""
    stub_sweep(rig.stubber, *NO_SETS)
    rig.stubber.add_client_error("describe_capacity_reservations", "RequestLimitExceeded")
    reports = rig.run(sweep_request("sweep-throttled", NOW.isoformat()))
    [blocked] = [r for r in reports if r.kind == str(Kind.CAPACITY_BLOCK_EXPIRY)]
    assert blocked.outcome == "ignored" and "RequestLimitExceeded" in blocked.reason
    assert "next sweep" in blocked.reason


def test_when_karpenters_expiration_controller_deleted_the_claim_first_pods_are_warned_all_the_same(
    rig: Rig,
) -> None:
    """Karpenter's ``capacityreservation/expiration`` controller deletes the claims at the same
    moment, without a replacement. An involuntary notice does not read whether the claim is
    already being deleted (it acts before reading, to save requests): the replacement,
    outside the block, is still made (Karpenter's provisioner uses it for the drained pods),
    the delete of a claim already being deleted changes nothing, and the pod is warned."""
    # Deleted through the API: Karpenter's termination finalizer keeps it, being deleted.
    KubeApi(rig.emulator.api_client()).delete_nodeclaim("gpu-p5a01", None)
    assert rig.get("NodeClaim", "gpu-p5a01")["metadata"].get("deletionTimestamp")
    reports = {r.instance_id: r for r in rig.warning()}
    assert reports["i-0a1b2c3d4e5f60031"].outcome == "acted"
    assert sorted(rig.replacements()) == ["gpu-p5a01", "gpu-p5a02", "gpu-p5a03"]
    assert rig.get("NodeClaim", "gpu-p5a01")["metadata"].get("deletionTimestamp")
    assert rig.pod_warnings() == ["llm-train-0", "llm-train-1", "llm-train-2"]
