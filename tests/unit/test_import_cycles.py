"""No import cycles among the project's modules (issue 16): module-level imports only
(``if TYPE_CHECKING:`` blocks and imports inside functions are how a cycle is avoided on
purpose); ``from package import submodule`` depends on the submodule, not on the package."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
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
    for node in ast.parse(path.read_text()).body:
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
