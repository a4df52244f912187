"""The user documentation: README.md and the pages under docs/, in reading order (the order
of the README they came from, which its Documentation section lists them in: a later page's
commands may read what an earlier page's wrote)."""

from __future__ import annotations

from pathlib import Path

from tests.support.paths import ROOT

DOCS = ROOT / "docs"

PAGES = (
    "README.md",
    "docs/index.md",
    "docs/getting-started.md",
    "docs/commands/replay.md",
    "docs/commands/serve.md",
    "docs/concepts/index.md",
    "docs/concepts/budgets.md",
    "docs/concepts/lifecycle-hooks.md",
    "docs/concepts/deferrals.md",
    "docs/concepts/hand-over.md",
    "docs/concepts/wake-ups.md",
    "docs/karpenter.md",
    "docs/from-nth.md",
    "docs/commands/index.md",
    "docs/commands/windows.md",
    "docs/commands/explain.md",
    "docs/commands/audit.md",
    "docs/commands/rotate.md",
    "docs/migrating.md",
    "docs/reference/settings.md",
    "docs/deploying.md",
    "docs/organisation.md",
    "docs/notifications.md",
    "docs/runbook.md",
    "docs/design/performance.md",
    "docs/design/nothing-lost.md",
    "docs/design/security.md",
    "docs/contributing.md",
)


def page(name: str) -> str:
    """One page's text, by its path under docs/ (``commands/audit.md``)."""
    return (DOCS / name).read_text(encoding="utf-8")


def every_page() -> list[Path]:
    """README.md and every page, in reading order."""
    return [ROOT / name for name in PAGES]


def text() -> str:
    """Every page's text, one after the other in reading order."""
    return "\n".join(path.read_text(encoding="utf-8") for path in every_page())
