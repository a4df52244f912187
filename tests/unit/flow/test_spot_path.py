"""The path a Spot warning takes through the layer, as ``lifeboat.flow``'s docstring and
docs/design/architecture.md say it, is the path it takes: the Spot sample replayed through
``functions/interruption/app.py`` (``tests/unit/flow/spot_path.py``, in a fresh interpreter
so no cache another test warmed shortens it), every module of the layer entered before the
first node PATCH recorded in order, and compared with the documented list."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import lifeboat.flow
from tests.support.paths import ROOT

MODULE = re.compile(r"^\s*(functions/interruption/app\.py|lifeboat(?:\.[a-z_]+)+)(?:\s|$)")


def listed(text: str) -> list[str]:
    """The modules of the first block of lines naming modules after "first PATCH" /
    "first entered" in ``text``: one per line, the name first."""
    start = text.index("in the order first entered")
    names: list[str] = []
    for line in text[start:].splitlines():
        found = MODULE.match(line)
        if found:
            names.append(found.group(1))
        elif names and line.strip() in ("", "```"):
            break
    return names


def traced() -> list[str]:
    result = subprocess.run(
        [sys.executable, "-m", "tests.unit.flow.spot_path"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    crossed: list[str] = json.loads(result.stdout.strip().splitlines()[-1])["crossed"]
    return crossed


def test_the_documented_spot_path_is_the_one_that_runs() -> None:
    documented = listed(lifeboat.flow.__doc__ or "")
    assert len(documented) > 20
    assert traced() == documented
    page = (ROOT / "docs/design/architecture.md").read_text(encoding="utf-8")
    assert listed(page) == documented


def test_the_list_is_read_as_written() -> None:
    """The reader of the list can fail: names are read one per line until the block ends."""
    text = "crossed in the order first entered::\n\n    lifeboat.a.b   why\n    lifeboat.c\n\nx\n"
    assert listed(text) == ["lifeboat.a.b", "lifeboat.c"]
