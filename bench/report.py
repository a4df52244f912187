"""The summary as readable tables."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(c) for c in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = []
    for n, row in enumerate(cells):
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _pairs(mapping: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in mapping.items()) or "-"


def table(summary: dict[str, Any]) -> str:
    out: list[str] = []
    sweeps = summary.get("sweep", [])
    if sweeps:
        out.append("Instance status sweep (DescribeInstanceStatus, Karpenter's three filter sets)")
        out.append(
            _table(
                [
                    "instances",
                    "clusters",
                    "in trouble",
                    "DescribeInstanceStatus",
                    "DescribeInstances",
                    "node LISTs",
                    "notices",
                    "to clusters",
                    "acted in its message",
                    "handed on (sweep parts)",
                    "ms (EC2 and node LIST calls at 50 ms)",
                    "ms Lifeboat",
                ],
                [
                    [
                        r["instances"],
                        r["clusters"],
                        r["in_trouble"],
                        r["describe_instance_status_calls"],
                        r["describe_instances_calls"],
                        r.get("node_list_calls", "-"),
                        r["notices"],
                        r["to_clusters"],
                        r.get("acted_in_message", "-"),
                        f"{r['handed_on']} ({r['sweep_parts']})" if "handed_on" in r else "-",
                        r["sweep_ms"],
                        r["lifeboat_ms"],
                    ]
                    for r in sweeps
                ],
            )
        )
        out.append("")
    per_kind = summary.get("per_kind", {})
    if per_kind:
        out.append("Kubernetes requests per event (emulator counts, reset between kinds)")
        out.append(
            _table(
                ["kind", "events", "req/event", "by verb", "outcomes"],
                [
                    [
                        kind,
                        r["events"],
                        r["k8s_requests_per_event"],
                        _pairs(r["k8s_by_verb_per_event"]),
                        _pairs(r["outcomes"]),
                    ]
                    for kind, r in per_kind.items()
                ],
            )
        )
        out.append("")
        out.append("Kubernetes requests per event by verb and resource")
        out.append(
            _table(
                ["kind", "by verb and resource"],
                [[k, _pairs(r["k8s_by_resource_per_event"])] for k, r in per_kind.items()],
            )
        )
        out.append("")
        out.append("AWS API calls per SQS batch of 10 (botocore before-call hooks)")
        out.append(
            _table(
                ["kind", "total", "by operation"],
                [
                    [k, r["aws_calls_per_batch_total"], _pairs(r["aws_calls_per_batch"])]
                    for k, r in per_kind.items()
                ],
            )
        )
        out.append("")
    storms = summary.get("storms", [])
    if storms:
        out.append("Spot storm (SQS batches of 10, concurrent invocations)")
        out.append(
            _table(
                [
                    "nodes",
                    "directory",
                    "ledger",
                    "events",
                    "waves",
                    "tainted",
                    "ev/s",
                    "ms/event",
                    "req/ev",
                    "p50 rcpt->taint",
                    "p99 rcpt->taint",
                    "max start->taint",
                    "p50 invoc.",
                ],
                [
                    [
                        s["nodes"],
                        s["directory"],
                        s["ledger"],
                        s["events"],
                        s["waves"],
                        s["tainted_and_cordoned"],
                        s["events_per_second"],
                        s["per_event_ms"],
                        s["k8s_requests_per_event"],
                        f"{s['receipt_to_tainted_ms']['p50']} ms",
                        f"{s['receipt_to_tainted_ms']['p99']} ms",
                        f"{s['storm_start_to_tainted_ms']['max']} ms",
                        f"{s['invocation_ms']['p50']} ms",
                    ]
                    for s in storms
                ],
            )
        )
        out.append("")
    out.extend(_process_storms(summary.get("process_storms") or []))
    out.extend(_throttled(summary.get("throttled_storm")))
    cold = summary.get("cold_start")
    if cold:
        out.append(
            f"Cold start (python {cold['python']}, {cold['runs']} alternating pairs of fresh "
            f"interpreters): function import + build {cold['function_ms']} ms, floor "
            f"(boto3 + EC2 and DynamoDB clients) {cold['floor_ms']} ms, median ratio "
            f"{cold['ratio']} (CPU: {cold['function_cpu_ms']} / {cold['floor_cpu_ms']} ms, "
            f"ratio {cold['cpu_ratio']}); network calls at start: "
            f"{cold['network_calls_at_start'] or 'none'}; deferred modules loaded: "
            f"{cold['deferred_modules_loaded'] or 'none'}"
        )
        out.append(
            f"  process after start: {cold.get('maxrss_mb')} MB RSS; import self time by "
            "package: "
            + _pairs({i["module"]: f"{i['ms']} ms" for i in cold["slowest_imports"][:6]})
        )
        first = cold.get("first_spot_message")
        if first:
            out.append(
                f"  first Spot warning after start {first['first_ms']} ms (CPU "
                f"{first['first_cpu_ms']} ms), second {first['second_ms']} ms (CPU "
                f"{first['second_cpu_ms']} ms): one-time {first['extra_ms']} ms (CPU "
                f"{first['extra_cpu_ms']} ms); modules the first loaded: "
                f"{', '.join(first['loaded_by_first']) or 'none'}"
            )
    replayed = summary.get("replay")
    if replayed:
        out.append(
            f"Replay of one Spot warning, {replayed['nodes']}-node cluster file "
            f"({replayed['file_mb']['yaml']} MB YAML, {replayed['file_mb']['json']} MB JSON): "
            f"YAML {replayed['yaml_replay_s']} s, JSON {replayed['json_replay_s']} s; floor "
            f"(10-node replay {replayed['small_replay_s']} s + json.load "
            f"{replayed['json_load_s']} s) {replayed['floor_s']} s: ratios YAML "
            f"{replayed['yaml_ratio']}, JSON {replayed['json_ratio']}"
        )
        if "yaml_aliased_ratio" in replayed:
            out.append(
                f"  the same YAML as PyYAML dumps shared values (anchors and aliases, which no "
                f"exporter writes; information): {replayed['yaml_aliased_replay_s']} s, "
                f"ratio {replayed['yaml_aliased_ratio']}"
            )
        if "yaml_cpu_ratio" in replayed:
            out.append(
                f"  in CPU time (information: less sensitive to the machine's load): floor "
                f"{replayed['cpu_floor_s']} s, ratios YAML {replayed['yaml_cpu_ratio']}, JSON "
                f"{replayed['json_cpu_ratio']}, aliased YAML {replayed['yaml_aliased_cpu_ratio']}"
            )
    costs = summary.get("marginal") or []
    if costs:
        out.append(
            "Marginal cost per Spot warning (one batch of 10 after another, CPU of Lifeboat and "
            "the emulator): "
            + ", ".join(
                f"{m['nodes']} nodes {m['cpu_ms_per_warning']} ms CPU "
                f"({m['wall_ms_per_warning']} ms wall, {m['k8s_requests_per_warning']} requests)"
                for m in costs
            )
        )
    for many in (summary.get("fleet"), summary.get("fleet_cold")):
        if not many:
            continue
        latency = many["receipt_to_tainted_ms"]
        out.append(
            f"Fleet: {many['clusters']} clusters x {many['warnings_per_cluster']} Spot warnings, "
            f"{many['concurrency']} invocations ({many['environments']}), "
            f"{many['latency_ms']} ms per request: "
            f"{many['tainted']}/{many['events']} tainted in {many['wall_seconds']} s; receipt -> "
            f"tainted p50 {latency['p50']} ms, p99 {latency['p99']} ms; slowest warning per "
            f"cluster between {many['best_cluster_max_ms']} and {many['worst_cluster_max_ms']} "
            f"ms; clusters fully tainted {many['clusters_fully_tainted']}/{many['clusters']}"
        )
    for size in (summary.get("organisation") or {}).get("sizes", []):
        many, memory, steady = size["storm"], size["memory"], size["steady_state"]
        latency = many["receipt_to_tainted_ms"]
        calls = many["discovery_calls"] or {}
        out.append(
            f"Organisation: {many['clusters']} clusters found by their tag x "
            f"{many['warnings_per_cluster']} Spot warnings, {many['concurrency']} invocations, "
            f"{many['latency_ms']} ms per request: {many['tainted']}/{many['events']} tainted "
            f"in {many['wall_seconds']} s; receipt -> tainted p50 {latency['p50']} ms, p99 "
            f"{latency['p99']} ms; discovery at the snapshot {calls.get('snapshot_describes')} "
            f"DescribeCluster / {calls.get('snapshot_list_pages')} ListClusters pages (all "
            f"environments), during the storm {calls.get('storm_describes')} / "
            f"{calls.get('storm_list_pages')}; {memory['bytes_per_client']} bytes per cached "
            f"cluster client; steady state ({steady['warnings_per_minute']} warnings a minute, "
            f"TTL {steady['ttl_seconds']:g} s, {steady['environments']} environments): "
            f"{steady['describes_per_minute']} DescribeCluster and "
            f"{steady['list_pages_per_minute']} ListClusters pages a minute"
        )
    growth = (summary.get("organisation") or {}).get("growth")
    if growth:
        out.append(f"Organisation growth, largest size vs smallest: {_pairs(growth)}")
    if storms:
        emf = ", ".join(
            f"{s['nodes']} nodes: {s['emf_documents_per_batch']} per batch for "
            f"{s['emf_dimension_groups_per_batch']} dimension groups"
            for s in storms
            if s["directory"] == "static" and s["ledger"] == "memory"
        )
        out.append(f"EMF documents (storm batches of 10 across pools): {emf}")
    for first, runs in (summary.get("hand_over") or {}).items():
        out.append(
            f"Hand-over with Karpenter's drift ({first}, simulated): "
            + "; ".join(
                f"{mode}: {r['pod_pending_seconds_per_replacement']} pod-Pending-s per "
                f"replacement, peak disrupting {r['peak_disrupting_lifeboat_count']} "
                f"(Karpenter's count {r['peak_disrupting_karpenter_count']}) vs budget "
                f"{r['budget']}"
                for mode, r in runs.items()
            )
        )
    lay = summary.get("layer")
    if lay:
        out.append(f"Layer: {lay.get('unpacked_mb', '?')} MB unpacked ({lay['source']})")
    out.append(
        f"Peak RSS of the bench process (emulator store and moto included): "
        f"{summary.get('peak_rss_mb')} MB"
    )
    load = summary.get("load_average", {})
    out.append(
        f"Load average (1/5/15 min) at start {load.get('start')}, at end {load.get('end')} "
        f"on {summary.get('cpus')} CPUs: timings are only meaningful on a quiet machine"
    )
    out.append("")
    out.append("Targets")
    rows = []
    for name, v in summary.get("verdicts", {}).items():
        met = {True: "met", False: "MISSED", None: "not measured"}[v["met"]]
        limit = f"{'>=' if v.get('at_least') else '<='} {v['target']}"
        rows.append([name, v["value"], limit, met, "checked" if v.get("checked") else "info"])
    out.append(_table(["target", "measured", "limit", "", "--check"], rows))
    return "\n".join(out)


def _process_storms(storms: list[dict[str, Any]]) -> list[str]:
    """bench.fleet.one_cluster: the burst storm with each invocation a process."""
    if not storms:
        return []
    rows = [
        [
            s["nodes"],
            s["ledger"],
            s["events"],
            s["tainted"],
            s["batch_item_failures"],
            f"{s['receipt_to_tainted_ms']['p50']} ms",
            f"{s['receipt_to_tainted_ms']['p99']} ms",
            f"{s['receipt_to_tainted_ms']['max']} ms",
            f"{s['storm_start_to_tainted_ms']['max']} ms",
            f"{s['invocation_ms']['p50']} ms",
            s["ledger_requests"],
            f"{s['wall_seconds']} s",
        ]
        for s in storms
    ]
    header = [
        "nodes",
        "ledger",
        "events",
        "tainted",
        "failures",
        "p50 rcpt->taint",
        "p99 rcpt->taint",
        "max rcpt->taint",
        "max start->taint",
        "p50 invoc.",
        "ledger req.",
        "wall",
    ]
    return [
        "Spot storm, each invocation a process (SnapStart-restored environments, "
        "receipt -> tainted)",
        _table(header, rows),
        "",
    ]


def _throttled(storm: dict[str, Any] | None) -> list[str]:
    """bench.frictions' storm: the warnings over a minute on a throttled account."""
    if not storm:
        return []
    receipt, arrival = storm["receipt_to_tainted_ms"], storm["arrival_to_tainted_ms"]
    return [
        f"Throttled storm: {storm['events']} Spot warnings over {storm['spread_seconds']} s, "
        f"{storm['nodes']} nodes, {storm['directory']} directory, {storm['ledger']} ledger",
        f"  tainted {storm['tainted_and_cordoned']}/{storm['events']}; before the deadline "
        f"{storm['tainted_before_deadline_share']:.1%}, at least 30 s before "
        f"{storm['tainted_30s_before_deadline_share']:.1%}",
        f"  receipt -> tainted p50 {receipt['p50']} ms, p99 {receipt['p99']} ms, max "
        f"{receipt['max']} ms; arrival -> tainted p99 {arrival['p99']} ms",
        f"  EC2 DescribeInstances {storm['ec2_describe_calls']} calls, "
        f"{storm['ec2_throttled']} RequestLimitExceeded ({storm['ec2_throttled_share']}); "
        f"Kubernetes 429s {storm['k8s_429_answers']} of {storm['k8s_requests']} requests; "
        f"batch item failures {storm['batch_item_failures']}, redeliveries asked "
        f"{storm['redeliveries_asked']}",
        "",
    ]
