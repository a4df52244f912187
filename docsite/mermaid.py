"""Mermaid for the site, from the npm registry's ``mermaid`` package, pinned and
integrity-checked, served with the site (MkDocs Material would otherwise load it from a CDN).

``npm pack`` downloads the package's tarball; its SHA-512 must be the one pinned here (the
``integrity`` the registry publishes for that version), or nothing is written. Only
``dist/mermaid.min.js`` (a classic script defining the global ``mermaid``) and the licence are
kept, under docs/assets/javascripts/ (gitignored: build output). Run again, it does nothing
while the copy on disk is the pinned one.

    python -m docsite.mermaid
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

VERSION = "11.9.0"
# `npm view mermaid@11.9.0 dist.integrity`
INTEGRITY = (
    "sha512-"
    "YdPXn9slEwO0omQfQIsW6vS84weVQftIyyTGAZCwM//MGhPzL1+l6vO6bkf0wnP4tHigH1alZ5Ooy3HXI2gOag=="
)
ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "docs/assets/javascripts/mermaid.min.js"
MEMBERS = {
    "package/dist/mermaid.min.js": TARGET,
    "package/LICENSE": TARGET.with_name("mermaid.LICENSE"),
}
STAMP = TARGET.with_name("mermaid.version")


class FetchError(Exception):
    """Mermaid could not be fetched or was not the pinned package."""


def integrity_of(tarball: Path) -> str:
    """The tarball's Subresource Integrity string, as npm's registry publishes it."""
    digest = hashlib.sha512(tarball.read_bytes()).digest()
    return "sha512-" + base64.b64encode(digest).decode()


def pack(folder: Path) -> Path:
    """The package's tarball, downloaded by ``npm pack`` into ``folder``."""
    if shutil.which("npm") is None:
        raise FetchError("npm not found: install Node.js and npm (Debian: apt-get install npm)")
    run = subprocess.run(
        ["npm", "pack", f"mermaid@{VERSION}", "--json", "--pack-destination", str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    if run.returncode != 0:
        raise FetchError(f"npm pack mermaid@{VERSION} failed: {run.stderr.strip()}")
    [packed] = json.loads(run.stdout)
    return folder / str(packed["filename"])


def extract(tarball: Path) -> None:
    """The members kept, written where the site serves them."""
    with tarfile.open(tarball) as archive:
        for member, target in MEMBERS.items():
            source = archive.extractfile(member)
            if source is None:
                raise FetchError(f"{tarball.name}: {member} is missing")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read())


def stamp() -> str:
    """What the stamp file holds for the copy on disk: the pinned package's integrity and the
    script's own digest (a copy edited by hand, or half written, is fetched again)."""
    digest = hashlib.sha256(TARGET.read_bytes()).hexdigest() if TARGET.is_file() else "-"
    return f"{INTEGRITY} {digest}\n"


def fetch() -> bool:
    """Fetch the pinned Mermaid unless it is already there; True when it was fetched."""
    if STAMP.is_file() and TARGET.is_file() and STAMP.read_text() == stamp():
        return False
    with tempfile.TemporaryDirectory() as folder:
        tarball = pack(Path(folder))
        found = integrity_of(tarball)
        if found != INTEGRITY:
            raise FetchError(f"mermaid@{VERSION}: integrity {found}, expected {INTEGRITY}")
        extract(tarball)
    STAMP.write_text(stamp())
    return True


def main() -> int:
    try:
        fetched = fetch()
    except FetchError as error:
        print(f"docsite.mermaid: error: {error}", file=sys.stderr)
        return 1
    if fetched:
        print(f"fetched mermaid {VERSION} into {TARGET.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
