"""The built site, looked at in a real browser: headless Chromium (Debian's ``chromium``)
opens pages from build/site over file:// with every network host unresolvable, so a page that
needs a CDN shows it. Each page's DOM after its scripts ran must have the navigation, and its
Mermaid diagrams drawn (as many drawn diagrams as the page has, and none of their source text
left on the page); a page may also have to show an image. Screenshots are kept in
build/screenshots/ to be looked at.

    python -m docsite.browser [--site build/site] [--out build/screenshots]
"""

from __future__ import annotations

import argparse
import html
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The probe's flags for Chromium as root on these machines: no sandbox, no GPU, no background
# connections (refused by a closed network), a fresh profile. Every host name fails to
# resolve, so nothing can come from outside the site.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--virtual-time-budget=5000",
)
# A diagram's source as Mermaid reads it: its first word.
_DIAGRAM_SOURCE = re.compile(r"\b(flowchart|sequenceDiagram|stateDiagram-v2|graph)\b")
_RAW_DIAGRAM = re.compile(r'<pre class="mermaid"><code>(.*?)</code></pre>', re.S)


@dataclass(frozen=True)
class Page:
    path: str  # under the site
    image: str | None = None  # an image the page must load (its src ends so)
    height: int = 1600  # of the window, so the screenshot reaches the page's pictures


PAGES = (
    Page("index.html"),
    Page("concepts/index.html"),
    # A command page with two diagrams (the rotation's states), and the hand-over's sequence.
    Page("commands/rotate.html", height=4000),
    Page("concepts/hand-over.html", height=1800),
    # The command page with the windows chart drawn at build time (lifeboat windows --plot).
    Page("commands/windows.html", image="generated/windows.svg", height=2600),
)


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        raise SystemExit("docsite.browser: chromium not found (Debian: apt-get install chromium)")
    return found


def run_chromium(*args: str) -> str:
    with tempfile.TemporaryDirectory() as profile:
        try:
            done = subprocess.run(
                [chromium(), *FLAGS, f"--user-data-dir={profile}", *args],
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise SystemExit(f"docsite.browser: chromium did not finish in 120 s: {args}") from None
    if done.returncode != 0:
        raise SystemExit(f"docsite.browser: chromium failed: {done.stderr[-2000:]}")
    return done.stdout


def problems(page: Page, built: str, dom: str) -> list[str]:
    """What is wrong with the page as the browser left it (``built``: the file as served)."""
    found = []
    nav_links = dom.count('class="md-nav__link')
    if 'class="md-nav md-nav--primary"' not in dom or nav_links < 10:
        found.append(f"the navigation is missing ({nav_links} links)")
    expected = len(_RAW_DIAGRAM.findall(built))
    drawn = len(re.findall(r'<div class="mermaid"', dom))
    if drawn != expected:
        found.append(f"{drawn} of {expected} Mermaid diagram(s) drawn")
    left = [m for m in _RAW_DIAGRAM.findall(dom) if _DIAGRAM_SOURCE.search(m)]
    left += [m for m in re.findall(r"<pre[^>]*>(.*?)</pre>", dom, re.S) if _is_diagram(m)]
    if left:
        found.append(f"{len(left)} diagram(s) left as Mermaid text")
    if page.image and not re.search(rf'<img [^>]*src="[^"]*{re.escape(page.image)}"', dom):
        found.append(f"no image {page.image}")
    return found


def _is_diagram(text: str) -> bool:
    """Mermaid source left in a block (a diagram that failed to draw loses its class)."""
    plain = html.unescape(re.sub(r"<[^>]+>", "", text)).lstrip()
    return bool(_DIAGRAM_SOURCE.match(plain)) and ("-->" in plain or "->>" in plain)


def look(page: Page, site: Path, out: Path) -> list[str]:
    """One page opened once: its DOM after the scripts ran, and its screenshot."""
    file = site / page.path
    if not file.is_file():
        return [f"{page.path}: not built"]
    shot = out / (page.path.removesuffix(".html").replace("/", "-") + ".png")
    shot.unlink(missing_ok=True)
    dom = run_chromium(
        f"--window-size=1280,{page.height}",
        f"--screenshot={shot}",
        "--dump-dom",
        file.resolve().as_uri(),
    )
    found = problems(page, file.read_text(encoding="utf-8"), dom)
    if not shot.is_file():
        found.append("no screenshot")
    return [f"{page.path}: {problem}" for problem in found]


def check(site: Path, out: Path) -> list[str]:
    """Every page looked at, a few Chromiums at a time (each mostly waits on its own start)."""
    out.mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(max_workers=len(PAGES)) as pool:
        found = pool.map(lambda page: look(page, site, out), PAGES)
    return [problem for problems_of_page in found for problem in problems_of_page]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m docsite.browser")
    parser.add_argument("--site", type=Path, default=ROOT / "build/site")
    parser.add_argument("--out", type=Path, default=ROOT / "build/screenshots")
    args = parser.parse_args(argv)
    failures = check(args.site, args.out)
    for failure in failures:
        print(f"docsite.browser: {failure}", file=sys.stderr)
    if not failures:
        print(f"{len(PAGES)} page(s) drawn in Chromium; screenshots in {args.out}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
