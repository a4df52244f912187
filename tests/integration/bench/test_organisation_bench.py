"""``bench.organisation`` at a small size: the storm over discovered clusters taints every
warning, discovery's calls are counted where they happen, and the memory and steady-state
measures count what they say (the 500-cluster run is ``make bench``'s). The run itself (a
fleet of processes) is marked ``bench``: ``make bench-check``."""

from __future__ import annotations

from typing import Any

import pytest

from bench import fleet, organisation
from bench.report import table
from bench.runner import parse_args, verdicts


@pytest.fixture(scope="module")
def measured() -> dict[str, Any]:
    # Two clusters per API servers' process: the larger fleet is served by two of them.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fleet, "CLUSTERS_PER_SERVER_PROCESS", 2)
        assert fleet._shards(4) == [range(2), range(2, 4)]
        return organisation.organisation((2, 4), warnings=3, concurrency=2, latency_ms=1.0)


@pytest.mark.bench
def test_every_warning_of_every_discovered_cluster_is_tainted(measured: dict[str, Any]) -> None:
    for size in measured["sizes"]:
        storm = size["storm"]
        assert storm["events"] == storm["clusters"] * 3
        assert storm["tainted"] == storm["events"]
        assert storm["outcomes"] == {"acted": storm["events"]}
        assert storm["batch_item_failures"] == 0
        calls = storm["discovery_calls"]
        # Each environment's snapshot discovered every cluster (one page), once each; the
        # storm then needed no call: the clusters were known and within their TTL.
        assert calls["snapshot_list_pages"] == 2
        assert calls["snapshot_describes"] == 2 * storm["clusters"]
        assert calls["storm_describes"] == 0 and calls["storm_list_pages"] == 0
    assert measured["growth"]["clusters"] == 2.0


def test_the_memory_measure_counts_each_cached_client() -> None:
    small, large = organisation.client_memory(10), organisation.client_memory(40)
    assert small["bytes_per_client"] > 1000  # a RestClient, its Configuration and a token
    # Per client, not per fleet: the same within a factor of two at four times the clusters.
    assert 0.5 < large["bytes_per_client"] / small["bytes_per_client"] < 2


def test_steady_state_calls_follow_the_active_clusters_and_the_ttl() -> None:
    few = organisation.steady_state(20, environments=2, warnings_per_cluster_per_hour=600)
    slow = organisation.steady_state(20, environments=2, warnings_per_cluster_per_hour=1)
    # Every cluster warned several times a minute in each environment: close to the bound,
    # one describe per cluster, environment and TTL (the first TTL after the snapshot free).
    assert few["describes_per_minute"] <= few["describes_per_minute_bound"] == 8.0
    assert few["describes_per_minute"] > 7
    # Rare warnings: a describe for most of them, far below the bound.
    assert slow["describes_per_minute"] <= slow["warnings_per_minute"]
    assert few["list_pages_per_minute"] == slow["list_pages_per_minute"] == 0


@pytest.mark.bench
def test_the_runner_reports_and_judges_the_largest_size(measured: dict[str, Any]) -> None:
    summary: dict[str, Any] = {"storms": [], "organisation": measured}
    judged = verdicts(summary)["organisation_p99_receipt_to_tainted_s"]
    assert judged["clusters"] == 4
    assert judged["all_events_tainted"] is True
    assert "Organisation: 4 clusters found by their tag" in table(summary)
    options, _ = parse_args(["--organisation-sizes", "50", "500"])
    assert options.organisation_sizes == (50, 500)
    assert not parse_args(["--no-organisation"])[0].organisation
