"""Loading a large cluster builds a few million small containers at once: Python's cyclic
garbage collector would scan the growing heap again and again meanwhile (about half the
time of reading a 20 MB file), to find no cycles, as parsed JSON and YAML have none; and
once the cluster is loaded, every full collection would scan it all again (0.3-0.5 s each
for 5,000 nodes) while it is in use."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic collection for the block (reference counting still frees as usual)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@contextmanager
def heap_frozen() -> Iterator[None]:
    """What is alive now (a cluster just loaded) is left out of cyclic collections for the
    block (``gc.freeze``), and handed back to the collector after it: nothing is kept
    alive longer, a full collection meanwhile only scans what was made since. Not nested."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
