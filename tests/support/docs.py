"""The user documentation: README.md and the site's pages under docs/, in the order of
mkdocs.yml's navigation (a later page's commands may read what an earlier page's wrote); the
examples the pages include (docs/examples/, written by real runs: docsite/examples.py)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from tests.support.paths import ROOT

DOCS = ROOT / "docs"
MKDOCS = ROOT / "mkdocs.yml"
# A pymdownx.snippets include: the file, and a line range for an excerpt.
SNIPPET = re.compile(r'^(?P<indent> *)--8<-- "(?P<file>[^":]+)(?::(?P<start>\d+):(?P<end>\d+))?"$')


class _NavLoader(yaml.SafeLoader):
    """mkdocs.yml as data: its ``!!python/...`` tags (the toc's slugify) read as None."""


_NavLoader.add_multi_constructor("tag:yaml.org,2002:python/", lambda *_: None)


def mkdocs() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.load(MKDOCS.read_text(encoding="utf-8"), Loader=_NavLoader)
    return loaded


def _nav_pages(entries: list[Any]) -> list[str]:
    pages: list[str] = []
    for entry in entries:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        if isinstance(value, list):
            pages += _nav_pages(value)
        else:
            pages.append(f"docs/{value}")
    return pages


def nav_pages() -> list[str]:
    """Every page of the site's navigation, in its order (paths from the repository root)."""
    return _nav_pages(mkdocs()["nav"])


def page(name: str) -> str:
    """One page's text, by its path under docs/ (``commands/audit.md``)."""
    return (DOCS / name).read_text(encoding="utf-8")


def every_page() -> list[Path]:
    """README.md and every page, in the navigation's order."""
    return [ROOT / "README.md", *(ROOT / name for name in nav_pages())]


def text() -> str:
    """Every page's text, one after the other in the navigation's order."""
    return "\n".join(path.read_text(encoding="utf-8") for path in every_page())
