"""Lambda SnapStart: what a snapshot may keep, and what each restored environment renews.

With SnapStart, Lambda runs the function's initialisation once, when a version is
published, and starts every later environment from a snapshot of its memory. That makes
the import and build of the service free at a cold start, but it also means that whatever
the initialisation left in memory is *shared* by every environment restored from the
snapshot. What must not be shared is renewed after each restore:

* EKS bearer tokens (minted with a clock, and a credential): forgotten, so each
  environment mints its own on its first request;
* pooled connections to the API servers: closed (their sockets did not survive);
* random state: the ``random`` module is reseeded from the OS (botocore's retry jitter uses
  it; ``kube.KubeApi`` draws its own jitter from ``random.SystemRandom``, which keeps no
  state, and per-hold lease holder ids come from ``uuid4``, which reads the OS each time);
* the metrics' cold-start flag: the first batch of a restored environment is a cold start.

Before the snapshot, :func:`install` also lets the service do slow once-per-environment work
(describe the clusters, load the service models of lazily made clients, load the X-Ray SDK)
so that restored environments have it for free.

The hooks come from ``snapshot_restore_py``, part of Lambda's managed Python runtimes. It
is imported if present and the hooks are not registered otherwise (tests, replay), so the
same code runs everywhere; :func:`after_restore` and :func:`before_snapshot` are what the
runtime calls, and what tests call to prove the renewal.
"""

from __future__ import annotations

import importlib
import logging
import random
from typing import Protocol

_log = logging.getLogger(__name__)


class Renewable(Protocol):
    def before_snapshot(self) -> None: ...

    def after_restore(self) -> None: ...


def before_snapshot(*parts: Renewable) -> None:
    for part in parts:
        try:
            part.before_snapshot()
        except Exception as error:  # a snapshot without warm-up still works, only slower
            _log.warning("warm-up before the snapshot failed: %r", error)


def after_restore(*parts: Renewable) -> None:
    random.seed()  # from os.urandom: every restored environment draws its own numbers
    for part in parts:
        part.after_restore()


def install(*parts: Renewable) -> bool:
    """Register the hooks with the runtime; False where there is no SnapStart runtime."""
    try:
        hooks = importlib.import_module("snapshot_restore_py")
    except ImportError:
        return False
    hooks.register_before_snapshot(before_snapshot, *parts)
    hooks.register_after_restore(after_restore, *parts)
    return True
