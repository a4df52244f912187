"""No function of the shipped code (the Lambda's layer and entry point, the local tools and
the emulator) is longer than 60 lines, from its ``def`` to its last line: past that a
reader has to hold too much at once, and a split into named steps reads better. Tests and
benchmarks are left out: a scenario read top to bottom is their point."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SHIPPED = (
    ROOT / "layers" / "lifeboat" / "lifeboat",
    ROOT / "functions",
    ROOT / "local" / "lifeboat_local",
    ROOT / "local" / "kubemu",
)
LIMIT = 60


def long_functions(source: str, limit: int = LIMIT) -> list[tuple[str, int]]:
    """The functions (methods and nested ones too) of ``source`` longer than ``limit``
    lines, with their lengths."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > limit:
                found.append((node.name, length))
    return found


def test_the_measure_sees_a_long_method_and_a_nested_function() -> None:
    body = "\n".join(f"        x{i} = {i}" for i in range(LIMIT))
    source = (
        f"class C:\n    def m(self) -> None:\n{body}\n\n\n"
        f"def outer() -> None:\n    def inner() -> None:\n{body}\n"
    )
    found = sorted(long_functions(source))
    assert found == [("inner", LIMIT + 1), ("m", LIMIT + 1), ("outer", LIMIT + 2)]


def test_a_function_of_exactly_the_limit_passes() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(LIMIT - 1))
    assert long_functions(f"def f() -> None:\n{body}\n") == []


@pytest.mark.parametrize("root", SHIPPED, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_shipped_function_is_longer_than_60_lines(root: Path) -> None:
    files = sorted(root.rglob("*.py"))
    assert files, f"{root} has no Python files: the walk looks in the wrong place"
    too_long = [
        f"{path.relative_to(ROOT)}: {name} ({length} lines)"
        for path in files
        for name, length in long_functions(path.read_text(encoding="utf-8"))
    ]
    assert too_long == [], "split these into named steps:\n" + "\n".join(too_long)
