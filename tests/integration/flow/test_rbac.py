"""deploy/rbac.yaml against what Lifeboat really does to a cluster.

Every sample is replayed on the emulator enforcing the rules of rbac.yaml, then the deferred
work is followed through time (wake-ups due, with the replay's Karpenter simulation launching
replacements and terminating nodes between steps), and a follow-up an earlier version
scheduled (finish a replacement) is handled too. Two promises are checked:

* enough: no request was refused, and every request is allowed by the rules *as a real API
  server scopes them* (each Role's rules only in its namespace: the leases in "lifeboat",
  the node Events in "default");
* minimal: every granted (group, resource, verb) is used by some path.

The emulator's authorizer takes one flat rule list and cannot scope a Role to a namespace,
so it is given the ClusterRole's and the Roles' rules together; the namespace scope of the
Roles is checked here on the request log instead (RBAC's RoleBinding semantics: a Role's
rules apply to requests in the binding's namespace only).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kubemu import Emulator, load_cluster_file
from kubemu.rbac import Request, rule_allows
from lifeboat.events import parse_message
from lifeboat.flow.pipeline import OneCluster, Pipeline
from lifeboat.kube.client import KubeApi, RetryPolicy
from lifeboat.model.ledger import MemoryLedger
from lifeboat.model.report import Outcome
from lifeboat.model.settings import Settings
from lifeboat.wakeup.codec import MemoryWakeups, Task, Wakeup, encode
from lifeboat_local.directory import directory_from_objects
from lifeboat_local.karpenter_sim import KarpenterSimulation
from lifeboat_local.replay import RecordedLifecycle, SimulatedClock
from tests.support import cyaml
from tests.support.paths import EVENTS, ROOT

START = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)
# Following wake-ups must end well before this many rounds (each round is one batch).
MAX_ROUNDS = 60

Permission = tuple[str, str, str]  # (group, resource, verb), as seen_permissions has it

# Granted in rbac.yaml but used by no code path (see the minimality test). Reported to the
# lead rather than removed here; empty this set when rbac.yaml drops them or code uses them.
# Used only by the when-ready hand-over (not the default), whose run under this RBAC is
# test_hand_over_when_ready.py::test_the_when_ready_hand_over_needs_only_what_rbac_grants.
GRANTED_BUT_UNUSED: set[Permission] = {("karpenter.sh", "nodeclaims", "patch")}


@dataclass(frozen=True)
class Rbac:
    cluster_rules: list[dict[str, Any]]
    # namespace -> the rules of the Roles bound there
    role_rules_by_namespace: dict[str, list[dict[str, Any]]]

    @property
    def role_rules(self) -> list[dict[str, Any]]:
        return [rule for rules in self.role_rules_by_namespace.values() for rule in rules]

    @property
    def lease_namespace(self) -> str:
        [namespace] = [
            namespace
            for namespace, rules in self.role_rules_by_namespace.items()
            if any("leases" in rule["resources"] for rule in rules)
        ]
        return namespace

    def allows(self, verb: str, group: str, resource: str, namespace: str, name: str) -> bool:
        request = Request(verb, group, resource, namespace, name)
        if any(rule_allows(rule, request) for rule in self.cluster_rules):
            return True
        return any(
            rule_allows(rule, request) for rule in self.role_rules_by_namespace.get(namespace, [])
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
    documents = list(cyaml.safe_load_all((ROOT / "deploy/rbac.yaml").read_text()))
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for document in documents:
        by_kind.setdefault(document["kind"], []).append(document)
    # Every binding names the group the access entry maps the function's role to.
    for binding in by_kind["ClusterRoleBinding"] + by_kind["RoleBinding"]:
        assert [s["name"] for s in binding["subjects"]] == ["lifeboat"]
    [cluster_role] = by_kind["ClusterRole"]
    roles: dict[str, list[dict[str, Any]]] = {}
    for role in by_kind["Role"]:
        roles.setdefault(role["metadata"]["namespace"], []).extend(role["rules"])
    return Rbac(cluster_role["rules"], roles)


def all_sample_bodies() -> list[str]:
    """Every sample: the EventBridge ones, the raw lifecycle-hook messages, and the request to
    rotate the legacy node group (its state lives in a ConfigMap)."""
    paths = sorted(EVENTS.glob("*.json")) + sorted((EVENTS / "raw").glob("*.json"))
    paths.append(EVENTS / "rotation" / "legacy-to-karpenter.json")
    assert len(paths) >= 9
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
            settings=Settings(lease_namespace=rbac.lease_namespace),
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
        # It names a node still there at the end of the run: ip-10-0-2-19's instance and
        # claim (a wake-up acts only on a claim whose providerID names its instance).
        spot_sample = (EVENTS / "spot-interruption.json").read_text()
        spot_sample = spot_sample.replace("i-0a1b2c3d4e5f60001", "i-0a1b2c3d4e5f60009")
        spot_sample = spot_sample.replace("us-east-1a:instance", "us-east-1c:instance")
        [spot] = parse_message(spot_sample, received_at=clock.now)
        x3mhb = emu.get_object("NodeClaim", "general-x3mhb")
        assert x3mhb is not None
        legacy = Wakeup(
            Task.FINISH_REPLACEMENT,
            spot,
            clock.now,
            replacement="general-from-before",
            old_nodeclaim="general-x3mhb",
            old_nodeclaim_uid=x3mhb["metadata"]["uid"],
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
    assert ("rotation", Outcome.ACTED) in seen  # a rotation requested, its nodes drained
    assert (str(Task.ROTATE), Outcome.DEFERRED) in seen  # a look waiting on a health gate
    assert (str(Task.ROTATE), Outcome.ACTED) in seen  # a health gate passed, a node started
    verbs = {(resource, verb) for _, resource, verb in run.emulator.seen_permissions}
    assert {("leases", "create"), ("leases", "update"), ("pods/eviction", "create")} <= verbs
    assert {("configmaps", "create"), ("configmaps", "update")} <= verbs
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
    assert lease_namespaces == {rbac.lease_namespace}


def test_events_are_only_created_in_default_and_lifeboats_namespace(run: Run) -> None:
    """Regression (least privilege): `events: create` was a ClusterRole rule, so the
    function could write Events into every namespace. Node Events go to "default" (where
    `kubectl describe node` shows them, recorder.EVENT_NAMESPACE) and a rotation's Events
    to its ConfigMap's namespace, Lifeboat's own; only Roles there grant it, and a request
    for Events anywhere else would be refused."""
    rbac = load_rbac()
    event_namespaces = {
        namespace
        for verb, group, resource, namespace, _ in run.emulator.request_log
        if (group, resource, verb) == ("", "events", "create")
    }
    assert event_namespaces == {"default", rbac.lease_namespace}
    assert rbac.allows("create", "", "events", "default", "")
    assert rbac.allows("create", "", "events", "lifeboat", "")
    assert not rbac.allows("create", "", "events", "kube-system", "")
    assert not rbac.allows("create", "", "events", "shop", "")


def test_configmaps_are_only_touched_in_the_roles_namespace(run: Run) -> None:
    """A rotation's state: the Role grants ConfigMaps in Lifeboat's namespace, no other."""
    rbac = load_rbac()
    namespaces = {
        namespace
        for _, group, resource, namespace, _ in run.emulator.request_log
        if (group, resource) == ("", "configmaps")
    }
    assert namespaces == {rbac.lease_namespace}


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
