"""pool_lock against an API server that requires namespaces to exist."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from kubemu import Emulator
from lifeboat.kube.client import KubeApi, RetryPolicy
from lifeboat.kube.pool_lock import LeaseNamespaceMissing, PoolLock


def test_a_missing_lease_namespace_is_a_clear_error(emulator: Emulator) -> None:
    """NamespaceLifecycle: creating the Lease in a namespace that does not exist is a 404;
    the lock says which namespace and how to fix it, and the message is retried."""
    kube = KubeApi(emulator.api_client(), RetryPolicy(attempts=1))
    lock = PoolLock(kube, "lifeboat", "test", clock=lambda: datetime(2026, 12, 1, tzinfo=UTC))
    missing = pytest.raises(LeaseNamespaceMissing, match="namespace 'lifeboat' does not exist")
    with missing, lock.hold("general"):
        pass
    emulator.ensure_namespace("lifeboat")
    with lock.hold("general"):
        assert emulator.get_object("Lease", "lifeboat-nodepool-general", "lifeboat") is not None
