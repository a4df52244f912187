"""No module of the Lambda's code reaches into another class's private members: an
attribute ``_name`` is read or called only on ``self``/``cls``, or inside the class that
defines it (a method comparing two of its own instances)."""

from __future__ import annotations

import ast
from pathlib import Path

import lifeboat

LAYER = Path(lifeboat.__file__).parent


def _own_privates(cls: ast.ClassDef) -> set[str]:
    names = set()
    for node in ast.walk(cls):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("_"):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                names.add(node.attr)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def _reaches(tree: ast.AST, privates: frozenset[str] = frozenset()) -> list[ast.Attribute]:
    found: list[ast.Attribute] = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.ClassDef):
            found += _reaches(node, privates | frozenset(_own_privates(node)))
            continue
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
            and node.attr not in privates
        ):
            found.append(node)
        found += _reaches(node, privates)
    return found


def test_no_private_member_of_another_class_is_used() -> None:
    reaches = [
        f"{path.relative_to(LAYER)}:{node.lineno}: {ast.unparse(node)}"
        for path in sorted(LAYER.rglob("*.py"))
        for node in _reaches(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert reaches == []


def test_the_guard_sees_a_reach_into_another_object() -> None:
    tree = ast.parse(
        "class A:\n    def _own(self) -> None: ...\n    def same(self, other: 'A') -> None:\n"
        "        other._own()\n"
        "class B:\n    def use(self, a: A) -> None:\n        a._own()\n"
    )
    assert [ast.unparse(n) for n in _reaches(tree)] == ["a._own"]
