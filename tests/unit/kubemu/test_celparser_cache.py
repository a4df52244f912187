"""kubemu.celprograms' parser cache: lark loads its cache file with pickle (code in the file
runs), so the file must live where only the user can write, never the shared temporary
directory lark uses by default (lark/lark.py ``Lark.__init__``, ``cache=True``)."""

from __future__ import annotations

import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from celpy import celparser

from kubemu import celprograms


@pytest.fixture
def fresh_parser(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A process that has not built celpy's parser yet, its temporary directory tmp_path/tmp
    and its cache home tmp_path/cache."""
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(celparser.CELParser, "CEL_PARSER", None)
    celprograms._environment.cache_clear()
    yield tmp_path
    celprograms._environment.cache_clear()  # the next one uses the restored parser


def _rebuilt() -> None:
    celparser.CELParser.CEL_PARSER = None
    celprograms._environment.cache_clear()
    celprograms._environment().compile("self.a == 1")


def test_the_parser_cache_is_private_and_never_in_the_shared_temporary_directory(
    fresh_parser: Path,
) -> None:
    """Before: lark wrote /tmp/.lark_cache_<user>_<sha>_3_11.tmp, a name anyone can predict
    and plant a pickle at. Now: $XDG_CACHE_HOME/kubemu (mode 0700), one complete file (no
    half-written file left under the writer's name), which the next process loads."""
    _rebuilt()
    assert list((fresh_parser / "tmp").iterdir()) == []
    private = fresh_parser / "cache" / "kubemu"
    assert stat.S_IMODE(private.stat().st_mode) == 0o700
    [cached] = private.glob("*.lark")
    assert sorted(p.name for p in private.iterdir()) == [cached.name, cached.name + ".lock"]
    written = cached.stat().st_mtime_ns
    _rebuilt()  # a second process: loads the file, rewrites nothing
    assert cached.stat().st_mtime_ns == written


def test_a_cache_directory_others_may_write_in_is_not_used(fresh_parser: Path) -> None:
    """A ``kubemu`` cache directory writable by others (planted, or a loose umask) is not
    trusted: the parser is built without a cache, nothing read from or written there."""
    planted = fresh_parser / "cache" / "kubemu"
    planted.mkdir(parents=True)
    planted.chmod(0o777)
    _rebuilt()
    assert list(planted.iterdir()) == []
    assert list((fresh_parser / "tmp").iterdir()) == []


def test_a_lock_file_that_cannot_be_opened_does_not_stop_the_rules(fresh_parser: Path) -> None:
    """A cache directory where the lock cannot be created (read-only, or a directory in its
    place): the parser is still built and rules still compile."""
    private = fresh_parser / "cache" / "kubemu"
    private.mkdir(parents=True, mode=0o700)
    final = celprograms._cache_file()
    assert final is not None
    final.with_name(final.name + ".lock").mkdir()
    _rebuilt()
