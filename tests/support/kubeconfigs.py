"""Kubeconfigs for the emulator, shared by the tests that reach it as a live cluster."""

from __future__ import annotations

from pathlib import Path

from tests.support import cyaml


def write_kubeconfig(path: Path, server: str) -> Path:
    """A kubeconfig for ``server``, without credentials (the emulator needs none)."""
    path.write_text(
        cyaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "emu", "cluster": {"server": server}}],
                "users": [{"name": "anonymous", "user": {}}],
                "contexts": [{"name": "emu", "context": {"cluster": "emu", "user": "anonymous"}}],
                "current-context": "emu",
            }
        )
    )
    return path
