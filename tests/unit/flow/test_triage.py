"""The one triage every notice passes before the cluster is asked anything (pipeline and
``lifeboat explain`` alike). Pure: hand-built notices and instance facts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from lifeboat.events.notice import Kind, Notice
from lifeboat.flow.routing import NotYetKnown, triage
from lifeboat.model.instances import InstanceInfo
from lifeboat.model.report import Outcome
from lifeboat.model.settings import Settings

NOW = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)
INSTANCE = "i-0a1b2c3d4e5f60001"
HERE = Settings(clusters=("prod",), account_id="123456789012", region="us-east-1")


def spot(**fields: object) -> Notice:
    base: dict[str, object] = {
        "kind": Kind.SPOT_INTERRUPTION,
        "event_id": "ev-1",
        "event_time": NOW - timedelta(seconds=20),
        "instance_id": INSTANCE,
        "account": "123456789012",
        "region": "us-east-1",
    }
    return Notice(**{**base, **fields})  # type: ignore[arg-type]


def info(**fields: object) -> InstanceInfo:
    return InstanceInfo(**{"instance_id": INSTANCE, "cluster": "prod", **fields})  # type: ignore[arg-type]


def test_a_managed_instance_goes_on_to_its_cluster() -> None:
    checked = triage(spot(), info(), HERE, NOW)
    assert (checked.outcome, checked.cluster) == (None, "prod")


def test_another_accounts_event_is_rejected_before_anything_else() -> None:
    # Even a no-op message of another account is rejected: its ids mean nothing here.
    checked = triage(spot(account="999999999999", ignore_reason="no-op"), None, HERE, NOW)
    assert checked.outcome is Outcome.REJECTED
    assert "account 999999999999" in checked.reason


def test_another_regions_event_is_rejected() -> None:
    checked = triage(spot(region="eu-west-1"), info(), HERE, NOW)
    assert checked.outcome is Outcome.REJECTED


def test_a_no_op_message_is_ignored_with_its_own_reason() -> None:
    checked = triage(spot(ignore_reason="state 'running' is not actionable"), info(), HERE, NOW)
    assert (checked.outcome, checked.reason) == (
        Outcome.IGNORED,
        "state 'running' is not actionable",
    )
    assert not checked.unmanaged


@pytest.mark.parametrize(
    ("facts", "why"),
    [
        (None, "is unknown"),
        (info(cluster="staging"), "belongs to cluster staging, not managed here"),
        (info(cluster=None), "belongs to no EKS cluster"),
    ],
)
def test_instances_not_ours_are_ignored_and_counted_as_unmanaged(
    facts: InstanceInfo | None, why: str
) -> None:
    checked = triage(spot(), facts, HERE, NOW)
    assert checked.outcome is Outcome.IGNORED
    assert why in checked.reason
    assert checked.unmanaged


def test_the_managed_tag_is_required_when_configured() -> None:
    tagged = Settings(clusters=("prod",), managed_tag="lifeboat/managed")
    assert triage(spot(), info(), tagged, NOW).unmanaged
    ok = triage(spot(), info(tags={"lifeboat/managed": "true"}), tagged, NOW)
    assert ok.outcome is None


def test_an_unknown_instance_within_the_grace_period_goes_back_to_the_queue() -> None:
    patient = Settings(unknown_instance_grace=timedelta(minutes=2))
    with pytest.raises(NotYetKnown):
        triage(spot(), None, patient, NOW)
    later = triage(spot(event_time=NOW - timedelta(minutes=3)), None, patient, NOW)
    assert later.outcome is Outcome.IGNORED


def test_a_hook_whose_group_ec2_does_not_confirm_is_rejected() -> None:
    """Regression (issue 23.5): a lifecycle hook naming an Auto Scaling group on an instance
    EC2 puts in no group (a Karpenter node) was completed. Only the group EC2's
    aws:autoscaling:groupName tag names is answered."""
    from lifeboat.events.notice import LifecycleHook

    hook = LifecycleHook("payments-workers", "drain", "token-1", INSTANCE)
    notice = spot(kind=Kind.ASG_TERMINATION, lifecycle=hook)
    checked = triage(notice, info(), HERE, NOW)
    assert checked.outcome is Outcome.REJECTED
    assert "belongs to none" in checked.reason
    # Its own group is confirmed, and goes on.
    own = triage(notice, info(auto_scaling_group="payments-workers"), HERE, NOW)
    assert (own.outcome, own.cluster) == (None, "prod")
