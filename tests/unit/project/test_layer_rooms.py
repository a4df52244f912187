"""The layer's rooms (layers/lifeboat/lifeboat/): decide/ and karpenter/ do no I/O, directly
or through anything they import, at module level or deferred. Each package's __init__
docstring says what it may import; this test holds the two pure ones to it."""

from __future__ import annotations

import ast
from pathlib import Path

LAYER = Path(__file__).resolve().parents[3] / "layers/lifeboat/lifeboat"
PURE = ("lifeboat.decide", "lifeboat.karpenter")
FORBIDDEN = (
    "boto3",
    "botocore",
    "kubernetes",
    "urllib",
    "urllib3",
    "socket",
    "http",
    "requests",
    "lifeboat.aws",
    "lifeboat.kube.client",
    "lifeboat.kube.transport",
    "lifeboat.kube.errors",
    "lifeboat.kube.core_api",
    "lifeboat.kube.karpenter_api",
    "lifeboat.kube.bookkeeping_api",
    "lifeboat.kube.rest",
    "lifeboat.kube.eks_auth",
    "lifeboat.kube.pool_lock",
)


def _modules() -> dict[str, Path]:
    found = {}
    for path in LAYER.rglob("*.py"):
        name = ".".join(path.relative_to(LAYER.parent).with_suffix("").parts)
        found[name.removesuffix(".__init__")] = path
    return found


def _imports(name: str, path: Path) -> set[str]:
    """Every module ``path`` imports, anywhere in the file (``from a import b`` names both
    ``a`` and ``a.b``: the submodule when it is one)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            found.add(source)
            found.update(f"{source}.{alias.name}" for alias in node.names)
    return found


def _forbidden(imported: str) -> bool:
    return any(imported == f or imported.startswith(f + ".") for f in FORBIDDEN)


def violations(modules: dict[str, Path]) -> list[str]:
    """(pure module, chain of imports to something forbidden) for each pure module."""
    graph = {name: _imports(name, path) for name, path in modules.items()}
    found = []
    for start in sorted(m for m in modules if m.startswith(PURE)):
        seen = {start}
        queue = [(start, [start])]
        while queue:
            name, chain = queue.pop(0)
            for imported in sorted(graph[name]):
                if _forbidden(imported):
                    found.append(" -> ".join([*chain, imported]))
                elif imported in modules and imported not in seen:
                    seen.add(imported)
                    queue.append((imported, [*chain, imported]))
    return found


def test_decide_and_karpenter_import_no_io() -> None:
    modules = _modules()
    assert any(m.startswith("lifeboat.karpenter.") for m in modules)
    assert any(m.startswith("lifeboat.decide.") for m in modules)
    assert violations(modules) == []


def test_a_forbidden_import_is_found_even_through_another_module(tmp_path: Path) -> None:
    """The guard itself: karpenter/a imports kube/pure, which imports kube/client."""
    for relative, text in {
        "lifeboat/karpenter/a.py": "from lifeboat.kube import pure\n",
        "lifeboat/kube/pure.py": "def f() -> None:\n    from lifeboat.kube import client\n",
        "lifeboat/kube/client.py": "import urllib3\n",
    }.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    modules = {
        "lifeboat.karpenter.a": tmp_path / "lifeboat/karpenter/a.py",
        "lifeboat.kube.pure": tmp_path / "lifeboat/kube/pure.py",
        "lifeboat.kube.client": tmp_path / "lifeboat/kube/client.py",
    }
    assert violations(modules) == [
        "lifeboat.karpenter.a -> lifeboat.kube.pure -> lifeboat.kube.client"
    ]
