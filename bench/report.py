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
    cold = summary.get("cold_start")
    if cold:
        out.append(
            f"Cold start (python {cold['python']}, median of {cold['runs']} fresh interpreters, "
            f"interpreter start {cold['interpreter_start_ms']} ms not included): "
            f"import {cold['import_ms']} ms, import + build_service "
            f"{cold['import_and_build_ms']} ms (CPU time: import {cold['import_cpu_ms']} ms, "
            f"import + build {cold['import_and_build_cpu_ms']} ms); network calls at build: "
            f"{cold['network_calls_at_build'] or 'none'}"
        )
        out.append(
            f"  process after import + build: {cold.get('maxrss_after_build_mb')} MB RSS; "
            "import self time by package: "
            + _pairs({i["module"]: f"{i['ms']} ms" for i in cold["slowest_imports"][:6]})
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
        rows.append([name, v["value"], f"<= {v['target']}", met])
    out.append(_table(["target", "measured", "limit", ""], rows))
    return "\n".join(out)
