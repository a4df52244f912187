"""The replay's Karpenter simulation does what Karpenter does, on the simulated clock: the
behaviours the scenario tests lean on, each against the rule it mirrors."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kubemu import Emulator
from lifeboat.karpenter.replacement import replacement_nodeclaim
from lifeboat.kube import nodes
from lifeboat_local.karpenter_sim import KarpenterSimulation, SimStep
from tests.support.replaying import find, sample_cluster

START = datetime(2026, 12, 1, 18, 0, tzinfo=UTC)  # outside general's weekday freeze
Obj = dict[str, Any]


class _ChangedAView(AssertionError):
    pass


def _refuse(*args: object, **kwargs: object) -> None:
    raise _ChangedAView("the simulation changed an object it read through Emulator.view")


def _thawed(value: Any, memo: object = None) -> Any:
    """A copy (``editable`` deep-copies) is a plain object, free to change."""
    return json.loads(json.dumps(value))


class _FrozenDict(dict[str, Any]):
    __setitem__ = __delitem__ = setdefault = update = pop = popitem = clear = _refuse  # type: ignore[assignment]
    __deepcopy__ = _thawed


class _FrozenList(list[Any]):
    __setitem__ = __delitem__ = append = extend = insert = remove = pop = _refuse
    sort = reverse = clear = __iadd__ = _refuse  # type: ignore[assignment]
    __deepcopy__ = _thawed


def _frozen(value: Any) -> Any:
    if isinstance(value, dict):
        return _FrozenDict({k: _frozen(v) for k, v in value.items()})
    if isinstance(value, list):
        return _FrozenList(_frozen(v) for v in value)
    return value


@pytest.fixture(autouse=True)
def views_refuse_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test here also checks that the simulation never changes what it reads without
    copying (``Emulator.view`` hands out the stored objects themselves): a change there
    would reach the store behind its back, its indexes and its watches."""
    view = Emulator.view

    def frozen_view(self: Emulator, kind: str | None = None) -> list[Obj]:
        return [_frozen(o) for o in view(self, kind)]

    monkeypatch.setattr(Emulator, "view", frozen_view)


def _spare(objects: list[Obj]) -> Obj:
    """An extra claim for pool general, as Lifeboat or Karpenter would create it."""
    built = replacement_nodeclaim(
        find(objects, "NodePool", "general"),
        find(objects, "Node", "ip-10-0-1-12.ec2.internal"),
        "general-b4wpl",
        "test",
    ).claim
    assert built is not None
    return dict(built)


@pytest.fixture
def cluster() -> tuple[list[Obj], Any]:
    objects = sample_cluster()

    def run(minutes: int, **options: Any) -> list[SimStep]:
        with Emulator(objects) as emulator:
            sim = KarpenterSimulation(emulator, START, **options)
            steps = sim.advance(START)
            steps += sim.advance(START + timedelta(minutes=minutes))
            objects[:] = emulator.objects()
            return steps

    return objects, run


def _of(steps: list[SimStep], claim: str, action: str) -> list[SimStep]:
    return [s for s in steps if s.claim == claim and s.action == action]


def test_a_claim_gets_the_finalizer_launches_then_joins_initialized(cluster: Any) -> None:
    """``nodeclaim.lifecycle``: finalizer first, ``Launched`` with a provider ID, then a
    Node labelled registered and initialized, owned by the claim."""
    objects, run = cluster
    spare = _spare(objects)
    objects.append(spare)
    steps = run(2, disruption=False)
    name = spare["metadata"]["name"]
    (launched,) = _of(steps, name, "launched")
    (ready,) = _of(steps, name, "node-ready")
    assert (launched.at - START, ready.at - START) == (timedelta(seconds=5), timedelta(minutes=1))
    claim = find(objects, "NodeClaim", name)
    assert claim["metadata"]["finalizers"] == ["karpenter.sh/termination"]
    node = find(objects, "Node", claim["status"]["nodeName"])
    assert nodes.labels_of(node)["karpenter.sh/initialized"] == "true"
    assert nodes.nodeclaim_owner(node) == (name, claim["metadata"]["uid"])


@pytest.mark.parametrize(
    ("consolidate_after", "consolidated_after"),
    [("0s", timedelta(minutes=1, seconds=20)), ("5m", timedelta(minutes=6, seconds=20))],
)
def test_emptiness_honours_consolidate_after(
    cluster: Any, consolidate_after: str, consolidated_after: timedelta
) -> None:
    """``Consolidatable`` once ``consolidateAfter`` has passed since initialization; the
    emptiness command is validated 15 s after it is chosen, then its claim deleted."""
    objects, run = cluster
    find(objects, "NodePool", "general")["spec"]["disruption"]["consolidateAfter"] = (
        consolidate_after
    )
    spare = _spare(objects)
    objects.append(spare)
    steps = run(10)
    (deleted,) = _of(steps, spare["metadata"]["name"], "disruption-deleted")
    assert START + consolidated_after - timedelta(seconds=10) <= deleted.at
    assert deleted.at <= START + consolidated_after + timedelta(seconds=5)


@pytest.mark.parametrize(
    "protect",
    ["node-annotation", "consolidate-after-never", "budget-zero-for-empty"],
)
def test_emptiness_is_held_back_as_karpenter_holds_it(cluster: Any, protect: str) -> None:
    """``ValidateNodeDisruptable`` (do-not-disrupt on the node), ``consolidateAfter: Never``
    (consolidation disabled), a budget of 0 for reason Empty (``BuildDisruptionBudgetMapping``)."""
    objects, run = cluster
    general = find(objects, "NodePool", "general")
    general["spec"]["disruption"]["consolidateAfter"] = "0s"
    spare = _spare(objects)
    if protect == "node-annotation":
        spare["metadata"]["annotations"]["karpenter.sh/do-not-disrupt"] = "true"
    elif protect == "consolidate-after-never":
        general["spec"]["disruption"]["consolidateAfter"] = "Never"
    else:
        general["spec"]["disruption"]["budgets"].append({"nodes": "0", "reasons": ["Empty"]})
    objects.append(spare)
    steps = run(10)
    assert not _of(steps, spare["metadata"]["name"], "disruption-deleted")
    assert _of(steps, spare["metadata"]["name"], "node-ready")


def test_termination_drains_through_pdbs_and_removes_node_and_claim(cluster: Any) -> None:
    """The termination finalizer: taint karpenter.sh/disrupted, evict (a PDB allowing no
    disruption holds the drain), then remove the Node and the claim."""
    objects, run = cluster
    find(objects, "PodDisruptionBudget", "checkout")["spec"] = {
        "selector": {"matchLabels": {"app": "checkout"}},
        "minAvailable": "100%",
    }
    find(objects, "NodeClaim", "general-b4wpl")["metadata"]["deletionTimestamp"] = (
        "2026-12-01T17:59:00Z"
    )
    find(objects, "NodeClaim", "general-h9cfd")["metadata"]["deletionTimestamp"] = (
        "2026-12-01T17:59:00Z"
    )
    steps = run(5, disruption=False)
    held = [s for s in steps if s.claim == "general-b4wpl"]
    assert [s.action for s in held] == ["drain-started", "drain-waiting"]
    assert "PDB shop/checkout" in held[1].detail
    assert "ip-10-0-1-12.ec2.internal" in {
        n["metadata"]["name"] for n in objects if n["kind"] == "Node"
    }
    free = [s.action for s in steps if s.claim == "general-h9cfd"]
    assert free[0] == "drain-started" and free[-1] == "node-removed"
    assert not [o for o in objects if o["metadata"]["name"] == "general-h9cfd"]
