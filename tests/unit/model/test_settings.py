"""``load_settings``: good values are read, and every bad value names its variable."""

from __future__ import annotations

from datetime import timedelta

import pytest

from lifeboat.events.notice import Kind
from lifeboat.model.settings import Settings, SettingsError, load_settings


def test_defaults_from_an_empty_environment() -> None:
    settings = load_settings({})
    assert settings == Settings()
    assert settings.taint_effect == "NoSchedule"
    assert settings.scheduled_change_lead == timedelta(minutes=30)
    assert settings.lease_namespace == "lifeboat"
    assert not settings.dry_run
    assert settings.action_for(Kind.REBALANCE_RECOMMENDATION) == "replace"


def test_good_values_are_read() -> None:
    settings = load_settings(
        {
            "LIFEBOAT_CLUSTERS": " prod , staging,,",
            "LIFEBOAT_DRY_RUN": "Yes",
            "LIFEBOAT_TAINT_EFFECT": "NoExecute",
            "LIFEBOAT_SCHEDULED_CHANGE_LEAD_SECONDS": "3600",
            "LIFEBOAT_LEASE_NAMESPACE": "ops",
            "LIFEBOAT_KIND_ACTIONS": "rebalance-recommendation=cordon, scheduled-change=ignore",
            "LIFEBOAT_MANAGED_TAG": "lifeboat/managed",
            "LIFEBOAT_UNKNOWN_INSTANCE_GRACE_SECONDS": "120",
            "LIFEBOAT_ACCOUNT_ID": "123456789012",
            "LIFEBOAT_REGION": "eu-west-1",
        }
    )
    assert settings.clusters == ("prod", "staging")
    assert settings.dry_run
    assert settings.taint_effect == "NoExecute"
    assert settings.scheduled_change_lead == timedelta(hours=1)
    assert settings.lease_namespace == "ops"
    assert settings.action_for(Kind.REBALANCE_RECOMMENDATION) == "cordon"
    assert settings.action_for(Kind.SCHEDULED_CHANGE) == "ignore"
    assert settings.managed_tag == "lifeboat/managed"
    assert settings.unknown_instance_grace == timedelta(minutes=2)
    assert settings.account_id == "123456789012"
    assert settings.region == "eu-west-1"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("1", True), ("true", True), ("ON", True), ("0", False), ("off", False), ("", False)],
)
def test_dry_run_flag_spellings(raw: str, expected: bool) -> None:
    assert load_settings({"LIFEBOAT_DRY_RUN": raw}).dry_run is expected


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("LIFEBOAT_TAINT_EFFECT", "NoEvict"),
        ("LIFEBOAT_DRY_RUN", "maybe"),
        ("LIFEBOAT_SCHEDULED_CHANGE_LEAD_SECONDS", "30m"),
        ("LIFEBOAT_SCHEDULED_CHANGE_LEAD_SECONDS", "-5"),
        ("LIFEBOAT_UNKNOWN_INSTANCE_GRACE_SECONDS", "1.5"),
        ("LIFEBOAT_UNKNOWN_INSTANCE_GRACE_SECONDS", "soon"),
        ("LIFEBOAT_IMPAIRED_THRESHOLD_SECONDS", "2m"),
        ("LIFEBOAT_KIND_ACTIONS", "rebalance=cordon"),
        ("LIFEBOAT_KIND_ACTIONS", "spot-interruption=ignore"),
        ("LIFEBOAT_KIND_ACTIONS", "scheduled-change=drain"),
        ("LIFEBOAT_KIND_ACTIONS", "scheduled-change"),
    ],
)
def test_each_bad_value_names_its_variable(name: str, value: str) -> None:
    with pytest.raises(SettingsError, match=name) as raised:
        load_settings({name: value})
    assert isinstance(raised.value, ValueError)


def test_involuntary_kind_action_explains_why() -> None:
    with pytest.raises(SettingsError, match="involuntary"):
        load_settings({"LIFEBOAT_KIND_ACTIONS": "state-change=cordon"})


def test_reads_the_process_environment_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LIFEBOAT_TAINT_EFFECT", "NoExecute")
    assert load_settings().taint_effect == "NoExecute"


def test_prefer_no_schedule_is_refused_as_the_taint_effect() -> None:
    # It is the mark of a node that only waits; an acted-on node must be told apart.
    with pytest.raises(SettingsError, match="LIFEBOAT_TAINT_EFFECT"):
        load_settings({"LIFEBOAT_TAINT_EFFECT": "PreferNoSchedule"})


def test_a_rotation_cannot_be_configured_to_cordon_only() -> None:
    """A cordoned node never drains, so a rotation's health gate would only ever time out."""
    with pytest.raises(SettingsError, match="rotation=cordon"):
        load_settings({"LIFEBOAT_KIND_ACTIONS": "rotation=cordon"})
    settings = load_settings({"LIFEBOAT_KIND_ACTIONS": "rotation=ignore"})
    assert settings.action_for(Kind.ROTATION) == "ignore"


def test_load_balancer_exclusion_is_on_by_default_and_can_be_turned_off() -> None:
    assert load_settings({}).exclude_from_load_balancers is True
    off = load_settings({"LIFEBOAT_EXCLUDE_FROM_LOAD_BALANCERS": "false"})
    assert off.exclude_from_load_balancers is False
    with pytest.raises(SettingsError, match="LIFEBOAT_EXCLUDE_FROM_LOAD_BALANCERS"):
        load_settings({"LIFEBOAT_EXCLUDE_FROM_LOAD_BALANCERS": "maybe"})


def test_complete_launch_hooks_is_off_unless_turned_on() -> None:
    """Issue 22: a launch hook nobody completes abandons every new instance, so Lifeboat
    completes launch actions only when told to."""
    assert load_settings({}).complete_launch_hooks is False
    assert load_settings({"LIFEBOAT_COMPLETE_LAUNCH_HOOKS": "true"}).complete_launch_hooks


def test_kind_actions_refuse_a_launch_kind() -> None:
    with pytest.raises(SettingsError, match="asg-launch is not a voluntary kind"):
        load_settings({"LIFEBOAT_KIND_ACTIONS": "asg-launch=cordon"})
    assert not Kind.ASG_LAUNCH.voluntary and not Kind.ASG_LAUNCH.involuntary
