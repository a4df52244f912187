"""Every real DescribeInstanceStatus answer found in AWS's documentation, its API examples and
Karpenter's own tests, replayed through the sweep, each with what AWS or Karpenter says
should happen (and what Lifeboat does instead, where it deliberately differs: scheduled
maintenance inside the NodePool's budgets rather than at once).

Sources (quoted in each test):

* the EC2 API's example "To describe the status of an instance" (botocore's
  ``ec2/2016-11-15/examples-1.json``, the SDKs' and CLI reference's example);
* the EC2 User Guide, "Scheduled events for your instances" (awsdocs/amazon-ec2-user-guide,
  ``monitoring-instances-status-check_sched.md``): a ``system-reboot`` event and an
  ``instance-stop`` on degraded hardware; "After your instance is rebooted, the scheduled
  event is cleared and the event's description is updated";
* Karpenter's AWS provider, ``pkg/providers/instancestatus/suite_test.go`` and
  ``pkg/controllers/interruption/suite_test.go`` (answers without ``InstanceState`` or zone,
  events with only a ``Code``, checks ``initializing``/``insufficient-data``).

Through the Stubber (which checks each answer against EC2's service model) and the sample
cluster on the emulator, as ``test_instance_status``.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest

from lifeboat.events.notice import Kind
from lifeboat.model.settings import Settings
from tests.integration.aws.test_instance_status import (
    KARPENTER_CLAIM,
    KARPENTER_INSTANCE,
    KARPENTER_NODE,
    NOW,
    Rig,
    make_rig,
    types,
)


def at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@pytest.fixture
def rig() -> Iterator[Rig]:
    yield from make_rig()


def claim_deleted(rig: Rig) -> bool:
    return bool(rig.claim(KARPENTER_CLAIM)["metadata"].get("deletionTimestamp"))


# --- AWS's documentation ----------------------------------------------------------------------

# botocore ec2 examples-1.json, DescribeInstanceStatus "To describe the status of an instance"
# ("This example describes the current status of the specified instance"), its instance id
# set to the sample cluster's node.
API_EXAMPLE: dict[str, Any] = {
    "AvailabilityZone": "us-east-1d",
    "InstanceId": KARPENTER_INSTANCE,
    "InstanceState": {"Code": 16, "Name": "running"},
    "InstanceStatus": {"Details": [{"Name": "reachability", "Status": "passed"}], "Status": "ok"},
    "SystemStatus": {"Details": [{"Name": "reachability", "Status": "passed"}], "Status": "ok"},
}


def test_the_api_reference_example_is_a_healthy_instance_and_nothing_is_done(rig: Rig) -> None:
    [report] = rig.sweep(API_EXAMPLE)
    assert report.outcome == "ignored"
    assert "1 instance(s) described, none impaired or scheduled" in report.reason
    assert not rig.node(KARPENTER_NODE)["spec"].get("unschedulable")


# EC2 User Guide, "View scheduled events": "The following example output shows a reboot event."
USER_GUIDE_REBOOT: dict[str, Any] = {
    "InstanceEventId": "instance-event-0d59937288b749b32",
    "Code": "system-reboot",
    "Description": "The instance is scheduled for a reboot",
    "NotAfter": at("2019-03-15T22:00:00.000Z"),
    "NotBefore": at("2019-03-14T20:00:00.000Z"),
    "NotBeforeDeadline": at("2019-04-05T11:00:00.000Z"),
}
# "The following example output shows an instance retirement event." (code instance-stop,
# no NotAfter)
USER_GUIDE_STOP: dict[str, Any] = {
    "InstanceEventId": "instance-event-0e439355b779n26",
    "Code": "instance-stop",
    "Description": "The instance is running on degraded hardware",
    "NotBefore": at("2015-05-23T00:00:00.000Z"),
}


def with_events(*events: dict[str, Any]) -> dict[str, Any]:
    return {**API_EXAMPLE, "AvailabilityZone": "us-east-1b", "Events": list(events)}


def test_the_user_guides_system_reboot_is_maintenance_acted_on_within_the_budget() -> None:
    """Handled four days before its NotBefore, outside general's freeze: the node is
    replaced ahead of the reboot (Karpenter would delete the claim at once; Lifeboat weighs
    the pool's budget first, which allows one)."""
    for rig in make_rig():
        rig.now = at("2019-03-10T18:00:00Z")
        [report] = rig.sweep(with_events(USER_GUIDE_REBOOT))
        assert (report.kind, report.outcome) == ("scheduled-change", "acted"), report.reason
        assert "scheduled maintenance (system-reboot)" in report.reason
        assert claim_deleted(rig)


def test_the_user_guides_instance_stop_without_not_after_is_maintenance_too() -> None:
    for rig in make_rig():
        rig.now = at("2015-05-20T18:00:00Z")
        [report] = rig.sweep(with_events(USER_GUIDE_STOP))
        assert (report.kind, report.outcome) == ("scheduled-change", "acted"), report.reason
        assert claim_deleted(rig)


def test_after_the_reboot_the_updated_description_gives_the_node_back() -> None:
    """User Guide: "After your instance is rebooted, the scheduled event is cleared and the
    event's description is updated" (``[Completed]``, API reference InstanceStatusEvent).
    With ``scheduled-change=cordon`` the node stays, and comes back once it is over."""
    for rig in make_rig(Settings(kind_actions={Kind.SCHEDULED_CHANGE: "cordon"})):
        rig.now = at("2019-03-10T18:00:00Z")
        [acted] = rig.sweep(with_events(USER_GUIDE_REBOOT))
        assert acted.outcome == "acted" and rig.node(KARPENTER_NODE)["spec"]["unschedulable"]
        rig.now = at("2019-03-14T20:30:00Z")
        completed = {
            **USER_GUIDE_REBOOT,
            "Description": "[Completed] " + USER_GUIDE_REBOOT["Description"],
        }
        [over] = rig.sweep(with_events(completed))
        assert over.outcome == "acted" and "is over" in over.reason
        assert not rig.node(KARPENTER_NODE)["spec"].get("unschedulable")


# --- Karpenter's tests -------------------------------------------------------------------------


def failed(since: datetime) -> dict[str, Any]:
    return {
        "Status": "impaired",
        "Details": [{"Status": "failed", "Name": "reachability", "ImpairedSince": since}],
    }


# Clock.Step(time.Hour) after ImpairedSince: impaired for an hour when swept.
SINCE = NOW - timedelta(hours=1)


def test_karpenters_provider_answer_impaired_everywhere_with_a_retirement() -> None:
    """instancestatus/suite_test.go BeforeEach ("should return all impairment details"):
    instance, system and EBS impaired, and ``Events: [{Code: instance-retirement}]``. The
    controller forcefully terminates (impairment wins: "Forceful termination should win").
    Lifeboat: replaced at once as impaired; the retirement finds it being replaced."""
    for rig in make_rig():
        answer = {
            "InstanceId": KARPENTER_INSTANCE,
            "InstanceStatus": failed(SINCE),
            "SystemStatus": failed(SINCE),
            "AttachedEbsStatus": failed(SINCE),
            "Events": [{"Code": "instance-retirement"}],
        }
        impaired, retirement = rig.sweep(answer)
        assert (impaired.kind, impaired.outcome) == ("instance-impaired", "acted")
        assert "instance status reachability, system status reachability failed" in (
            impaired.reason
        )
        assert "delete-nodeclaim" in types(impaired)
        assert retirement.kind == "scheduled-change" and retirement.outcome == "ignored"
        assert "nothing to add" in retirement.reason


def test_karpenters_healthy_answer_is_not_returned() -> None:
    """suite_test.go "should not return healthy statuses": system ``initializing``,
    instance ``insufficient-data``, EBS ``initializing``."""
    for rig in make_rig():
        [report] = rig.sweep(
            {
                "InstanceId": KARPENTER_INSTANCE,
                "SystemStatus": {"Status": "initializing"},
                "InstanceStatus": {"Status": "insufficient-data"},
                "AttachedEbsStatus": {"Status": "initializing"},
            }
        )
        assert report.outcome == "ignored" and "none impaired or scheduled" in report.reason


def test_karpenters_retirement_with_healthy_checks_is_acted_on_as_due_now() -> None:
    """suite_test.go "should return scheduled maintenance events even when other statuses
    are healthy" and the controller's "should delete the NodeClaim when an instance has a
    scheduled maintenance event" (``Code`` only): Karpenter deletes the claim at once.
    Lifeboat: due now, acted on within general's budget, saying no start was given."""
    for rig in make_rig():
        [report] = rig.sweep(
            {
                "InstanceId": KARPENTER_INSTANCE,
                "SystemStatus": {"Status": "initializing"},
                "InstanceStatus": {"Status": "insufficient-data"},
                "Events": [{"Code": "instance-retirement"}],
            }
        )
        assert (report.kind, report.outcome) == ("scheduled-change", "acted"), report.reason
        assert "start not given (no NotBefore): due now" in report.reason
        assert claim_deleted(rig)


@pytest.mark.parametrize(
    ("system", "instance", "category"),
    [
        # "should forcefully terminate the NodeClaim when an instance is unhealthy due to EC2
        # system status checks" (its instance status initializing, detail initializing)
        (
            failed(SINCE),
            {
                "Status": "initializing",
                "Details": [{"Status": "initializing", "Name": "reachability"}],
            },
            "system status",
        ),
        # "should forcefully terminate the NodeClaim when an instance has InstanceStatus check
        # failure" (no SystemStatus at all)
        (None, failed(SINCE), "instance status"),
    ],
)
def test_karpenters_impaired_answers_replace_the_node(
    system: dict[str, Any] | None, instance: dict[str, Any] | None, category: str
) -> None:
    for rig in make_rig():
        answer: dict[str, Any] = {"InstanceId": KARPENTER_INSTANCE}
        if system is not None:
            answer["SystemStatus"] = system
        if instance is not None:
            answer["InstanceStatus"] = instance
        [report] = rig.sweep(answer)
        assert (report.kind, report.outcome) == ("instance-impaired", "acted")
        assert f"{category} reachability failed" in report.reason
        assert claim_deleted(rig)


def test_karpenters_system_failure_and_retirement_is_one_replacement() -> None:
    """suite_test.go "should forcefully terminate when an instance has both system status
    failure and a scheduled event": one replacement, the impairment's."""
    for rig in make_rig():
        before = len(rig.claims())
        impaired, retirement = rig.sweep(
            {
                "InstanceId": KARPENTER_INSTANCE,
                "SystemStatus": failed(SINCE),
                "Events": [{"Code": "instance-retirement"}],
            }
        )
        assert impaired.outcome == "acted" and retirement.outcome == "ignored"
        assert len(rig.claims()) == before + 1  # one replacement NodeClaim
