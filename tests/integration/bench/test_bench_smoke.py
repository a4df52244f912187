"""``make bench`` run in-process: the summary's structure and sanity (counts, every event
acted on), never its timings.

Every run of the bench here is marked ``bench`` and runs in ``make bench-check``: a tiny
configuration (a few events, 40 nodes, no emulated latency; no fleet or replay processes, no
moto-backed storm) and the quick one, with those. They measure nothing ``make test`` needs
(the code they drive is tested there on its own) and were a tenth of its time. What a
missed target does to the check is tested here without a run, in ``make test``.
"""

from __future__ import annotations

from typing import Any

import pytest

from bench.events import KINDS
from bench.runner import Options, run

Summary = dict[str, Any]


def tiny_options() -> Options:
    options = Options.quick_options()
    options.cold_start = False  # fresh interpreters: slow, and timing-only
    options.layer_build = False  # never download wheels from a test
    options.events = 20
    options.nodes = (40,)
    options.per_kind = 3
    options.latency_ms = 0.0  # counts, not timings: no emulated network latency
    options.replay = False  # processes of their own: in make bench-check (quick_summary)
    options.marginal_warnings = 5
    options.moto_storms = False  # in make bench-check (quick_summary)
    options.fleet = False  # in make bench-check (quick_summary)
    # Each has a smoke test of its own (test_organisation_bench, test_bench_sweep,
    # test_hand_over_bench) and runs in the runner's quick configuration (make bench-check).
    options.organisation = False
    options.sweep = False
    options.hand_over = False
    options.throttled_spread_s = 2.0  # the storm on a throttled account, over 2 s
    # The storms' API server in the bench's process: counts, not timings (a process of its
    # own costs a spawned interpreter per storm; tests/integration/bench/test_api_server.py).
    options.api_server_process = False
    options.process_storms = False  # processes of their own: the quick configuration's
    return options


@pytest.fixture(scope="module")
def summary() -> Summary:
    return run(tiny_options())


@pytest.fixture(scope="module")
def quick_summary() -> Summary:
    options = Options.quick_options()
    options.cold_start = False
    options.layer_build = False
    options.replay_nodes = 60
    return run(options)


@pytest.mark.bench
def test_every_kind_is_counted(summary: Summary) -> None:
    per_kind = summary["per_kind"]
    assert set(per_kind) == set(KINDS)
    for kind, result in per_kind.items():
        assert result["events"] == tiny_options().per_kind, kind
        assert result["batch_item_failures"] == 0, (kind, result["errors"])
        assert sum(result["outcomes"].values()) == result["events"], kind
        assert sum(result["k8s_by_verb_per_event"].values()) == pytest.approx(
            result["k8s_requests_per_event"], abs=0.05
        )


@pytest.mark.bench
def test_spot_interruption_requests(summary: Summary) -> None:
    spot = summary["per_kind"]["spot-interruption"]
    assert spot["outcomes"] == {"acted": spot["events"]}
    # GET node, PATCH (taint + cordon), POST replacement, DELETE claim, POST Event at least.
    assert spot["k8s_requests_per_event"] >= 4
    by_resource = spot["k8s_by_resource_per_event"]
    assert by_resource["patch nodes"] == 1.0
    assert by_resource["create nodeclaims"] == 1.0
    assert by_resource["delete nodeclaims"] == 1.0


@pytest.mark.bench
def test_aws_calls_per_batch(summary: Summary) -> None:
    spot = summary["per_kind"]["spot-interruption"]["aws_calls_per_batch"]
    # One DescribeInstances per batch; the idempotency record is written per event.
    assert spot["ec2:DescribeInstances"] == 1.0
    per_kind = tiny_options().per_kind
    assert spot["dynamodb:PutItem"] == per_kind
    asg = summary["per_kind"]["asg-termination"]["aws_calls_per_batch"]
    # The evicted pods are still terminating after the batch: a heartbeat each, and the
    # action is completed by the drain's follow-up once they are gone (issue 22).
    assert asg["autoscaling:RecordLifecycleActionHeartbeat (stub)"] == per_kind
    assert "autoscaling:CompleteLifecycleAction (stub)" not in asg


def _check_storms(storms: list[dict[str, Any]], events: int) -> None:
    for storm in storms:
        assert storm["events"] == events
        assert storm["tainted_and_cordoned"] == events, storm
        assert storm["batch_item_failures"] == 0, storm["errors"]
        assert storm["outcomes"] == {"acted": events}
        assert storm["k8s_requests_per_event"] >= 4
        latency = storm["receipt_to_tainted_ms"]
        assert 0 < latency["p50"] <= latency["p99"] <= latency["max"]
        assert storm["events_per_second"] > 0


@pytest.mark.bench
def test_storms_taint_every_node(summary: Summary) -> None:
    storms = summary["storms"]
    assert {(s["directory"], s["ledger"]) for s in storms} == {
        ("static", "memory"),
        ("static", "dynamodb"),
    }
    _check_storms(storms, tiny_options().events)


@pytest.mark.bench
def test_the_throttled_storm_acts_on_every_warning_before_its_deadline(summary: Summary) -> None:
    """bench.frictions, tiny: every warning through the queue, EC2's bucket refusing some
    DescribeInstances, the API server some requests (429 with Retry-After), the ledger on
    bench.dynamodb; every warning tainted before its deadline, each counted once."""
    storm = summary["throttled_storm"]
    events = tiny_options().events
    assert storm["events"] == storm["tainted_and_cordoned"] == events
    assert storm["outcomes"] == {"acted": events}
    assert storm["tainted_before_deadline_share"] == 1.0
    assert storm["ec2_describe_calls"] >= storm["ec2_throttled"] > 0  # it was throttled
    assert storm["deliveries"] >= events
    latency = storm["receipt_to_tainted_ms"]
    assert 0 < latency["p50"] <= latency["p99"] <= latency["max"]
    verdict = summary["verdicts"]["throttled_storm_tainted_before_deadline_share"]
    assert verdict["met"] is True and verdict["checked"] is True


def test_a_missed_ratio_fails_the_check_and_a_missed_time_does_not() -> None:
    """make bench-check: a ratio or count target missed fails (--check exits 1); an
    absolute time missed is reported only."""
    from bench.runner import failed_checks

    missed_ratio = {"value": 4.3, "target": 2.0, "met": False}
    missed_time = {"value": 7.9, "target": 2.0, "met": False}
    assert failed_checks({"replay_yaml_ratio": missed_ratio}) == ["replay_yaml_ratio"]
    assert failed_checks({"throttled_storm_p99_receipt_to_tainted_s": missed_time}) == []
    assert failed_checks({"replay_yaml_ratio": {**missed_ratio, "met": None}}) == []


def _storm(
    ledger: str, nodes: int, p99_ms: float, tainted: int = 100, requests: int = 200
) -> dict[str, Any]:
    return {
        "ledger": ledger,
        "nodes": nodes,
        "events": 100,
        "tainted": tainted,
        "batch_item_failures": 0,
        "ledger_requests": requests,
        "receipt_to_tainted_ms": {"p99": p99_ms},
    }


def test_the_dynamodb_ledger_target_is_judged_on_the_largest_process_storm() -> None:
    """Issue 36's 1 s: the storm with each invocation a process (bench.fleet.one_cluster),
    its largest cluster, the ledger on DynamoDB; a warning left untainted, a record failed or
    a ledger that was not written misses it."""
    from bench.runner import _ledger_and_throttled_verdicts

    storms = [
        _storm("memory", 5000, 400.0),
        _storm("dynamodb", 500, 1900.0),
        _storm("dynamodb", 5000, 800.0),
    ]
    verdict = _ledger_and_throttled_verdicts({"process_storms": storms})[
        "dynamodb_storm_p99_receipt_to_tainted_s"
    ]
    assert (verdict["value"], verdict["nodes"], verdict["met"]) == (0.8, 5000, True)
    for unsound in (
        _storm("dynamodb", 5000, 800.0, tainted=99),
        _storm("dynamodb", 5000, 800.0, requests=0),  # a ledger that never wrote
        {**_storm("dynamodb", 5000, 800.0), "batch_item_failures": 1},
    ):
        storms[2] = unsound
        verdict = _ledger_and_throttled_verdicts({"process_storms": storms})[
            "dynamodb_storm_p99_receipt_to_tainted_s"
        ]
        assert verdict["met"] is False
    unmeasured = _ledger_and_throttled_verdicts({})["dynamodb_storm_p99_receipt_to_tainted_s"]
    assert unmeasured["met"] is None


@pytest.mark.bench
def test_a_process_storm_on_the_dynamodb_ledger_taints_every_warning() -> None:
    """bench.fleet.one_cluster: each invocation a process with Powertools' ledger on
    bench.dynamodb's table; every warning tainted, every record acted on, none failed."""
    from bench import fleet

    storm = fleet.one_cluster(60, 30, concurrency=3, latency_ms=0.0, ledger="dynamodb")
    assert storm["tainted"] == storm["events"] == 30
    assert storm["outcomes"] == {"acted": 30} and storm["batch_item_failures"] == 0
    assert storm["ledger_requests"] == 60  # PutItem and UpdateItem a warning
    assert storm["invocation_ms"]["p50"] is not None


def test_the_check_exits_1_on_a_missed_ratio(monkeypatch: pytest.MonkeyPatch) -> None:
    from bench import report, runner

    summary: Summary = {"verdicts": {"replay_json_ratio": {"value": 1.6, "met": False}}}
    monkeypatch.setattr(runner, "run", lambda options: summary)
    monkeypatch.setattr(report, "table", lambda summary: "")
    assert runner.main(["--quick", "--check"]) == 1
    assert runner.main(["--quick"]) == 0


@pytest.mark.bench
def test_the_tiny_run_meets_its_checked_targets(summary: Summary) -> None:
    """The quick configuration's counts in make test: a Spot warning's 6 requests, one EMF
    document per dimension group, every throttled warning before its deadline."""
    from bench.runner import failed_checks

    assert failed_checks(summary["verdicts"]) == []


@pytest.mark.bench
def test_the_quick_run_has_every_section(quick_summary: Summary) -> None:
    """What the tiny configuration leaves out, the runner still wires in."""
    for section in ("organisation", "sweep", "hand_over", "fleet", "replay", "storms"):
        assert quick_summary.get(section), section


@pytest.mark.bench
def test_the_storm_on_moto_ec2_and_dynamodb_taints_every_node(quick_summary: Summary) -> None:
    storms = quick_summary["storms"]
    assert {(s["directory"], s["ledger"]) for s in storms} == {
        ("moto", "powertools"),
        ("static", "memory"),
        ("static", "powertools"),
        ("static", "dynamodb"),
    }
    _check_storms(storms, 100)


@pytest.mark.bench
def test_verdicts_and_memory(summary: Summary) -> None:
    verdicts = summary["verdicts"]
    assert verdicts["spot_k8s_requests_per_event"]["value"] is not None
    assert verdicts["storm_p99_receipt_to_tainted_s"]["all_events_tainted"] is True
    # One cluster size only: no marginal-cost ratio to report.
    assert verdicts["marginal_per_warning_ratio"]["value"] is None
    assert verdicts["cold_start_ratio"]["value"] is None  # not measured here
    assert summary["peak_rss_mb"] > 0


@pytest.mark.bench
@pytest.mark.parametrize("measure", ["fleet", "fleet_cold"])
def test_the_fleet_taints_every_warning_of_every_cluster(
    quick_summary: Summary, measure: str
) -> None:
    """Invocations in their own processes (restored from a snapshot, or cold) and the API
    servers in another: every warning of every cluster is tainted, each once."""
    summary = quick_summary
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


@pytest.mark.bench
def test_the_replay_measures_both_file_forms_against_the_floor(quick_summary: Summary) -> None:
    summary = quick_summary
    replayed = summary["replay"]
    assert replayed["nodes"] == 60
    assert replayed["floor_s"] == pytest.approx(
        replayed["small_replay_s"] + replayed["json_load_s"], abs=0.002
    )
    for form in ("yaml", "json"):
        assert replayed[f"{form}_replay_s"] > 0
        assert summary["verdicts"][f"replay_{form}_ratio"]["value"] == replayed[f"{form}_ratio"]


@pytest.mark.bench
def test_storms_count_one_emf_document_per_dimension_group(summary: Summary) -> None:
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


@pytest.mark.bench
def test_the_marginal_cost_counts_every_warning_at_each_size(summary: Summary) -> None:
    """bench.marginal: one measure per cluster size, each warning acted on (it raises
    otherwise) with a Spot warning's 6 requests, CPU and wall time both positive."""
    [cost] = summary["marginal"]  # the tiny configuration has one size
    options = tiny_options()
    assert cost["nodes"] == options.nodes[0] and cost["warnings"] == options.marginal_warnings
    assert cost["k8s_requests_per_warning"] == 6.0
    assert cost["cpu_ms_per_warning"] > 0 and cost["wall_ms_per_warning"] > 0
