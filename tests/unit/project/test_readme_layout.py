"""The layout table (docs/contributing.md) matches the tree: every path it names exists,
every module it names in a package exists there, and every top-level package directory is in
it. And the documentation holds together: the site's navigation (mkdocs.yml) lists every page
under docs/ once, the README links into the docs, each page has one title, and every relative
link between them leads to a file and heading that exist (as GitHub shows them; the site's
build checks the same with --strict)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support import docs

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = {
    "layers/lifeboat/lifeboat/": ROOT / "layers/lifeboat/lifeboat",
    "local/lifeboat_local/": ROOT / "local/lifeboat_local",
}


def _rows() -> list[tuple[str, str]]:
    text = docs.page("contributing.md")
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


_FENCE = re.compile(r"^\s*```")
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _outside_code(text: str) -> list[str]:
    """The lines of a page that are not inside a fenced code block."""
    lines, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def _anchor(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to -."""
    text = heading.lstrip("#").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def test_the_navigation_lists_every_page_once() -> None:
    listed = docs.nav_pages()
    pages = sorted(
        str(p.relative_to(ROOT))
        for p in docs.DOCS.rglob("*.md")
        if docs.DOCS / "examples" not in p.parents
    )
    assert len(listed) == len(set(listed))
    assert sorted(listed) == pages


def test_the_readme_links_into_the_docs() -> None:
    readme = (ROOT / "README.md").read_text()
    linked = {t.partition("#")[0] for t in _LINK.findall(readme) if t.startswith("docs/")}
    assert {"docs/index.md", "docs/getting-started.md", "docs/first-deploy.md"} <= linked


def test_every_page_has_one_title() -> None:
    for path in docs.every_page():
        lines = _outside_code(path.read_text())
        titles = [line for line in lines if line.startswith("# ")]
        assert lines[0].startswith("# ") and len(titles) == 1, path


def test_every_relative_link_leads_to_a_page_and_heading_that_exist() -> None:
    for path in docs.every_page():
        for target in _LINK.findall(path.read_text()):
            if "://" in target:
                continue
            file, _, anchor = target.partition("#")
            linked = (path.parent / file).resolve() if file else path
            assert linked.is_file(), (path, target)
            if anchor:
                headings = [
                    _anchor(line)
                    for line in _outside_code(linked.read_text())
                    if line.startswith("#")
                ]
                assert anchor in headings, (path, target)


def test_the_readme_is_short_and_its_demo_row_is_real() -> None:
    """At most 300 lines; the row it annotates is one `make demo` prints (the demo's example
    file, which test_docs_examples.py runs again)."""
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 300
    [row] = re.findall(r"```\n(deferred  .*)\n```", readme)
    demo = (ROOT / "docs/examples/demo.txt").read_text().splitlines()
    assert row in demo
