"""The test tree mirrors the code: tests/unit/<package>/ holds the unit tests of each package of
the layer, so a package without tests, or a test directory named after nothing, shows."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
LAYER = ROOT / "layers/lifeboat/lifeboat"
UNIT = ROOT / "tests/unit"
INTEGRATION = ROOT / "tests/integration"

# Test directories for code outside the layer, each with the code it mirrors.
OUTSIDE_THE_LAYER = {
    "local": ROOT / "local/lifeboat_local",
    "kubemu": ROOT / "local/kubemu",
    "bench": ROOT / "bench",
    "docsite": ROOT / "docsite",
    "template": ROOT / "template.yaml",
    "project": ROOT / "pyproject.toml",  # the rules the project holds itself to
}


def _packages(root: Path) -> set[str]:
    return {p.parent.name for p in root.glob("*/__init__.py")}


def _test_dirs(root: Path) -> set[str]:
    return {p.name for p in root.iterdir() if p.is_dir() and p.name != "__pycache__"}


def test_every_package_of_the_layer_has_its_unit_tests() -> None:
    missing = {name for name in _packages(LAYER) if not list((UNIT / name).glob("test_*.py"))}
    assert missing == set(), "packages without tests/unit/<package>/test_*.py"


def test_every_test_directory_is_named_after_code() -> None:
    named = _packages(LAYER) | set(OUTSIDE_THE_LAYER)
    assert _test_dirs(UNIT) - named == set()
    assert _test_dirs(INTEGRATION) - named == set()
    assert all(path.exists() for path in OUTSIDE_THE_LAYER.values())


def test_local_subdirectories_mirror_lifeboat_locals_packages() -> None:
    local = _packages(ROOT / "local/lifeboat_local")
    for root in (UNIT / "local", INTEGRATION / "local"):
        assert _test_dirs(root) - local == set()


def test_only_the_roots_modules_are_tested_at_the_root() -> None:
    """tests/unit/test_X.py only for a module X at the layer's root (errors)."""
    loose = {p.stem.removeprefix("test_") for p in UNIT.glob("test_*.py")}
    assert loose <= {p.stem for p in LAYER.glob("*.py")}
