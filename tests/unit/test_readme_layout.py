"""The README's layout table matches the tree: every path it names exists, every module it
names in a package exists there, and every top-level package directory is in it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {
    "layers/lifeboat/lifeboat/": ROOT / "layers/lifeboat/lifeboat",
    "local/lifeboat_local/": ROOT / "local/lifeboat_local",
}


def _rows() -> list[tuple[str, str]]:
    text = (ROOT / "README.md").read_text()
    lines = text[text.index("| path | what |") :].splitlines()
    table = []
    for line in lines:
        if not line.startswith("|"):
            break
        table.append(line)
    rows = []
    for line in table:
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 2 and cells[0].startswith("`"):
            rows.append((cells[0], cells[1]))
    return rows


def test_every_path_in_the_layout_exists() -> None:
    rows = _rows()
    assert len(rows) >= 8
    for paths, _ in rows:
        for path in re.findall(r"`([^`]+)`", paths):
            assert (ROOT / path).exists(), path


def test_every_module_named_for_a_package_exists() -> None:
    for paths, what in _rows():
        [path] = re.findall(r"`([^`]+)`", paths)[:1]
        package = PACKAGES.get(path)
        if package is None:
            continue
        for name in re.findall(r"`([a-z_]+)(?:\*)?/?`", what):
            candidates = [package / f"{name}.py", package / name]
            starred = list(package.glob(f"{name}*.py"))
            assert any(c.exists() for c in candidates) or starred, f"{path}{name}"


def test_every_package_directory_is_in_the_layout() -> None:
    named = " ".join(paths for paths, _ in _rows())
    for top in ("functions", "layers", "local", "deploy", "events", "tests", "bench"):
        assert f"`{top}/" in named, top
