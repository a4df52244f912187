"""No class of the layer carries more than :data:`MOST_METHODS` methods: a class that grows
past it holds more than one responsibility, and is split by responsibility (as the
pipeline was, issue 40.3: reading, the sweep, the notices, carrying out, the wake-ups).

Methods are counted as written in the class body (``def``, properties and class methods
included; inherited ones and nested classes not). ``EXCEPTIONS`` lists the classes allowed
more today, each with its reason and its way out; a listed class that shrank fails too, so
the list only shrinks.
"""

from __future__ import annotations

import ast
from pathlib import Path

import lifeboat

LAYER = Path(lifeboat.__file__).parent
MOST_METHODS = 10

# "module.Class": why it may carry more than MOST_METHODS methods (and what would split it).
# Empty since KubeApi (split into its transport and its verbs by API area) and Fields (the
# field access, JSON's readers, AWS's identifiers) were split: a new entry needs its reason.
EXCEPTIONS: dict[str, str] = {}


def methods_per_class(source: str) -> dict[str, int]:
    """Each class of ``source`` (nested ones by their dotted name) with its methods."""
    counts: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                name = f"{prefix}{child.name}"
                counts[name] = sum(
                    isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) for item in child.body
                )
                visit(child, f"{name}.")
            elif not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                visit(child, prefix)

    visit(ast.parse(source), "")
    return counts


def layer_classes() -> dict[str, int]:
    found: dict[str, int] = {}
    for path in sorted(LAYER.rglob("*.py")):
        module = ".".join(path.relative_to(LAYER.parent).with_suffix("").parts)
        for name, count in methods_per_class(path.read_text(encoding="utf-8")).items():
            found[f"{module}.{name}"] = count
    return found


def test_no_class_carries_more_than_ten_methods() -> None:
    big = {
        name: count
        for name, count in layer_classes().items()
        if count > MOST_METHODS and name not in EXCEPTIONS
    }
    assert big == {}, "split these by responsibility (or list one in EXCEPTIONS, with why)"


def test_every_exception_is_still_needed() -> None:
    counts = layer_classes()
    shrunk = {name for name in EXCEPTIONS if counts.get(name, 0) <= MOST_METHODS}
    assert shrunk == set(), "remove these from EXCEPTIONS: they fit now"


def test_the_count_sees_a_class_too_big() -> None:
    """The guard can fail: eleven methods are counted as eleven, nested classes apart."""
    body = "".join(f"    def m{i}(self) -> None: ...\n" for i in range(11))
    source = f"class Big:\n{body}    class Inner:\n        def one(self) -> None: ...\n"
    assert methods_per_class(source) == {"Big": 11, "Big.Inner": 1}
