"""``make bench`` in its quick configuration, run in-process: the summary's structure and
sanity (counts, every event acted on), never its timings."""

from __future__ import annotations

import pytest

from bench.events import KINDS
from bench.runner import Options, run


@pytest.fixture(scope="module")
def summary() -> dict:
    options = Options.quick_options()
    options.cold_start = False  # fresh interpreters: slow, and timing-only
    options.layer_build = False  # never download wheels from a test
    options.replay_nodes = 60  # the structure of the replay measure, not its timing
    return run(options)


def test_every_kind_is_counted(summary: dict) -> None:
    per_kind = summary["per_kind"]
    assert set(per_kind) == set(KINDS)
    for kind, result in per_kind.items():
        assert result["events"] == 10, kind
        assert result["batch_item_failures"] == 0, (kind, result["errors"])
        assert sum(result["outcomes"].values()) == result["events"], kind
        assert sum(result["k8s_by_verb_per_event"].values()) == pytest.approx(
            result["k8s_requests_per_event"], abs=0.05
        )


def test_spot_interruption_requests(summary: dict) -> None:
    spot = summary["per_kind"]["spot-interruption"]
    assert spot["outcomes"] == {"acted": spot["events"]}
    # GET node, PATCH (taint + cordon), POST replacement, DELETE claim, POST Event at least.
    assert spot["k8s_requests_per_event"] >= 4
    by_resource = spot["k8s_by_resource_per_event"]
    assert by_resource["patch nodes"] == 1.0
    assert by_resource["create nodeclaims"] == 1.0
    assert by_resource["delete nodeclaims"] == 1.0


def test_aws_calls_per_batch(summary: dict) -> None:
    spot = summary["per_kind"]["spot-interruption"]["aws_calls_per_batch"]
    # One DescribeInstances per batch; the idempotency record is written per event.
    assert spot["ec2:DescribeInstances"] == 1.0
    assert spot["dynamodb:PutItem"] == 10.0
    asg = summary["per_kind"]["asg-termination"]["aws_calls_per_batch"]
    assert asg["autoscaling:CompleteLifecycleAction (stub)"] == 10.0


def test_storms_taint_every_node(summary: dict) -> None:
    storms = summary["storms"]
    assert {(s["directory"], s["ledger"]) for s in storms} == {
        ("moto", "powertools"),
        ("static", "memory"),
        ("static", "powertools"),
    }
    for storm in storms:
        assert storm["events"] == 100
        assert storm["tainted_and_cordoned"] == 100, storm
        assert storm["batch_item_failures"] == 0, storm["errors"]
        assert storm["outcomes"] == {"acted": 100}
        assert storm["k8s_requests_per_event"] >= 4
        latency = storm["receipt_to_tainted_ms"]
        assert 0 < latency["p50"] <= latency["p99"] <= latency["max"]
        assert storm["events_per_second"] > 0


def test_verdicts_and_memory(summary: dict) -> None:
    verdicts = summary["verdicts"]
    assert verdicts["spot_k8s_requests_per_event"]["value"] is not None
    assert verdicts["storm_p99_receipt_to_tainted_s"]["all_events_tainted"] is True
    # One cluster size only: no marginal-cost ratio to report.
    assert verdicts["marginal_per_warning_ratio"]["value"] is None
    assert verdicts["cold_start_ratio"]["value"] is None  # not measured here
    assert summary["peak_rss_mb"] > 0


@pytest.mark.parametrize("measure", ["fleet", "fleet_cold"])
def test_the_fleet_taints_every_warning_of_every_cluster(summary: dict, measure: str) -> None:
    """Invocations in their own processes (restored from a snapshot, or cold) and the API
    servers in another: every warning of every cluster is tainted, each once."""
    fleet = summary[measure]
    assert fleet["concurrency"] == 3
    assert fleet["events"] == fleet["clusters"] * fleet["warnings_per_cluster"]
    assert fleet["tainted"] == fleet["events"]
    assert fleet["clusters_fully_tainted"] == fleet["clusters"]
    assert fleet["outcomes"] == {"acted": fleet["events"]}
    assert fleet["batch_item_failures"] == 0
    latency = fleet["receipt_to_tainted_ms"]
    assert 0 < latency["p50"] <= latency["p99"] <= latency["max"]
    assert summary["verdicts"]["fleet_worst_cluster_max_s"]["clusters_fully_tainted"] == 5


def test_the_replay_measures_both_file_forms_against_the_floor(summary: dict) -> None:
    replayed = summary["replay"]
    assert replayed["nodes"] == 60
    assert replayed["floor_s"] == pytest.approx(
        replayed["small_replay_s"] + replayed["json_load_s"], abs=0.002
    )
    for form in ("yaml", "json"):
        assert replayed[f"{form}_replay_s"] > 0
        assert summary["verdicts"][f"replay_{form}_ratio"]["value"] == replayed[f"{form}_ratio"]


def test_storms_count_one_emf_document_per_dimension_group(summary: dict) -> None:
    """EMF holds one value per dimension per document: a batch's documents are exactly its
    distinct (cluster, nodepool, kind, outcome) groups, never more (before: ~7 per event)."""
    for storm in summary["storms"]:
        assert storm["emf_documents_per_dimension_group"] == 1.0
        assert storm["emf_documents_per_batch"] <= 10


def test_cold_start_child_parses_importtime() -> None:
    from bench.coldstart import top_imports

    stderr = (
        "import time: self [us] | cumulative | imported package\n"
        "import time:       100 |        500 | kubernetes\n"
        "import time:       400 |        400 |   kubernetes.client\n"
        "import time:       300 |        300 | boto3\n"
    )
    # Self times per top-level package.
    assert top_imports(stderr) == [
        {"module": "kubernetes", "ms": 0.5},
        {"module": "boto3", "ms": 0.3},
    ]


def test_the_marginal_cost_counts_every_warning_at_each_size(summary: dict) -> None:
    """bench.marginal: one measure per cluster size, each warning acted on (it raises
    otherwise) with a Spot warning's 6 requests, CPU and wall time both positive."""
    [cost] = summary["marginal"]  # the quick configuration has one size
    assert cost["nodes"] == 200 and cost["warnings"] == 20
    assert cost["k8s_requests_per_warning"] == 6.0
    assert cost["cpu_ms_per_warning"] > 0 and cost["wall_ms_per_warning"] > 0
