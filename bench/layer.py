"""The Lambda layer's unpacked size (what counts against Lambda's 250 MB unzipped limit)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BUILT = ROOT / ".aws-sam" / "build" / "LifeboatLayer"
LAYER_SRC = ROOT / "layers" / "lifeboat"


def tree_size(path: Path) -> tuple[int, int]:
    """(bytes of file contents, number of files) under ``path``."""
    total = files = 0
    for folder, _dirs, names in os.walk(path):
        for name in names:
            full = os.path.join(folder, name)
            if not os.path.islink(full):
                total += os.path.getsize(full)
                files += 1
    return total, files


def _largest(path: Path, count: int = 6) -> list[dict[str, Any]]:
    site = path / "python" if (path / "python").is_dir() else path
    sizes = [(tree_size(p)[0] if p.is_dir() else p.stat().st_size, p.name) for p in site.iterdir()]
    return [{"name": n, "mb": round(s / 2**20, 1)} for s, n in sorted(sizes, reverse=True)[:count]]


def _build_with_pip(target: Path) -> None:
    """What layers/lifeboat/Makefile does, into ``target`` (needs the package index)."""
    subprocess.run(
        [
            "make",
            "-C",
            str(LAYER_SRC),
            "build-LifeboatLayer",
            f"ARTIFACTS_DIR={target}",
            f"PYTHON={sys.executable}",
        ],
        check=True,
        capture_output=True,
        timeout=600,
    )


def layer_size(allow_build: bool = True) -> dict[str, Any]:
    if BUILT.is_dir():
        size, files = tree_size(BUILT)
        return {
            "source": ".aws-sam/build/LifeboatLayer (make sam-build)",
            "unpacked_mb": round(size / 2**20, 1),
            "files": files,
            "largest": _largest(BUILT),
        }
    if not allow_build:
        return {"source": "not measured (no .aws-sam build; --no-layer-build)"}
    scratch = Path(tempfile.mkdtemp(prefix="lifeboat-layer-"))
    try:
        _build_with_pip(scratch)
        size, files = tree_size(scratch)
        return {
            "source": "pip install --target for manylinux2014_aarch64/cp313 "
            "(layers/lifeboat/Makefile build-LifeboatLayer)",
            "unpacked_mb": round(size / 2**20, 1),
            "files": files,
            "largest": _largest(scratch),
        }
    except (subprocess.SubprocessError, OSError) as error:
        return {"source": f"not measured: the layer build failed ({type(error).__name__})"}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
