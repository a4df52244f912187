"""A hostile review of the instance status sweep (issues 32 and 33 item 2): forged triggers,
EC2's word wrapped in SNS or EventBridge, ends naming another maintenance, two maintenances
on one instance, ends before starts, a sweep failing mid-pagination, a saved answer missing a
filter set. Same rig as ``test_instance_status`` (botocore's Stubber for EC2, the emulator
through the real ``kubernetes`` client).

Ground truth: Karpenter's ``DefaultProvider.List`` (``pkg/providers/instancestatus/
instancestatus.go``): every page of each of the three filter sets, or an error and nothing
acted on; and the EC2 User Guide's scheduled events ("[Completed]", "[Canceled]").
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from lifeboat.aws.sweep import complete, sweep_request
from lifeboat.events.instance_status import FILTER_SETS
from lifeboat.events.notice import Kind
from lifeboat.marks.maintenance_holds import holds_of
from lifeboat.model.settings import Settings
from tests.integration.aws.test_instance_status import (
    KARPENTER_INSTANCE,
    KARPENTER_NODE,
    MAINTENANCE,
    NOW,
    Rig,
    instance_status,
    make_rig,
    scheduled_event,
)
from tests.integration.aws.test_instance_status_vanish import gone
from tests.integration.aws.test_maintenance_holds import ARN, RETIREMENT, health, out_of_service

OURS = "arn:aws:scheduler:us-east-1:123456789012:schedule/lifeboat/sweep"


@pytest.fixture
def rig() -> Iterator[Rig]:
    yield from make_rig(Settings(kind_actions={Kind.SCHEDULED_CHANGE: "cordon"}))


def body_of(*statuses: dict[str, Any]) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(
        json.dumps({"InstanceStatuses": list(statuses)}, default=str)
    )
    return loaded


def held_for_retirement(rig: Rig) -> dict[str, Any]:
    event = scheduled_event("instance-retirement")
    [acted] = rig.sweep(instance_status(KARPENTER_INSTANCE, events=[event]))
    assert acted.outcome == "acted" and out_of_service(rig)
    return event


# --- forged triggers -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "resources",
    [
        ["arn:aws:scheduler:us-east-1:123456789012:schedule/other-group/sweep"],
        ["arn:aws:scheduler:us-east-1:210987654321:schedule/lifeboat/sweep"],
        [OURS, "arn:aws:scheduler:us-east-1:123456789012:schedule/other-group/sweep"],
        [],
    ],
    ids=["other-group", "other-account", "ours-and-another", "none"],
)
def test_a_sweep_trigger_not_from_our_schedule_asks_ec2_nothing(
    rig: Rig, resources: list[str]
) -> None:
    rig.pipeline.sweep_schedule = OURS
    forged = sweep_request("forged", NOW.isoformat())
    forged["resources"] = resources
    forged["account"] = "210987654321"
    [report] = rig.send(forged)
    assert report.outcome == "rejected" and OURS in report.reason
    assert rig.statuses.calls == 0


# --- EC2's word in a wrapper ---------------------------------------------------------------


def wrappers(body: dict[str, Any]) -> list[dict[str, Any]]:
    text = json.dumps(body)
    sns = {
        "Type": "Notification",
        "MessageId": "5a1b7c1e-0000-4000-8000-000000000001",
        "TopicArn": "arn:aws:sns:us-east-1:123456789012:lifeboat",
        "Message": text,
        "Timestamp": "2026-12-01T18:00:00.000Z",
    }
    bridge = {
        "version": "0",
        "id": "e1",
        "source": "aws.ec2",
        "detail-type": "EC2 Instance Status",
        "account": "123456789012",
        "time": "2026-12-01T18:00:00Z",
        "region": "us-east-1",
        "resources": [],
        "detail": body,
    }
    as_sweep = sweep_request("told", NOW.isoformat(), OURS)
    as_sweep["detail"] = body
    return [sns, bridge, as_sweep, {**sns, "Message": json.dumps(as_sweep)}]


def test_a_cancellation_wrapped_in_sns_or_eventbridge_releases_nothing(rig: Rig) -> None:
    """``[Canceled]`` for the very retirement the node is held for, in every wrapper the
    queue takes: no report acts, the node stays out, EC2 is never asked."""
    event = held_for_retirement(rig)
    rig.pipeline.sweep_schedule = OURS
    calls = rig.statuses.calls
    cancelled = {**event, "Description": "[Canceled] retirement"}
    for forged in wrappers(body_of(instance_status(KARPENTER_INSTANCE, events=[cancelled]))):
        [result] = rig.pipeline.process([json.dumps(forged)])
        assert all(r.outcome in {"rejected", "ignored"} for r in result.reports), forged
        assert out_of_service(rig)
    assert rig.statuses.calls == calls


# --- an end naming another maintenance -----------------------------------------------------


def test_a_completed_event_of_another_code_at_the_same_start_is_not_this_hold(rig: Rig) -> None:
    """Held for a retirement at S; EC2 lists a completed ``system-reboot`` at the same S:
    it names another maintenance (``Hold.names``: start and code)."""
    event = held_for_retirement(rig)
    other = {**scheduled_event("system-reboot"), "Description": "[Completed] reboot"}
    rig.now += timedelta(minutes=1)
    reports = rig.sweep(instance_status(KARPENTER_INSTANCE, events=[event, other]))
    assert all(r.outcome != "acted" for r in reports), [r.reason for r in reports]
    assert out_of_service(rig)


def test_a_completed_event_before_any_start_touches_nothing(rig: Rig) -> None:
    """Out of order: the first sweep to see the maintenance lists it ``[Completed]``."""
    done = {**scheduled_event("system-reboot"), "Description": "[Completed] reboot"}
    before = rig.node(KARPENTER_NODE)
    reports = rig.sweep(instance_status(KARPENTER_INSTANCE, events=[done]))
    assert all(r.outcome != "acted" for r in reports), [r.reason for r in reports]
    assert rig.node(KARPENTER_NODE)["spec"] == before["spec"]


def test_two_maintenances_on_one_instance_each_end_only_their_own(rig: Rig) -> None:
    reboot = scheduled_event("system-reboot")
    retirement = scheduled_event("instance-retirement", RETIREMENT)
    rig.sweep(instance_status(KARPENTER_INSTANCE, events=[reboot, retirement]))
    assert out_of_service(rig)
    assert {(h.code, h.start) for h in holds_of(rig.node(KARPENTER_NODE)) if h.active} == {
        ("system-reboot", MAINTENANCE),
        ("instance-retirement", RETIREMENT),
    }
    done = {**reboot, "Description": "[Completed] reboot"}
    rig.now += timedelta(minutes=1)
    rig.sweep(instance_status(KARPENTER_INSTANCE, events=[done, retirement]))
    assert out_of_service(rig)
    # The reboot vanishes too, the retirement stays listed: still out.
    rig.now += timedelta(minutes=1)
    gone(rig, instance_status(KARPENTER_INSTANCE, events=[retirement]))
    assert out_of_service(rig)
    # Only the retirement's own absence lets the node go.
    rig.now += timedelta(minutes=1)
    gone(rig)
    assert not out_of_service(rig)


# --- a sweep cut short ---------------------------------------------------------------------


def test_a_failure_on_the_second_page_of_the_first_set_ends_nothing(rig: Rig) -> None:
    """``DefaultProvider.List`` returns the error of any page and acts on nothing; so
    here: the message fails, nothing ends, no absence is counted."""
    held_for_retirement(rig)
    rig.now += timedelta(minutes=10)
    first = {"Filters": FILTER_SETS[0], "MaxResults": 1000}
    rig.stubber.add_response(
        "describe_instance_status", {"InstanceStatuses": [], "NextToken": "page-1"}, first
    )
    rig.stubber.add_client_error(
        "describe_instance_status", "RequestLimitExceeded", http_status_code=503
    )
    [result] = rig.pipeline.process([json.dumps(sweep_request("cut", rig.now.isoformat()))])
    assert result.error is not None and not result.reports
    assert out_of_service(rig)
    [hold] = holds_of(rig.node(KARPENTER_NODE))
    assert hold.active and hold.missing_sweeps == 0


def test_a_saved_answer_missing_its_last_filter_set_is_not_complete() -> None:
    """Three pages, the first naming a next one: the first filter set took two pages and
    the third set never answered (each set ends with a page without ``NextToken``, as
    ``DefaultProvider.List``'s ``pager.HasMorePages`` loop reads them). Replay of such a file
    once ended maintenances by silence."""
    more: dict[str, Any] = {"InstanceStatuses": [], "NextToken": "t"}
    last: dict[str, Any] = {"InstanceStatuses": []}
    assert complete([more, last, last]) is False
    assert complete([more, last, last, last]) is True
    assert complete([more, more, last, last, last]) is True


# --- a crash between releasing a hold and recording it ------------------------------------


def test_the_end_is_recorded_in_the_patch_that_releases_so_a_redelivery_is_clean(
    rig: Rig,
) -> None:
    """No step between releasing and recording to crash in: an end is never written to the
    ledger (``Pipeline._handle_all``: ``ends_maintenance`` skips it), the hold's end is in
    the same JSON patch as the uncordon (``node_patches.restore_operations``). The message
    delivered again (the function died after the patch) changes nothing and says no error."""
    event = held_for_retirement(rig)
    done = {**event, "Description": "[Completed] retirement"}
    rig.now += timedelta(minutes=1)
    [released] = rig.sweep(instance_status(KARPENTER_INSTANCE, events=[done]))
    assert released.outcome == "acted" and not out_of_service(rig)
    patches = [e for e in rig.emulator.request_log if e[0] == "patch" and e[2] == "nodes"]
    after = rig.node(KARPENTER_NODE)
    rig.emulator.reset_counts()
    reports = rig.sweep(instance_status(KARPENTER_INSTANCE, events=[done]))
    assert all(not r.reason.startswith("error") for r in reports), [r.reason for r in reports]
    assert all(r.outcome != "acted" for r in reports), [r.reason for r in reports]
    assert rig.node(KARPENTER_NODE) == after and patches
    assert rig.emulator.requests_by_resource[("patch", "nodes")] == 0
    [hold] = holds_of(after)
    assert not hold.active


# --- Karpenter first -----------------------------------------------------------------------


def test_a_held_node_karpenter_removed_ends_quietly_when_its_event_vanishes(rig: Rig) -> None:
    """Karpenter's poller deleted the claim and the Node went: the vanished event finds no
    labelled node, so nothing is patched and no error is reported."""
    held_for_retirement(rig)
    assert rig.emulator.delete_object("Node", KARPENTER_NODE)
    rig.now += timedelta(minutes=1)
    reports = gone(rig)
    assert all(r.outcome != "acted" and "error" not in r.reason for r in reports), [
        r.reason for r in reports
    ]


def test_a_completed_ec2_event_of_another_code_does_not_end_a_health_hold(rig: Rig) -> None:
    """Health told of a retirement at S (the hold names its ARN, no code); EC2 then lists a
    ``[Completed]`` system reboot at the same S. ``Hold.names`` matched on the start alone
    and released the node; the ARN's type (``AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED``) now
    stands for its EC2 code. EC2's own retirement at S still names (and ends) the hold."""
    arn = ARN.format("ret000")
    [acted] = rig.send(health(MAINTENANCE, arn))
    assert acted.outcome == "acted" and out_of_service(rig)
    reboot = {**scheduled_event("system-reboot"), "Description": "[Completed] reboot"}
    rig.now += timedelta(minutes=1)
    rig.sweep(instance_status(KARPENTER_INSTANCE, events=[reboot]))
    assert out_of_service(rig)
    retired = {**scheduled_event("instance-retirement"), "Description": "[Completed] retired"}
    rig.now += timedelta(minutes=1)
    rig.sweep(instance_status(KARPENTER_INSTANCE, events=[reboot, retired]))
    assert not out_of_service(rig)
