"""Hostile cluster files are usage errors, never an internal error or a machine out of memory
(issue 23.5): a ~1 KB YAML alias bomb (billions of values once expanded) is refused by both
readers, as Kubernetes' own YAML reader refuses "excessive aliasing"; nesting deeper than can
be read is a usage error naming the file. Through ``lifeboat audit`` and ``lifeboat replay``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from kubemu.clusterfile import UnsafeYaml, read_documents
from kubemu.yamlfast import MAX_EXPANDED_NODES, plain_data_documents
from tests.conftest import CliRun
from tests.support.paths import EVENTS


def _alias_bomb(levels: int = 9) -> str:
    """The "billion laughs": each level a list of ten aliases to the one before."""
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for level in range(1, levels + 1):
        previous = f"*a{level - 1}"
        lines.append(f"a{level}: &a{level} [{', '.join([previous] * 10)}]")
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_by_both_readers() -> None:
    bomb = _alias_bomb()
    assert len(bomb) < 1200
    # rapidyaml (which would copy every alias) never sees it ...
    assert plain_data_documents(bomb) is None
    # ... and PyYAML's result (shared, not copied) is counted before anyone expands it.
    with pytest.raises(UnsafeYaml, match="excessive aliasing"):
        read_documents(bomb)


def test_a_few_aliases_are_still_read() -> None:
    documents, _ = read_documents("a: &x {k: [1, 2]}\nb: *x\n")
    assert documents == [{"a": {"k": [1, 2]}, "b": {"k": [1, 2]}}]
    assert MAX_EXPANDED_NODES > 1_800_000  # a 5,000-node dump fits


@pytest.mark.parametrize("command", ["audit", "replay"])
def test_an_alias_bomb_is_a_usage_error(
    command: str, cli: Callable[..., CliRun], tmp_path: Path
) -> None:
    """Regression: both readers expanded it to the 2 GiB cap ("internal error: MemoryError")."""
    cluster = tmp_path / "bomb.yaml"
    cluster.write_text(_alias_bomb())
    argv = (
        ["audit", "--cluster", cluster]
        if command == "audit"
        else ["replay", EVENTS / "spot-interruption.json", "--cluster", cluster]
    )
    run = cli(*argv)
    assert run.code == 1, run.err
    assert f"--cluster {cluster}: not valid YAML" in run.err
    assert "excessive aliasing" in run.err
    assert "internal error" not in run.err


@pytest.mark.parametrize("as_json", [False, True], ids=["yaml", "json"])
def test_deep_nesting_is_a_usage_error(
    as_json: bool, cli: Callable[..., CliRun], tmp_path: Path
) -> None:
    """Regression: nesting past Python's recursion limit was an "internal error"."""
    depth = 100_000
    text = "[" * depth + "]" * depth if as_json else "a: " + "[" * depth + "]" * depth
    cluster = tmp_path / "deep.yaml"
    cluster.write_text(text + "\n")
    run = cli("audit", "--cluster", cluster)
    assert run.code == 1, run.err
    assert f"--cluster {cluster}: not valid YAML" in run.err
    assert "nested too deeply" in run.err or "maximum nesting depth" in run.err
    assert "internal error" not in run.err
