"""The coverage floor make test applies (tests/support/coverage_floor.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import coverage_floor


def _report(**files: tuple[int, int, int, int]) -> dict[str, object]:
    return {
        "files": {
            path: {
                "summary": {
                    "num_statements": lines,
                    "covered_lines": covered,
                    "num_branches": branches,
                    "covered_branches": covered_branches,
                }
            }
            for path, (lines, covered, branches, covered_branches) in files.items()
        }
    }


def test_files_are_grouped_by_the_layers_package() -> None:
    assert coverage_floor.package_of("layers/lifeboat/lifeboat/flow/act.py") == "flow"
    assert coverage_floor.package_of("/x/lifeboat/flow/sub/deep.py") == "flow"
    assert coverage_floor.package_of("layers/lifeboat/lifeboat/errors.py") == "(root)"
    assert coverage_floor.package_of("local/kubemu/server.py") is None


def test_lines_and_branches_count_together_as_coverage_py_counts_them() -> None:
    found = coverage_floor.tallies(_report(**{"lifeboat/flow/a.py": (90, 90, 10, 0)}))
    assert found["flow"].percent == pytest.approx(90.0)
    assert found["flow"].branch_percent == pytest.approx(0.0)


def test_the_layer_below_its_floor_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(coverage_floor, "PACKAGE_FLOORS", {})
    low = coverage_floor.tallies(_report(**{"lifeboat/flow/a.py": (100, 89, 0, 0)}))
    high = coverage_floor.tallies(_report(**{"lifeboat/flow/a.py": (100, 90, 0, 0)}))
    assert coverage_floor.verdict(low) == ["layer: 89.0 % < 90 %"]
    assert coverage_floor.verdict(high) == []


def test_a_package_below_its_floor_fails_even_when_the_layer_passes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(coverage_floor, "PACKAGE_FLOORS", {"flow": 95.0, "decide": 80.0})
    found = coverage_floor.tallies(
        _report(**{"lifeboat/flow/a.py": (100, 94, 0, 0), "lifeboat/model/b.py": (900, 900, 0, 0)})
    )
    assert coverage_floor.verdict(found) == ["decide: not measured", "flow: 94.0 % < 95 %"]


def test_nothing_measured_is_a_failure_not_a_pass(tmp_path: Path) -> None:
    path = tmp_path / "coverage.json"
    path.write_text(json.dumps({"files": {}}))
    assert coverage_floor.main([str(path)]) == 1
    assert coverage_floor.main([str(tmp_path / "missing.json")]) == 1


def test_every_floor_names_a_package_of_the_layer() -> None:
    layer = Path(__file__).resolve().parents[3] / "layers/lifeboat/lifeboat"
    packages = {p.name for p in layer.iterdir() if (p / "__init__.py").exists()}
    assert set(coverage_floor.PACKAGE_FLOORS) <= packages | {coverage_floor.ROOT_PACKAGE}
