"""Every internal link of the built site leads somewhere, and nothing is loaded from
elsewhere: each ``href`` and ``src`` of every
page that is not another site's resolves to a file of the site, and its ``#fragment`` to an
``id`` on that page. MkDocs' own validation (mkdocs.yml ``validation``, fatal with --strict)
checks the Markdown's links; this checks what was built from them, the navigation, the theme's
assets and the included images too. A script, style sheet, image or frame with another
site's address (a CDN) is an error: the site must render offline.

    python -m docsite.links [build/site]
"""

from __future__ import annotations

import sys
from functools import cache
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

ROOT = Path(__file__).resolve().parents[1]


class _Page(HTMLParser):
    """A page's link targets and element ids."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.targets: list[str] = []
        self.ids: set[str] = set()
        self.outside: list[str] = []  # scripts, styles and images loaded from another site

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name in ("id", "name"):
                self.ids.add(value)
            elif name in ("href", "src"):
                loads = (tag in ("script", "img", "link", "iframe") and name == "src") or (
                    tag == "link" and name == "href"
                )
                if loads and urlsplit(value).netloc:
                    self.outside.append(value)
                elif not (tag == "link" and urlsplit(value).netloc):
                    self.targets.append(value)


@cache
def parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def broken(site: Path, page: Path) -> list[str]:
    """The links of one page that lead nowhere."""
    found = [
        f"{page.relative_to(site)}: {url}: loaded from another site (the site must render offline)"
        for url in parse(page).outside
    ]
    for target in parse(page).targets:
        parts = urlsplit(target)
        if parts.scheme or parts.netloc or target.startswith(("mailto:", "javascript:")):
            continue  # another site's: not this check's business (the browser check blocks them)
        # A path from the site's root (the 404 page's, served from any depth) or the page's.
        base = site if parts.path.startswith("/") else page.parent
        path = unquote(parts.path).lstrip("/")
        file = (base / path).resolve() if parts.path else page.resolve()
        if file.is_dir():
            file = file / "index.html"
        if not file.is_file() or site.resolve() not in file.parents:
            found.append(f"{page.relative_to(site)}: {target}: no such file")
        elif parts.fragment and file.suffix == ".html" and parts.fragment not in parse(file).ids:
            found.append(f"{page.relative_to(site)}: {target}: no such anchor")
    return found


def check(site: Path) -> list[str]:
    pages = sorted(site.rglob("*.html"))
    if not pages:
        return [f"{site}: no pages (build the site first: make docs)"]
    return [problem for page in pages for problem in broken(site, page)]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    site = Path(args[0]) if args else ROOT / "build/site"
    problems = check(site)
    for problem in problems:
        print(f"docsite.links: {problem}", file=sys.stderr)
    if not problems:
        print(f"every internal link of {len(list(site.rglob('*.html')))} page(s) leads somewhere")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
