"""Fixtures shared by the integration tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kubemu import Emulator


@pytest.fixture
def emulator() -> Iterator[Emulator]:
    """An empty Kubernetes API emulator, started on 127.0.0.1 and stopped after the test."""
    with Emulator() as emu:
        yield emu
