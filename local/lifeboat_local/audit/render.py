"""How ``lifeboat audit`` prints: grouped by severity for people, one JSON document for tools.

The JSON document (field names are stable; new fields may be added):

    {"source": "cluster file x.yaml", "at": "2026-12-01T14:05:00Z", "status": 3,
     "summary": {"error": 2, "warning": 5, "info": 1},
     "notes": ["..."], "skipped": ["check-name"],
     "findings": [{"check": "...", "severity": "error",
                   "object": {"kind": "...", "namespace": "..." | null, "name": "..."},
                   "message": "...", "fix": "..."}]}
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TextIO

from lifeboat.model.instants import format_instant
from lifeboat_local.audit.findings import Finding, Severity


@dataclass(frozen=True)
class Report:
    source: str
    at: datetime
    findings: tuple[Finding, ...]
    status: int
    notes: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()

    def count(self, severity: Severity) -> int:
        return sum(1 for finding in self.findings if finding.severity is severity)

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "at": format_instant(self.at),
            "status": self.status,
            "summary": {severity.value: self.count(severity) for severity in Severity},
            "notes": list(self.notes),
            "skipped": list(self.skipped),
            "findings": [finding.to_json() for finding in self.findings],
        }


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def write_human(report: Report, out: TextIO) -> None:
    at = format_instant(report.at)
    out.write(f"lifeboat audit of {report.source} at {at}\n")
    for note in report.notes:
        out.write(f"  note: {note}\n")
    if report.skipped:
        out.write(f"  skipped: {', '.join(report.skipped)}\n")
    for severity in Severity:
        group: Sequence[Finding] = [f for f in report.findings if f.severity is severity]
        if not group:
            continue
        out.write(f"\n{severity.value.upper()} ({len(group)})\n")
        for finding in group:
            out.write(f"  {finding.check}  {finding.object}\n")
            out.write(f"      {finding.message}\n")
            out.write(f"      fix: {finding.fix}\n")
    counts = ", ".join(_plural(report.count(s), s.value) for s in Severity)
    out.write(f"\n{counts}: exit {report.status}\n")


def write_json(report: Report, out: TextIO) -> None:
    out.write(json.dumps(report.to_json(), indent=2) + "\n")
