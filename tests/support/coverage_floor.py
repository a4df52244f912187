"""The layer's branch coverage per package, held to a floor (``make test``).

``make test`` runs pytest with coverage.py measuring ``lifeboat`` (the Lambda layer) with
branches, writes ``coverage.json`` and then runs this module, which prints one row per
package and exits 1 when the layer as a whole, or any package, falls below its floor.
The percentage is coverage.py's own with ``branch = true``: covered lines and branches over
all lines and branches.

    python -m tests.support.coverage_floor coverage.json
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LAYER_FLOOR = 90.0
ROOT_PACKAGE = "(root)"
# Each package's floor: a few points under what it measured when the floor was set, so a
# test that stops running (or code added untested) fails here.
PACKAGE_FLOORS: Mapping[str, float] = {
    ROOT_PACKAGE: 95,
    "aws": 92,
    "decide": 91,
    "events": 93,
    "flow": 91,
    "karpenter": 91,
    "kube": 93,
    "marks": 92,
    "model": 94,
    "rotation": 88,
    "runtime": 87,
    "telemetry": 85,
    "wakeup": 91,
}


@dataclass
class Tally:
    lines: int = 0
    covered_lines: int = 0
    branches: int = 0
    covered_branches: int = 0

    def add(self, summary: Mapping[str, Any]) -> None:
        self.lines += int(summary.get("num_statements", 0))
        self.covered_lines += int(summary.get("covered_lines", 0))
        self.branches += int(summary.get("num_branches", 0))
        self.covered_branches += int(summary.get("covered_branches", 0))

    @property
    def percent(self) -> float:
        total = self.lines + self.branches
        return 100.0 if total == 0 else 100.0 * (self.covered_lines + self.covered_branches) / total

    @property
    def branch_percent(self) -> float:
        return 100.0 if self.branches == 0 else 100.0 * self.covered_branches / self.branches


def package_of(path: str) -> str | None:
    """``.../lifeboat/flow/act.py`` -> ``flow``; a module at the layer's root -> (root)."""
    parts = Path(path).parts
    if "lifeboat" not in parts:
        return None
    index = len(parts) - 1 - parts[::-1].index("lifeboat")
    rest = parts[index + 1 :]
    return ROOT_PACKAGE if len(rest) == 1 else rest[0]


def tallies(report: Mapping[str, Any]) -> dict[str, Tally]:
    found: dict[str, Tally] = {}
    for path, data in report.get("files", {}).items():
        package = package_of(path)
        if package is not None:
            found.setdefault(package, Tally()).add(data["summary"])
    return found


def verdict(found: Mapping[str, Tally]) -> list[str]:
    """What falls below its floor (empty: all is well)."""
    layer = Tally()
    for tally in found.values():
        layer.lines += tally.lines
        layer.covered_lines += tally.covered_lines
        layer.branches += tally.branches
        layer.covered_branches += tally.covered_branches
    problems = []
    if not found:
        problems.append("no file of the layer was measured")
    elif layer.percent < LAYER_FLOOR:
        problems.append(f"layer: {layer.percent:.1f} % < {LAYER_FLOOR:.0f} %")
    for package, floor in sorted(PACKAGE_FLOORS.items()):
        measured = found.get(package)
        if measured is None:
            problems.append(f"{package}: not measured")
        elif measured.percent < floor:
            problems.append(f"{package}: {measured.percent:.1f} % < {floor:.0f} %")
    return problems


def table(found: Mapping[str, Tally]) -> str:
    rows = ["package        lines+branches  branches  floor"]
    for package, tally in sorted(found.items()):
        floor = PACKAGE_FLOORS.get(package)
        rows.append(
            f"{package:<14} {tally.percent:>13.1f} % {tally.branch_percent:>7.1f} %"
            f"  {'' if floor is None else f'{floor:.0f} %'}"
        )
    return "\n".join(rows)


def main(argv: list[str]) -> int:
    path = Path(argv[0] if argv else "coverage.json")
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        print(f"coverage floor: cannot read {path}: {error}", file=sys.stderr)
        return 1
    found = tallies(report)
    print(table(found))
    problems = verdict(found)
    for problem in problems:
        print(f"coverage below its floor: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
