"""No import cycles among the project's modules, at file level: every import a file makes
counts, at module level, inside functions (deferred for cold start) or under
``if TYPE_CHECKING:`` alike, so two modules that need each other are found even when one
defers its import. ``from package import submodule`` depends on the submodule, not on the
package."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = (
    ROOT / "layers/lifeboat/lifeboat",
    ROOT / "local/lifeboat_local",
    ROOT / "local/kubemu",
)


def _modules() -> dict[str, Path]:
    found = {}
    for root in PACKAGES:
        for path in root.rglob("*.py"):
            name = ".".join(path.relative_to(root.parent).with_suffix("").parts)
            found[name.removesuffix(".__init__")] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    deps: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            deps.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            submodules = {f"{source}.{a.name}" for a in node.names} & modules.keys()
            deps.update(submodules)
            if len(submodules) < len(node.names):
                deps.add(source)
    return {d for d in deps if d in modules and d != name}


def test_no_module_imports_itself_through_others() -> None:
    modules = _modules()
    assert len(modules) > 100
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    state: dict[str, int] = {}
    path: list[str] = []
    cycles: list[list[str]] = []

    def visit(name: str) -> None:
        state[name] = 1
        path.append(name)
        for dep in sorted(graph[name]):
            if state.get(dep) == 1:
                cycles.append([*path[path.index(dep) :], dep])
            elif dep not in state:
                visit(dep)
        path.pop()
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name)
    assert cycles == []


def test_a_deferred_import_that_closes_a_circle_is_seen(tmp_path: Path) -> None:
    """The guard itself: an import inside a function counts."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "a.py").write_text("from pkg import b\n")
    (package / "b.py").write_text("def f() -> None:\n    from pkg import a\n")
    modules = {"pkg.a": package / "a.py", "pkg.b": package / "b.py"}
    assert _imports("pkg.a", modules["pkg.a"], modules) == {"pkg.b"}
    assert _imports("pkg.b", modules["pkg.b"], modules) == {"pkg.a"}
