"""The layer's package rules, as written in ``lifeboat/__init__.py``: packages are ordered
from the bottom (``errors``, ``model``) to the top (``runtime``), and a module may import
only from its own package or a package below it, so no arrow runs up and the tree reads as
the design. The arrows that still run up are listed in ``STILL_UP`` with what removes them;
this test fails on any other, and on a listed one that is gone (so the list only shrinks).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import lifeboat

LAYER = Path(__file__).resolve().parents[3] / "layers/lifeboat/lifeboat"

# (importing module, imported package): arrows that run up today, each with its way out.
STILL_UP: dict[tuple[str, str], str] = {
    ("lifeboat.model.report", "decide"): "decision_report belongs with the flow",
    ("lifeboat.model.report", "events"): "the Notice model belongs in model/",
    ("lifeboat.model.settings", "events"): "the Notice model belongs in model/",
    ("lifeboat.model.settings", "marks"): "the hand-over modes belong in settings",
    ("lifeboat.model.target", "kube"): "Obj belongs in model/",
    ("lifeboat.kube.pdbs", "karpenter"): "the PDB rule Karpenter applies belongs in karpenter/",
    ("lifeboat.rotation.look", "flow"): "the rotation should receive the actor",
    ("lifeboat.rotation.runner", "flow"): "foreign_origin belongs below the flow",
}


def order() -> list[str]:
    """The packages, bottom first, from the line ``Order (bottom first): a, b, ...`` of the
    layer's docstring."""
    match = re.search(
        r"Order \(bottom first\):\s*([^\n]+(?:\n[ \t]*[a-z(][^\n]*)*)", lifeboat.__doc__ or ""
    )
    assert match, "lifeboat/__init__.py no longer states the order of its packages"
    return [name.strip(" .") for name in re.split(r"[,\n]", match.group(1)) if name.strip(" .")]


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "(root)"


def up_arrows() -> dict[tuple[str, str], int]:
    """(module, package it imports from above its own), with the line."""
    rank = {name: i for i, name in enumerate(order())}
    found: dict[tuple[str, str], int] = {}
    for path in sorted(LAYER.rglob("*.py")):
        module = ".".join(path.relative_to(LAYER.parent).with_suffix("").parts)
        module = module.removesuffix(".__init__")
        own = _package(module) if path.parent != LAYER else "(root)"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or not node.module:
                continue
            if node.module == "lifeboat":
                targets = [f"lifeboat.{alias.name}" for alias in node.names]
            elif node.module.startswith("lifeboat."):
                targets = [node.module]
            else:
                continue
            for target in targets:
                package = _package(target)
                if package in ("errors", own) or own == "(root)":
                    continue
                if rank[package] > rank[own]:
                    found.setdefault((module, package), node.lineno)
    return found


def test_the_order_names_every_package_of_the_layer_once() -> None:
    packages = {p.name for p in LAYER.iterdir() if (p / "__init__.py").exists()}
    assert sorted(order()) == sorted(packages | {"errors"})


def test_no_arrow_runs_up_but_those_listed() -> None:
    new = {arrow: line for arrow, line in up_arrows().items() if arrow not in STILL_UP}
    assert new == {}, "imports from a package above (move the code, or pass it in)"


def test_every_listed_arrow_still_exists() -> None:
    gone = set(STILL_UP) - set(up_arrows())
    assert gone == set(), "remove these from STILL_UP: they no longer run up"


def test_each_package_says_what_it_may_import() -> None:
    for name in order():
        if name == "errors":
            continue
        doc = (LAYER / name / "__init__.py").read_text(encoding="utf-8")
        assert "May import" in doc or "may import" in doc, name
