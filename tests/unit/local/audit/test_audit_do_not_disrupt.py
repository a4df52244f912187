"""do-not-disrupt checks, after Karpenter's IsDoNotDisruptActive (pod: "true" or a positive
Go duration, anything else ignored; node: only "true") and Spot's two-minute notice."""

from __future__ import annotations

import pytest

from lifeboat_local.audit import do_not_disrupt

from .audit_builders import node, pod, view

DND = "karpenter.sh/do-not-disrupt"
SPOT = {"karpenter.sh/capacity-type": "spot"}
ON_DEMAND = {"karpenter.sh/capacity-type": "on-demand"}


@pytest.mark.parametrize("labels", [SPOT, {"eks.amazonaws.com/capacityType": "SPOT"}])
def test_do_not_disrupt_pod_on_spot(labels: dict[str, str]) -> None:
    cluster = view(node("n1", labels), pod("etl-0", annotations={DND: "true"}))
    [issue] = do_not_disrupt.on_spot(cluster)
    assert str(issue.object) == "Pod shop/etl-0"
    assert "on Spot node n1" in issue.message and "on-demand" in issue.fix


def test_not_on_spot_and_expired_durations_are_not_flagged() -> None:
    """A duration counts from the pod's start: created 10:00 with "1h" is over at 14:05."""
    on_demand = view(node("n1", ON_DEMAND), pod("etl-0", annotations={DND: "true"}))
    expired = view(node("n1", SPOT), pod("etl-0", annotations={DND: "1h"}))
    running = view(node("n1", SPOT), pod("etl-0", annotations={DND: "6h"}))
    assert list(do_not_disrupt.on_spot(on_demand)) == []
    assert list(do_not_disrupt.on_spot(expired)) == []
    assert len(list(do_not_disrupt.on_spot(running))) == 1


def test_do_not_disrupt_spot_node() -> None:
    [issue] = do_not_disrupt.on_spot(view(node("n1", SPOT, {DND: "true"})))
    assert str(issue.object) == "Node n1"


@pytest.mark.parametrize("value", ["1d", "0s", "-5m", "yes", "True", ""])
def test_pod_values_karpenter_ignores(value: str) -> None:
    [issue] = do_not_disrupt.invalid_values(view(pod("p", annotations={DND: value})))
    assert "Karpenter treats the pod as unprotected" in issue.message


@pytest.mark.parametrize("value", ["true", "2h", "1h30m", "90s"])
def test_pod_values_karpenter_reads(value: str) -> None:
    assert list(do_not_disrupt.invalid_values(view(pod("p", annotations={DND: value})))) == []


def test_node_value_other_than_true_is_ignored_by_karpenter() -> None:
    [issue] = do_not_disrupt.invalid_values(view(node("n1", annotations={DND: "2h"})))
    assert str(issue.object) == "Node n1" and 'only "true" counts there' in issue.message


def test_blocks_rotation_on_non_spot_nodes() -> None:
    cluster = view(
        node("n1", ON_DEMAND, {DND: "true"}),
        node("n2", SPOT),
        pod("a", annotations={DND: "true"}, node="n1"),
        pod("b", annotations={DND: "true"}, node="n2"),  # on Spot: on_spot's business
        pod("c", annotations={DND: "2h"}, node="n1"),  # a duration ends by itself
    )
    issues = list(do_not_disrupt.blocks_rotation(cluster))
    assert [str(i.object) for i in issues] == ["Node n1", "Pod shop/a"]
