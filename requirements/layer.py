"""Write the Lambda layer's requirements from the project's lock (``make lock``).

One resolution, ``requirements/dev.lock`` (uv, universal, with hashes), is what ``make test``
installs; ``requirements/runtime.lock`` is the same versions without the dev tools (``make
demo``). The layer ships a subset of those: the closure of the layer's own dependencies,
read from the lock's ``# via`` lines, with the packages the Lambda runtime provides (boto3,
botocore, s3transfer) and kubernetes.aio's stack left out. It is written, hashes and all, to
``layers/lifeboat/requirements.txt``, because ``sam build`` copies only the layer's folder;
tests/unit/project/test_lock.py fails when that file is not what this script writes from the lock
now, so the versions tested are the versions shipped.

    python requirements/layer.py            # rewrite layers/lifeboat/requirements.txt
    python requirements/layer.py --check    # exit 1 when it differs
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements/runtime.lock"
LAYER_REQUIREMENTS = ROOT / "layers/lifeboat/requirements.txt"

# What the layer's code imports (pyproject.toml's dependencies, less boto3 and the local tools').
LAYER_ROOTS = ("aws-lambda-powertools", "pydantic", "kubernetes", "pyyaml", "croniter")
# Provided by the Lambda runtime, or needed only by kubernetes.aio (pruned from the layer).
LEFT_OUT = frozenset(
    {
        "boto3", "botocore", "s3transfer",
        "aiohttp", "aiohttp-retry", "aiohappyeyeballs", "aiosignal", "attrs", "frozenlist",
        "multidict", "propcache", "yarl",
    }
)  # fmt: skip
_ENTRY = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?==(\S+)(\s*;\s*[^\\]+)?\s*\\?$")


@dataclass
class Entry:
    name: str
    pin: str  # "name==version" as the lock writes it
    marker: str | None
    hashes: list[str] = field(default_factory=list)
    required_by: set[str] = field(default_factory=set)


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def read_lock(text: str) -> dict[str, Entry]:
    """The lock's entries by normalised name, with their hashes and who requires them."""
    entries: dict[str, Entry] = {}
    current: Entry | None = None
    in_via = False
    for raw in text.splitlines():
        line = raw.strip()
        match = _ENTRY.match(raw)
        if match:
            name = normalise(match.group(1))
            marker = match.group(4).strip().lstrip(";").strip() if match.group(4) else None
            current = entries[name] = Entry(name, f"{name}=={match.group(3)}", marker)
            in_via = False
        elif current and line.startswith("--hash="):
            current.hashes.append(line.removesuffix("\\").strip())
        elif current and line.startswith("# via"):
            rest = line.removeprefix("# via").strip()
            in_via = not rest
            if rest:
                current.required_by.add(normalise(rest.split(" ")[0]))
        elif current and in_via and line.startswith("#   "):
            current.required_by.add(normalise(line.removeprefix("#").strip().split(" ")[0]))
        else:
            in_via = False
    return entries


def layer_closure(entries: dict[str, Entry]) -> list[Entry]:
    """The layer's roots and everything they require, less what the layer must not ship."""
    requires: dict[str, set[str]] = {}
    for entry in entries.values():
        for parent in entry.required_by:
            requires.setdefault(parent, set()).add(entry.name)
    wanted, queue = set(), [normalise(r) for r in LAYER_ROOTS]
    while queue:
        name = queue.pop()
        if name in wanted or name in LEFT_OUT:
            continue
        if name not in entries:
            raise SystemExit(f"requirements/layer.py: {name} is not in {LOCK.name}")
        wanted.add(name)
        queue.extend(requires.get(name, ()))
    return [entries[name] for name in sorted(wanted)]


def render(entries: list[Entry]) -> str:
    lines = [
        "# The Lambda layer's requirements: written by requirements/layer.py from",
        "# requirements/runtime.lock (make lock); do not edit by hand. Installed with",
        "# --require-hashes --no-deps for python3.13 / arm64 (layers/lifeboat/Makefile).",
        "# Left out: " + ", ".join(sorted(LEFT_OUT)) + ".",
        "",
    ]
    for entry in entries:
        head = entry.pin + (f" ; {entry.marker}" if entry.marker else "")
        lines.append(" \\\n    ".join([head, *entry.hashes]))
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    text = render(layer_closure(read_lock(LOCK.read_text(encoding="utf-8"))))
    if "--check" in argv:
        if LAYER_REQUIREMENTS.read_text(encoding="utf-8") != text:
            print(f"{LAYER_REQUIREMENTS} differs from the lock: run make lock", file=sys.stderr)
            return 1
        return 0
    LAYER_REQUIREMENTS.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
