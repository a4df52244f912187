"""deploy/rbac.yaml against what Lifeboat really does to a cluster.

Every sample is replayed on the emulator enforcing the rules of rbac.yaml, then the deferred
work is followed through time (wake-ups due, with the replay's Karpenter simulation launching
replacements and terminating nodes between steps), and a follow-up an earlier version
scheduled (finish a replacement) is handled too. Two promises are checked:

* enough: no request was refused, and every request is allowed by the rules *as a real API
  server scopes them* (the Role's lease rules only in the Role's namespace);
* minimal: every granted (group, resource, verb) is used by some path.

The emulator's authorizer takes one flat rule list and cannot scope a Role to a namespace,
so it is given the ClusterRole's and the Role's rules together; the namespace scope of the
Role is checked here on the request log instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubemu import Emulator, load_cluster_file
from kubemu.rbac import Request, rule_allows
from lifeboat.events import parse_message
from lifeboat.events.notice import LifecycleHook
from lifeboat.kube import KubeApi, RetryPolicy
from lifeboat.ledger import MemoryLedger
from lifeboat.pipeline import OneCluster, Pipeline
from lifeboat.report import Outcome
from lifeboat.settings import Settings
from lifeboat.wakeup import MemoryWakeups, Task, Wakeup, encode
from lifeboat_local.directory import directory_from_objects
from lifeboat_local.karpenter_sim import KarpenterSimulation

ROOT = Path(__file__).resolve().parents[2]
EVENTS = ROOT / "events"
START = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)
# Following wake-ups must end well before this many rounds (each round is one batch).
MAX_ROUNDS = 60

Permission = tuple[str, str, str]  # (group, resource, verb), as seen_permissions has it

# Granted in rbac.yaml but used by no code path (see the minimality test). Reported to the
# lead rather than removed here; empty this set when rbac.yaml drops them or code uses them.
GRANTED_BUT_UNUSED: set[Permission] = set()


@dataclass
class SimulatedClock:
    now: datetime

    def __call__(self) -> datetime:
        return self.now


class RecordedLifecycle:
    """Auto Scaling is not under test here (no cluster permission involved)."""

    def complete(self, hook: LifecycleHook, result: str = "CONTINUE") -> None:
        pass

    def heartbeat(self, hook: LifecycleHook) -> None:
        pass


@dataclass(frozen=True)
class Rbac:
    cluster_rules: list[dict[str, Any]]
    role_rules: list[dict[str, Any]]
    role_namespace: str

    def allows(self, verb: str, group: str, resource: str, namespace: str, name: str) -> bool:
        request = Request(verb, group, resource, namespace, name)
        if any(rule_allows(rule, request) for rule in self.cluster_rules):
            return True
        return namespace == self.role_namespace and any(
            rule_allows(rule, request) for rule in self.role_rules
        )

    def granted(self) -> set[Permission]:
        return {
            (group, resource, verb)
            for rule in self.cluster_rules + self.role_rules
            for group in rule["apiGroups"]
            for resource in rule["resources"]
            for verb in rule["verbs"]
        }


def load_rbac() -> Rbac:
    documents = {d["kind"]: d for d in yaml.safe_load_all((ROOT / "deploy/rbac.yaml").read_text())}
    # Both bindings name the group the access entry maps the function's role to.
    for binding in ("ClusterRoleBinding", "RoleBinding"):
        assert [s["name"] for s in documents[binding]["subjects"]] == ["lifeboat"]
    role = documents["Role"]
    return Rbac(documents["ClusterRole"]["rules"], role["rules"], role["metadata"]["namespace"])


def all_sample_bodies() -> list[str]:
    """Every sample: the EventBridge ones and the raw lifecycle-hook messages."""
    paths = sorted(EVENTS.glob("*.json")) + sorted((EVENTS / "raw").glob("*.json"))
    assert len(paths) >= 8
    return [path.read_text() for path in paths]


@dataclass
class Run:
    emulator: Emulator
    outcomes: list[tuple[str, Outcome]]  # (kind or wake-up task, outcome)
    errors: list[BaseException]


@pytest.fixture(scope="module")
def run() -> Iterator[Run]:
    """Everything Lifeboat does for the samples, from the first notice to the last wake-up,
    on an emulator enforcing rbac.yaml. Shared by the tests of this module."""
    rbac = load_rbac()
    objects = load_cluster_file(EVENTS / "cluster.yaml")
    clock = SimulatedClock(START)
    wakeups = MemoryWakeups()
    outcomes: list[tuple[str, Outcome]] = []
    errors: list[BaseException] = []
    with Emulator(objects) as emu:
        emu.enforce_rbac(rbac.cluster_rules + rbac.role_rules)
        pipeline = Pipeline(
            clusters=OneCluster(KubeApi(emu.api_client(), RetryPolicy(attempts=2))),
            directory=directory_from_objects(objects),
            settings=Settings(lease_namespace=rbac.role_namespace),
            clock=clock,
            lifecycle=RecordedLifecycle(),
            wakeups=wakeups,
            ledger=MemoryLedger(),
        )

        def process(bodies: list[str], label: list[str]) -> None:
            for name, result in zip(label, pipeline.process(bodies), strict=True):
                outcomes.extend((name or r.kind, r.outcome) for r in result.reports)
                if result.error is not None:
                    errors.append(result.error)

        karpenter = KarpenterSimulation(emu, clock.now)
        process(all_sample_bodies(), [""] * len(all_sample_bodies()))
        for _ in range(MAX_ROUNDS):
            due = wakeups.next_due()
            if due is None:
                break
            clock.now = max(clock.now, due)
            karpenter.advance(clock.now)
            batch = wakeups.pop_due(clock.now)
            process([encode(w) for w in batch], [str(w.task) for w in batch])
            clock.now += timedelta(seconds=1)
        else:
            pytest.fail(f"wake-ups still pending after {MAX_ROUNDS} rounds: {wakeups.pending}")
        # A finish-replacement follow-up scheduled by an earlier version (which waited for
        # the replacement to be Ready) still comes through the queue after an upgrade.
        spot_sample = (EVENTS / "spot-interruption.json").read_text()
        [spot] = parse_message(spot_sample, received_at=clock.now)
        legacy = Wakeup(
            Task.FINISH_REPLACEMENT,
            spot,
            clock.now,
            replacement="general-from-before",
            old_nodeclaim="general-x3mhb",
            started=clock.now,
        )
        process([encode(legacy)], [str(Task.FINISH_REPLACEMENT)])
        yield Run(emu, outcomes, errors)


def test_the_run_took_every_path_rbac_must_cover(run: Run) -> None:
    """The run is worth checking only if it acted, drained, leased, weighed PDBs and finished
    a replacement."""
    assert not run.errors, run.errors
    seen = set(run.outcomes)
    assert ("spot-interruption", Outcome.ACTED) in seen
    assert ("asg-termination", Outcome.ACTED) in seen
    assert ("rebalance-recommendation", Outcome.DEFERRED) in seen
    assert (str(Task.DECIDE), Outcome.ACTED) in seen  # a deferred notice acted on later
    assert (str(Task.FINISH_REPLACEMENT), Outcome.ACTED) in seen  # old claim deleted
    verbs = {(resource, verb) for _, resource, verb in run.emulator.seen_permissions}
    assert {("leases", "create"), ("leases", "update"), ("pods/eviction", "create")} <= verbs
    assert ("poddisruptionbudgets", "list") in verbs


def test_no_request_was_forbidden(run: Run) -> None:
    rbac = load_rbac()
    refused = [
        entry
        for entry in run.emulator.request_log
        if not rbac.allows(*entry)  # (verb, group, resource, namespace, name)
    ]
    assert refused == []
    assert not [e for e in run.errors if "403" in str(e)]


def test_leases_are_only_touched_in_the_roles_namespace(run: Run) -> None:
    rbac = load_rbac()
    lease_namespaces = {
        namespace
        for _, group, resource, namespace, _ in run.emulator.request_log
        if (group, resource) == ("coordination.k8s.io", "leases")
    }
    assert lease_namespaces == {rbac.role_namespace}


def test_every_permission_used_is_granted(run: Run) -> None:
    assert run.emulator.seen_permissions <= load_rbac().granted()


def test_every_granted_permission_is_used(run: Run) -> None:
    """RBAC stays minimal: a verb no path uses should not be granted."""
    unused = load_rbac().granted() - run.emulator.seen_permissions
    assert unused == GRANTED_BUT_UNUSED, (
        "granted but unused (drop them from deploy/rbac.yaml, or update GRANTED_BUT_UNUSED): "
        f"{sorted(unused)}"
    )


def test_a_permission_missing_from_rbac_is_refused_with_403() -> None:
    """The check above can fail: without the eviction grant, a drain is refused."""
    rbac = load_rbac()
    rules = [r for r in rbac.cluster_rules if r["resources"] != ["pods/eviction"]]
    assert len(rules) == len(rbac.cluster_rules) - 1
    objects = load_cluster_file(EVENTS / "cluster.yaml")
    with Emulator(objects) as emu:
        emu.enforce_rbac(rules + rbac.role_rules)
        pipeline = Pipeline(
            clusters=OneCluster(KubeApi(emu.api_client(), RetryPolicy(attempts=1))),
            directory=directory_from_objects(objects),
            settings=Settings(),
            clock=lambda: START,
            lifecycle=RecordedLifecycle(),
        )
        [result] = pipeline.process([(EVENTS / "asg-termination.json").read_text()])
    assert result.error is not None
    assert "403" in str(result.error)
