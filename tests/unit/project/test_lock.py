"""One lock for what is tested and what ships (issue 40, item 5).

``requirements/dev.lock`` is the one resolution (uv, universal, hashes); ``runtime.lock`` is
the same versions without the dev tools; ``layers/lifeboat/requirements.txt`` is the layer's
part of it, written by ``requirements/layer.py``. These tests fail when the three drift
apart, or when the venv the tests run in is not the lock.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest
from packaging.markers import Marker

ROOT = Path(__file__).resolve().parents[3]
_spec = importlib.util.spec_from_file_location("layer_lock", ROOT / "requirements/layer.py")
assert _spec and _spec.loader
layer = importlib.util.module_from_spec(_spec)
sys.modules["layer_lock"] = layer
_spec.loader.exec_module(layer)


def _lock(name: str) -> dict[str, Any]:
    entries: dict[str, Any] = layer.read_lock(
        (ROOT / "requirements" / name).read_text(encoding="utf-8")
    )
    return entries


def test_the_layers_requirements_are_what_the_lock_gives() -> None:
    """Run ``make lock`` after changing pyproject.toml; this fails until then."""
    written = (ROOT / "layers/lifeboat/requirements.txt").read_text(encoding="utf-8")
    assert written == layer.render(layer.layer_closure(_lock("runtime.lock")))


def test_runtime_lock_pins_the_same_versions_as_the_dev_lock() -> None:
    dev, runtime = _lock("dev.lock"), _lock("runtime.lock")
    assert runtime, "runtime.lock is empty"
    for name, entry in runtime.items():
        assert name in dev, f"{name} is in runtime.lock but not dev.lock"
        assert entry.pin == dev[name].pin or any(
            e.pin == entry.pin for e in _all_entries("dev.lock", name)
        ), f"{name}: runtime {entry.pin}, dev {dev[name].pin}"
        assert entry.hashes, f"{name} has no hash"


def _all_entries(lock: str, name: str) -> list[Any]:
    """A universal lock may pin one name twice under exclusive markers (networkx)."""
    found = []
    for line in (ROOT / "requirements" / lock).read_text(encoding="utf-8").splitlines():
        match = layer._ENTRY.match(line)
        if match and layer.normalise(match.group(1)) == name:
            found.append(layer.Entry(name, f"{name}=={match.group(3)}", None))
    return found


def test_every_entry_of_the_dev_lock_has_hashes() -> None:
    for name, entry in _lock("dev.lock").items():
        assert entry.hashes, name


def test_the_layer_ships_neither_boto3_nor_the_asyncio_stack() -> None:
    shipped = {e.name for e in layer.layer_closure(_lock("runtime.lock"))}
    assert not shipped & layer.LEFT_OUT
    assert {
        "aws-lambda-powertools",
        "pydantic",
        "pydantic-core",
        "kubernetes",
        "croniter",
    } <= shipped


def test_the_venv_running_these_tests_is_the_lock() -> None:
    """What is tested is what ships: every package the lock pins for this interpreter is
    installed at exactly the locked version (pydantic was 2.13.5 under test and 2.14.4 in
    the layer before the lock)."""
    wrong = []
    text = (ROOT / "requirements/dev.lock").read_text(encoding="utf-8")
    for line in text.splitlines():
        match = layer._ENTRY.match(line)
        if not match:
            continue
        marker = match.group(4)
        if marker and not Marker(marker.strip().lstrip(";").strip()).evaluate():
            continue
        name, version = match.group(1), match.group(3)
        try:
            installed = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            wrong.append(f"{name}=={version} not installed")
            continue
        if installed != version:
            wrong.append(f"{name}: locked {version}, installed {installed}")
    if wrong and not (ROOT / ".venv/.installed-dev").exists():
        pytest.skip("not a venv made by make: " + "; ".join(wrong[:3]))
    assert wrong == []


def test_the_closure_follows_via_lines() -> None:
    """The guard itself: a package required only by a left-out one is not shipped, one
    required by a root is."""
    text = "\n".join(
        [
            "pydantic==1 \\",
            "    --hash=sha256:a",
            "    # via eks-lifeboat (pyproject.toml)",
            "annotated-types==2 \\",
            "    --hash=sha256:b",
            "    # via pydantic",
            "yarl==3 \\",
            "    --hash=sha256:c",
            "    # via aiohttp",
            "aiohttp==4 \\",
            "    --hash=sha256:d",
            "    # via",
            "    #   kubernetes",
            "kubernetes==5 \\",
            "    --hash=sha256:e",
            "aws-lambda-powertools==6 \\",
            "    --hash=sha256:f",
            "pyyaml==7 \\",
            "    --hash=sha256:g",
            "croniter==8 \\",
            "    --hash=sha256:h",
        ]
    )
    names = [e.name for e in layer.layer_closure(layer.read_lock(text))]
    assert names == [
        "annotated-types", "aws-lambda-powertools", "croniter", "kubernetes", "pydantic", "pyyaml"
    ]  # fmt: skip
