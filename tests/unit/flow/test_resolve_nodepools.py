"""``Resolver.nodepool``: one GET per NodePool per batch, the lanes of a batch reading
different pools side by side (issue 36: one lock held over every GET made a batch's taints,
each first asking whether its pool opted out, wait on the pools' GETs in turn)."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any, cast

from lifeboat.flow.resolve import Resolver
from lifeboat.kube.client import KubeApi

WAIT = 5.0  # seconds: only reached when the reads are serialised (the test then fails)


class Pools:
    """A KubeApi's ``get_nodepool``: the read of ``first`` is answered only once another
    pool's read has begun."""

    def __init__(self, first: str) -> None:
        self.first = first
        self.other_began = threading.Event()
        self.reads: Counter[str] = Counter()
        self.waited_in_vain = False
        self._lock = threading.Lock()

    def get_nodepool(self, name: str) -> dict[str, Any]:
        with self._lock:
            self.reads[name] += 1
        if name == self.first:
            self.waited_in_vain = not self.other_began.wait(WAIT)
        else:
            self.other_began.set()
        return {"metadata": {"name": name}}


def read_side_by_side(resolver: Resolver, names: list[str]) -> dict[str, Any]:
    found: dict[str, Any] = {}

    def read(name: str) -> None:
        found[name] = resolver.nodepool(name)

    threads = [threading.Thread(target=read, args=(name,)) for name in names]
    threads[0].start()
    for thread in threads[1:]:
        thread.start()
    for thread in threads:
        thread.join()
    return found


def test_two_pools_are_read_side_by_side() -> None:
    """The read of pool ``a`` waits until the read of ``b`` has begun: a lock held over
    ``a``'s GET would keep ``b`` waiting behind it (until the test's timeout)."""
    pools = Pools("a")
    resolver = Resolver(cast(KubeApi, pools))
    found = read_side_by_side(resolver, ["a", "b"])
    assert not pools.waited_in_vain
    assert found == {"a": {"metadata": {"name": "a"}}, "b": {"metadata": {"name": "b"}}}


def test_one_pool_read_by_many_lanes_is_read_once() -> None:
    """Eight lanes ask for ``a`` while its first read is in flight (held until ``b``'s
    begins): one GET of ``a``, each lane given its answer; later asks read nothing."""
    pools = Pools("a")
    resolver = Resolver(cast(KubeApi, pools))
    found = read_side_by_side(resolver, ["a"] * 8 + ["b"])
    assert not pools.waited_in_vain
    assert pools.reads == Counter({"a": 1, "b": 1})
    assert found["a"] == {"metadata": {"name": "a"}}
    resolver.nodepool("a")
    resolver.nodepool("b")
    assert pools.reads == Counter({"a": 1, "b": 1})
