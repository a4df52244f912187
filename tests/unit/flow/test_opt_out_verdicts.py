"""``OptOutVerdicts``: a NodePool's opt-out verdict kept for ``OPT_OUT_TTL`` seconds of an
injected monotonic clock, per cluster and pool, for the taint at once only (issue 36); and
``Resolver.opted_out``, which reads the pool when no recent verdict answers."""

from __future__ import annotations

from collections import Counter
from typing import Any, cast

from lifeboat.flow.resolve import OPT_OUT_TTL, OptOutVerdicts, Resolver
from lifeboat.kube.client import KubeApi
from lifeboat.marks.node_marks import OPT_OUT_ANNOTATION


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def pool(name: str, opted_out: bool = False) -> dict[str, Any]:
    annotations = {OPT_OUT_ANNOTATION: "true"} if opted_out else {}
    return {"metadata": {"name": name, "annotations": annotations}}


class Pools:
    """A KubeApi's ``get_nodepool`` over a dict the test edits, counting reads."""

    def __init__(self, **pools: dict[str, Any]) -> None:
        self.pools = dict(pools)
        self.reads: Counter[str] = Counter()

    def get_nodepool(self, name: str) -> dict[str, Any] | None:
        self.reads[name] += 1
        return self.pools.get(name)


def test_a_verdict_answers_until_the_ttl_then_no_more() -> None:
    clock = Clock()
    verdicts = OptOutVerdicts(clock)
    assert verdicts.recent(None, "a") is None  # never read
    verdicts.note(None, "a", pool("a", opted_out=True), clock.now)
    clock.now += OPT_OUT_TTL - 0.001
    assert verdicts.recent(None, "a") is True
    clock.now += 0.001
    assert verdicts.recent(None, "a") is None


def test_a_clock_gone_backwards_makes_a_verdict_unknown() -> None:
    """A verdict whose age is negative is not known to be recent: read again."""
    clock = Clock()
    verdicts = OptOutVerdicts(clock)
    verdicts.note(None, "a", pool("a"), clock.now)
    clock.now -= 0.5
    assert verdicts.recent(None, "a") is None


def test_verdicts_are_per_cluster() -> None:
    """Two clusters may each have a pool of the same name: one's verdict is not the other's."""
    verdicts = OptOutVerdicts(Clock())
    verdicts.note("blue", "general", pool("general", opted_out=True), verdicts.now())
    assert verdicts.recent("blue", "general") is True
    assert verdicts.recent("green", "general") is None


def test_an_absent_pool_forgets_its_verdict() -> None:
    verdicts = OptOutVerdicts(Clock())
    verdicts.note(None, "a", pool("a", opted_out=True), verdicts.now())
    verdicts.note(None, "a", None, verdicts.now())
    assert verdicts.recent(None, "a") is None


def test_a_second_batch_within_the_ttl_reads_no_pool_for_the_taint() -> None:
    """Each batch has its own Resolver; the verdicts outlive it. The second batch's opt-out
    question is answered without a read; its fresh read (``nodepool``, for the decision)
    still reads, and renews the verdict."""
    clock = Clock()
    verdicts = OptOutVerdicts(clock)
    pools = Pools(a=pool("a"))
    first = Resolver(cast(KubeApi, pools), verdicts)
    assert first.opted_out("a") is False
    assert pools.reads == Counter(a=1)
    pools.pools["a"] = pool("a", opted_out=True)  # the operator opts out
    clock.now += 5
    second = Resolver(cast(KubeApi, pools), verdicts)
    assert second.opted_out("a") is False  # the verdict of 5 s ago: bounded staleness
    assert pools.reads == Counter(a=1)
    second.nodepool("a")  # the decision's fresh read
    assert pools.reads == Counter(a=2)
    third = Resolver(cast(KubeApi, pools), verdicts)
    assert third.opted_out("a") is True  # renewed by the second batch's read
    assert pools.reads == Counter(a=2)


def test_past_the_ttl_the_pool_is_read_and_the_opt_out_honoured() -> None:
    clock = Clock()
    verdicts = OptOutVerdicts(clock)
    pools = Pools(a=pool("a"))
    Resolver(cast(KubeApi, pools), verdicts).opted_out("a")
    pools.pools["a"] = pool("a", opted_out=True)
    clock.now += OPT_OUT_TTL
    assert Resolver(cast(KubeApi, pools), verdicts).opted_out("a") is True
    assert pools.reads == Counter(a=2)


def test_an_absent_pool_is_read_each_batch_and_did_not_opt_out() -> None:
    """As before the verdicts: a pool that is not there has not opted out, and is asked for
    again by the next batch (it may have been created opted out)."""
    verdicts = OptOutVerdicts(Clock())
    pools = Pools()
    for _ in range(2):
        assert Resolver(cast(KubeApi, pools), verdicts).opted_out("gone") is False
    assert pools.reads == Counter(gone=2)


def test_a_resolver_without_verdicts_reads_once_per_batch() -> None:
    """Built without verdicts (a caller that keeps none): the per-batch read answers."""
    pools = Pools(a=pool("a", opted_out=True))
    resolver = Resolver(cast(KubeApi, pools))
    assert resolver.opted_out("a") is True
    assert resolver.opted_out("a") is True
    assert pools.reads == Counter(a=1)


def test_a_verdicts_age_counts_from_before_its_get() -> None:
    """A GET that took 3 s (retries): the verdict is as old as the request, not the answer."""
    clock = Clock()
    verdicts = OptOutVerdicts(clock)

    class Slow(Pools):
        def get_nodepool(self, name: str) -> dict[str, Any] | None:
            clock.now += 3
            return super().get_nodepool(name)

    Resolver(cast(KubeApi, Slow(a=pool("a"))), verdicts).opted_out("a")
    clock.now += OPT_OUT_TTL - 3
    assert verdicts.recent(None, "a") is None
