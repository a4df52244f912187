"""bench.sweep: the sweep's EC2 calls at fleet scale come from EC2's server-side filters and
pagination (1,000 results a page), not from the fleet's size."""

from __future__ import annotations

from functools import cache
from typing import Any

from bench.sweep import FleetEc2, sweep_cost
from lifeboat.events.instance_status import FILTER_SETS


@cache
def _everyone_in_trouble() -> dict[str, Any]:
    """5,000 instances, every one impaired or with a scheduled event: one sweep, read by
    two tests (its pages, its parts)."""
    return sweep_cost(5000, 50, impaired=2500, scheduled=2500, call_ms=0)


def test_a_usual_sweep_of_5000_instances_costs_three_status_calls_and_one_lookup() -> None:
    result = sweep_cost(5000, 50, impaired=50, scheduled=50, call_ms=0)
    assert result["describe_instance_status_calls"] == 3  # one page per filter set
    assert result["describe_instances_calls"] == 1  # 100 ids: one call (200 a call)
    assert result["notices"] == 100
    # Every tenth cluster is not this stack's: its instances stop at triage.
    assert (result["to_clusters"], result["unmanaged"]) == (90, 10)
    assert result["clusters_reached"] == 45


def test_every_instance_in_trouble_pages_through_each_set() -> None:
    result = _everyone_in_trouble()
    # 2,500 impaired: 3 pages; none system-impaired: 1 empty page; 2,500 scheduled: 3 pages.
    assert result["describe_instance_status_calls"] == 7
    assert result["describe_instances_calls"] == 25
    assert result["notices"] == 5000


def test_the_stand_in_filters_as_ec2_does() -> None:
    ec2 = FleetEc2(10, 2, impaired=2, scheduled=3, call_ms=0)
    paginator = ec2.get_paginator("describe_instance_status")
    found = [
        [
            s["InstanceId"]
            for page in paginator.paginate(Filters=f)
            for s in page["InstanceStatuses"]
        ]
        for f in FILTER_SETS
    ]
    assert [len(ids) for ids in found] == [2, 0, 3]


def test_vanished_events_cost_one_node_list_per_managed_cluster_whatever_the_fleet() -> None:
    """The sweep's search for EC2 events no longer reported (``Pipeline._sweep``): one LIST
    of labelled nodes per managed cluster (45 of 50), at 500 instances as at 5,000; each
    marked node of a managed cluster whose instance has no event any more is ended."""
    small = sweep_cost(500, 50, impaired=5, scheduled=5, call_ms=0, ended=5)
    large = sweep_cost(5000, 50, impaired=50, scheduled=50, call_ms=0, ended=50)
    assert small["node_list_calls"] == large["node_list_calls"] == 45
    # Every tenth cluster is not managed: its marked nodes are never listed.
    assert (small["ended"], large["ended"]) == (4, 45)


def test_past_fifty_every_managed_instance_is_acted_on_or_handed_on_in_the_sweep() -> None:
    """66 impaired, every tenth cluster unmanaged: 60 managed. 50 in the sweep's message,
    10 in one sweep part; before, triage came after the split and the impaired remainder
    was refused, so some were never reached."""
    result = sweep_cost(5000, 50, impaired=66, scheduled=0, call_ms=0)
    assert result["to_clusters"] == 60
    assert (result["acted_in_message"], result["handed_on"], result["sweep_parts"]) == (50, 10, 1)


def test_every_instance_in_trouble_is_handed_on_in_parts_of_fifty() -> None:
    result = _everyone_in_trouble()
    assert result["acted_in_message"] + result["handed_on"] == result["to_clusters"] == 4500
    assert result["sweep_parts"] == 89
