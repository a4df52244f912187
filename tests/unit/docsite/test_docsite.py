"""The docs site's own checks can fail: a broken link or anchor and an asset from another site
(docsite.links), a diagram left as Mermaid text or a missing navigation (docsite.browser's
reading of the DOM Chromium leaves), a Mermaid tarball that is not the pinned one
(docsite.mermaid). The real site is built and opened by ``make docs-check``."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from docsite import browser, links, mermaid

NAV = '<nav class="md-nav md-nav--primary">' + '<a class="md-nav__link">x</a>' * 12 + "</nav>"


def _site(tmp_path: Path, pages: dict[str, str]) -> Path:
    for name, html in pages.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(html)
    return tmp_path


def test_links_that_lead_nowhere_and_assets_from_elsewhere_are_named(tmp_path: Path) -> None:
    site = _site(
        tmp_path,
        {
            "index.html": '<a href="a/b.html#there">ok</a><a href="a/b.html#gone">no</a>'
            '<a href="missing.html">no</a><a href="https://example.com/">elsewhere</a>'
            '<script src="https://cdn.example.com/x.js"></script><img src="/img.svg">',
            "a/b.html": '<h2 id="there">t</h2><a href="../index.html">up</a><a href="#">top</a>',
            "img.svg": "<svg/>",
        },
    )
    links.parse.cache_clear()
    assert links.check(site) == [
        "index.html: https://cdn.example.com/x.js: loaded from another site (the site must "
        "render offline)",
        "index.html: a/b.html#gone: no such anchor",
        "index.html: missing.html: no such file",
    ]


def test_a_page_whose_diagrams_were_drawn_passes() -> None:
    built = '<pre class="mermaid"><code>flowchart TD\n a --&gt; b</code></pre>'
    dom = NAV + '<div class="mermaid"></div>'
    assert browser.problems(browser.Page("p.html"), built, dom) == []


def test_a_diagram_left_as_text_and_a_missing_navigation_are_named() -> None:
    built = '<pre class="mermaid"><code>flowchart TD\n a --&gt; b</code></pre>'
    # Material drops the class before drawing: a diagram that failed stays a plain block.
    dom = "<pre><code>flowchart TD\n a --&gt; b</code></pre>"
    assert browser.problems(browser.Page("p.html", image="x.svg"), built, dom) == [
        "the navigation is missing (0 links)",
        "0 of 1 Mermaid diagram(s) drawn",
        "1 diagram(s) left as Mermaid text",
        "no image x.svg",
    ]


def test_a_tarball_that_is_not_the_pinned_mermaid_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    forged = tmp_path / "mermaid.tgz"
    with tarfile.open(forged, "w:gz") as archive:
        body = b"window.mermaid = {};"
        info = tarfile.TarInfo("package/dist/mermaid.min.js")
        info.size = len(body)
        archive.addfile(info, io.BytesIO(body))
    target = tmp_path / "out" / "mermaid.min.js"
    monkeypatch.setattr(mermaid, "TARGET", target)
    monkeypatch.setattr(mermaid, "STAMP", target.with_name("mermaid.version"))
    monkeypatch.setattr(mermaid, "pack", lambda folder: forged)
    with pytest.raises(mermaid.FetchError, match=r"integrity sha512-.*, expected sha512-YdPX"):
        mermaid.fetch()
    assert not target.exists()
