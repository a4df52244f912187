"""``make mutants`` reports a survivor stated equivalent (``mutation.EQUIVALENTS``) as
equivalent, not survived: found by its module, operator and source line's text, so the
statement follows the line when code above it moves, and lapses when the line changes."""

from __future__ import annotations

from pathlib import Path

from cosmic_ray.work_item import MutationSpec

from mutation.__main__ import EQUIVALENTS, TARGETS, Equivalent, stated_equivalent
from tests.support.paths import ROOT

MODULE = "pkg/mod.py"
STATED = Equivalent(MODULE, "core/ReplaceComparisonOperator_Eq_Is", "if mode == 1:", "why", "==")


def _tree(tmp_path: Path, text: str) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / MODULE).write_text(text, encoding="utf-8")
    return tmp_path


def _mutant(row: int, col: int, operator: str = STATED.operator) -> MutationSpec:
    return MutationSpec(MODULE, operator, 0, (row, col), (row, col + 2))


def test_a_stated_mutant_is_found_by_its_line_wherever_the_line_moved(tmp_path: Path) -> None:
    tree = _tree(tmp_path, "x = 1\n\n\n    if mode == 1:\n")
    assert stated_equivalent(_mutant(4, 12), tree, (STATED,)) == STATED


def test_another_operator_another_span_or_a_changed_line_is_not_stated(tmp_path: Path) -> None:
    tree = _tree(tmp_path, "if mode == 1:\nif mode == 2:\n")
    assert stated_equivalent(_mutant(1, 8, "core/AddNot"), tree, (STATED,)) is None
    assert stated_equivalent(_mutant(1, 3), tree, (STATED,)) is None  # "mo", not "=="
    assert stated_equivalent(_mutant(2, 8), tree, (STATED,)) is None


def test_every_stated_equivalent_names_a_line_of_a_target_module() -> None:
    """A statement whose line is gone (the code changed) must be looked at again."""
    modules = {m for t in TARGETS.values() for m in t.modules}
    for e in EQUIVALENTS:
        owner = next(m for m in modules if e.module == m or e.module.startswith(f"{m}/"))
        assert owner and e.reason
        lines = {line.strip() for line in (ROOT / e.module).read_text().splitlines()}
        assert e.line in lines, e
