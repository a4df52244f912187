"""Planned rotation through the real pipeline, on the emulator (official client over HTTP),
with Karpenter, the workload controllers and the scheduler simulated between two moves of
the clock: the sample's legacy node group, and Karpenter nodes inside their NodePool's
budget and window.

The behaviours checked are the issue's: node by node (``maxInFlight``), cordon and drain
through the Eviction API honouring PodDisruptionBudgets (``pods/eviction`` answers 429 while
a PDB forbids it, as the disruption controller's ``DisruptionsAllowed`` says), each node's
evicted pods Ready elsewhere before the next node is touched (the health gate), do-not-
disrupt and NodePool budgets and windows as Karpenter counts them, a failed gate stopping the
rotation, pause, resume and cancel, and once-only handling of each command.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta
from typing import Any

import pytest

from kubemu import Emulator
from lifeboat.kube import nodes
from lifeboat.marks import node_marks
from lifeboat.model.report import Outcome
from lifeboat.model.settings import Settings
from lifeboat.rotation import store
from lifeboat.rotation.model import NodePhase, Phase
from lifeboat.wakeup.codec import Task, encode
from tests.support.rotation_rig import (
    LEGACY,
    START,
    Rig,
    control,
    minutes,
    pods_on,
    request,
    rig,
    sample_objects,
    serving,
)


def controller_uid(pod: dict[str, Any]) -> str | None:
    for ref in pod["metadata"].get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") != "DaemonSet":
            return str(ref["uid"])
    return None


def serving_count(emu: Emulator, owner: str, *, not_on: str | None = None) -> int:
    return sum(
        1
        for p in emu.objects("Pod")
        if controller_uid(p) == owner and serving(p) and p["spec"].get("nodeName") != not_on
    )


# -- a node group, node by node ------------------------------------------------------------------


def test_a_node_group_rotates_node_by_node_each_nodes_pods_ready_elsewhere_first() -> None:
    with rig() as r:
        owners = {
            name: {u for p in pods_on(r.emu, name) if (u := controller_uid(p))} for name in LEGACY
        }
        before = {u: serving_count(r.emu, u) for us in owners.values() for u in us}
        cordoned: dict[str, datetime] = {}
        storefront_low = []
        found: dict[str, int] = {}  # Ready pods per owner, outside the node it was on

        def look(rig_: Rig) -> None:  # the cluster as this round's wake-ups find it
            found.clear()
            for earlier, us in owners.items():
                for owner in us:
                    found[f"{earlier}/{owner}"] = serving_count(rig_.emu, owner, not_on=earlier)

        def check(rig_: Rig) -> None:
            # PDB shop/storefront (minAvailable 2) is never broken by the drains.
            storefront = serving_count(rig_.emu, "7a2b0000-0000-4000-8000-500000000001")
            if storefront < 2:
                storefront_low.append((rig_.clock.now, storefront))
            for index, name in enumerate(LEGACY):
                if name in cordoned or not rig_.out_of_service(name):
                    continue
                cordoned[name] = rig_.clock.now
                # When it was touched, every earlier node's workloads ran as many Ready pods
                # elsewhere as before the rotation.
                for earlier in LEGACY[:index]:
                    for owner in owners[earlier]:
                        assert found[f"{earlier}/{owner}"] >= before[owner], (name, earlier)

        reports = r.send(request())
        check(r)
        r.follow(each=check, before=look)

        assert [o for (o,) in [(rep.outcome,) for rep in reports[:2]]] == [Outcome.ACTED] * 2
        assert "3 node(s) selected by eks.amazonaws.com/nodegroup=legacy" in reports[0].reason
        assert reports[1].node == LEGACY[0]  # oldest first
        assert list(cordoned) == LEGACY
        assert cordoned[LEGACY[0]] < cordoned[LEGACY[1]] < cordoned[LEGACY[2]]
        assert storefront_low == []
        # The second storefront pod of node 21 waited for the first one's replacement.
        held = [rep for _, rep in r.log if "held by PodDisruptionBudgets" in rep.reason]
        assert held and held[0].node == LEGACY[0]

        rotation = r.rotation()
        assert rotation.phase is Phase.COMPLETED
        assert [n.phase for n in rotation.nodes] == [NodePhase.DONE] * 3
        assert rotation.next_tick is not None and not r.wakeups.pending  # nothing left
        for name in LEGACY:  # only DaemonSet pods are left on (or went with) the old nodes
            assert all(controller_uid(p) is None for p in pods_on(r.emu, name))
        for owner, count in before.items():
            assert serving_count(r.emu, owner) == count
        reasons = Counter(e["reason"] for e in r.emu.objects("Event"))
        on_configmap = Counter(
            e["reason"]
            for e in r.emu.objects("Event")
            if e["involvedObject"]["kind"] == "ConfigMap"
        )
        assert on_configmap == {
            "RotationRequested": 1,
            "RotationNodeDone": 3,
            "RotationCompleted": 1,
        }, reasons
        for name in LEGACY:
            node_events = [
                e["reason"] for e in r.emu.objects("Event") if e["involvedObject"]["name"] == name
            ]
            assert "Rotation" in node_events and "RotationNodeDone" in node_events


def test_the_state_lives_in_a_configmap_kubectl_and_status_can_read() -> None:
    with rig() as r:
        r.send(request())
        configmap = r.emu.get_object(
            "ConfigMap", "lifeboat-rotation-legacy-to-karpenter", "lifeboat"
        )
        assert configmap is not None
        labels = configmap["metadata"]["labels"]
        assert labels[store.NAME_LABEL] == "legacy-to-karpenter"
        assert labels[store.PHASE_LABEL] == "running"
        assert configmap["data"]["summary"].startswith("running: 0 of 3 node(s) done, 1 in flight")
        assert store.read(configmap).rotation.node(LEGACY[0]).phase is NodePhase.DRAINING


# -- Karpenter nodes: budgets and windows ---------------------------------------------------------


def general_zone_b() -> dict[str, Any]:
    """NodePool general's two nodes in us-east-1b, both at once if the pool allows."""
    labels = {"karpenter.sh/nodepool": "general", "topology.kubernetes.io/zone": "us-east-1b"}
    # The health gate covers the wait for the window (its clock starts when a node is first
    # held back): 14:05 to 17:00 and the replacement's drain.
    return request(
        "zone-b",
        rotation="zone-b",
        selector={"labels": labels},
        maxInFlight=2,
        healthGate={"timeoutSeconds": 4 * 3600},
    ) | {"id": "6f3d9a2e-4b1c-4e8f-9a7d-2c5b8e1f0b01"}


ZONE_B = ["ip-10-0-1-12.ec2.internal", "ip-10-0-1-17.ec2.internal"]


def disrupting_general(emu: Emulator) -> int:
    """Nodes of pool general disrupting as Karpenter counts them (plus Lifeboat's taint)."""
    claims = {nodes.name_of(c): c for c in emu.objects("NodeClaim")}
    count = 0
    for node in emu.objects("Node"):
        if nodes.labels_of(node).get(nodes.NODEPOOL_LABEL) != "general":
            continue
        owner = nodes.nodeclaim_owner(node)
        claim = claims.get(owner[0]) if owner else None
        deleting = claim is None or bool(claim["metadata"].get("deletionTimestamp"))
        if node_marks.is_disrupting(node) or deleting:
            count += 1
    return count


def test_karpenter_nodes_wait_for_the_window_then_are_replaced_within_the_budget() -> None:
    """Tuesday 14:05 is inside general's weekday freeze (budget "0" 09:00-17:00): nothing is
    cordoned before 17:00; then the budget (20 % of 6 = 2) lets both go, each replaced by a
    NodeClaim before its old claim is deleted and Karpenter drains it."""
    with rig() as r:
        reports = r.send(general_zone_b())
        started = [rep for rep in reports if rep.node in ZONE_B and not rep.rotation_change]
        assert [rep.outcome for rep in started] == [Outcome.DEFERRED] * 2
        assert all(rep.deferred_until == START.replace(hour=17, minute=0) for rep in started)
        assert all(r.marked(name) and not r.out_of_service(name) for name in ZONE_B)

        seen_disrupting = []
        r.follow(until=START.replace(hour=16, minute=59))
        assert not any(r.out_of_service(name) for name in ZONE_B)
        assert r.rotation("zone-b").in_phase(NodePhase.WAITING)
        r.follow(each=lambda rig_: seen_disrupting.append(disrupting_general(rig_.emu)))

        rotation = r.rotation("zone-b")
        assert rotation.phase is Phase.COMPLETED, rotation.summary()
        assert max(seen_disrupting) == 2  # the budget: 2 at once, never more
        replacements = [
            c for c in r.emu.objects("NodeClaim") if node_marks.REPLACES_LABEL in nodes.labels_of(c)
        ]
        assert len(replacements) == 2
        # Karpenter drains and removes them (its termination controller, simulated, goes on
        # after Lifeboat's last step).
        r.advance_to(r.clock.now + minutes(10))
        assert all(r.node(name) is None for name in ZONE_B)
        acted = [
            (t, rep) for t, rep in r.log if rep.node in ZONE_B and rep.outcome is Outcome.ACTED
        ]
        assert min(t for t, _ in acted) == START.replace(hour=17, minute=0)


def test_a_tighter_budget_takes_the_nodes_one_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    objects = sample_objects()
    for obj in objects:
        if obj["kind"] == "NodePool" and obj["metadata"]["name"] == "general":
            obj["spec"]["disruption"]["budgets"] = [{"nodes": "1"}]
    with rig(objects) as r:
        reports = r.send(general_zone_b())
        outcomes = [rep.outcome for rep in reports if rep.node in ZONE_B]
        assert outcomes == [Outcome.ACTED, Outcome.DEFERRED]
        seen: list[int] = []
        r.follow(each=lambda rig_: seen.append(disrupting_general(rig_.emu)))
        assert r.rotation("zone-b").phase is Phase.COMPLETED
        assert max(seen) == 1


# -- do-not-disrupt --------------------------------------------------------------------------------


def with_do_not_disrupt(pod_name: str) -> list[dict[str, Any]]:
    objects = sample_objects()
    for obj in objects:
        if obj["kind"] == "Pod" and obj["metadata"]["name"] == pod_name:
            obj["metadata"].setdefault("annotations", {})[nodes.DO_NOT_DISRUPT] = "true"
    return objects


def test_do_not_disrupt_holds_the_node_and_the_rotation_behind_it() -> None:
    with rig(with_do_not_disrupt("storefront-7b9c6d5f4-k2v8n")) as r:
        # A gate long enough for the 30 minutes the annotation stays (its clock starts when
        # the node is first held back).
        [_, first] = r.send(request(healthGate={"timeoutSeconds": 3600}))
        assert first.outcome is Outcome.DEFERRED
        assert "do-not-disrupt" in first.reason
        r.follow(until=START + minutes(30))
        assert r.marked(LEGACY[0]) and not any(r.out_of_service(n) for n in LEGACY)
        assert r.rotation().node(LEGACY[1]).phase is NodePhase.PENDING
        # The annotation goes; the node's next look (every 5 min) acts, and the rotation on.
        pod = r.emu.get_object("Pod", "storefront-7b9c6d5f4-k2v8n", "shop")
        assert pod is not None
        del pod["metadata"]["annotations"][nodes.DO_NOT_DISRUPT]
        r.emu.put_object(pod)
        r.follow()
        assert r.rotation().phase is Phase.COMPLETED
        decided = [t for t, rep in r.log if rep.node == LEGACY[0] and rep.outcome is Outcome.ACTED]
        assert START + minutes(30) < decided[0] <= START + minutes(35)


# -- the health gate -------------------------------------------------------------------------------


def pinned_to_first_node() -> list[dict[str, Any]]:
    """shop/storefront's pods need a node labelled disktype=ssd, and only ip-10-0-4-21 is:
    evicted from it, they can run nowhere."""
    objects = sample_objects()
    for obj in objects:
        if obj["kind"] == "Pod" and obj["metadata"]["name"].startswith("storefront-"):
            obj["spec"]["nodeSelector"] = {"disktype": "ssd"}
        if obj["kind"] == "Node" and obj["metadata"]["name"] == LEGACY[0]:
            obj["metadata"]["labels"]["disktype"] = "ssd"
    return objects


def test_a_failed_health_gate_stops_the_rotation_touching_no_further_node() -> None:
    with rig(pinned_to_first_node()) as r:
        r.send(request(maxInFlight=1, healthGate={"timeoutSeconds": 300}))
        r.follow()
        rotation = r.rotation()
        assert rotation.phase is Phase.FAILED
        first = rotation.node(LEGACY[0])
        assert first.phase is NodePhase.FAILED
        assert "ReplicaSet shop/storefront-7b9c6d5f4 1 of 3 Ready elsewhere" in first.note
        assert first.since is not None and first.gate_started is not None
        assert first.since - first.gate_started == timedelta(minutes=5)
        # Nothing more was touched, and nothing is left to wake up.
        assert not r.out_of_service(LEGACY[1]) and not r.out_of_service(LEGACY[2])
        assert [n.phase for n in rotation.nodes[1:]] == [NodePhase.RELEASED] * 2
        assert not r.wakeups.pending
        stopped = [
            rep
            for _, rep in r.log
            if "health gate" in rep.reason and rep.outcome is Outcome.IGNORED
        ]
        assert stopped and "touching no further node" in stopped[-1].reason
        warnings = [e for e in r.events("RotationHealthGateFailed") if e["type"] == "Warning"]
        assert {e["involvedObject"]["kind"] for e in warnings} == {"ConfigMap", "Node"}
        # Its drain stopped too: the pod the PDB held back was not evicted later.
        assert any(
            p["metadata"]["name"].startswith("storefront-") for p in pods_on(r.emu, LEGACY[0])
        )

        # The operator gives the storefront nodes it may run on (the general pool's, which
        # have room for its pods), and resumes: the failed node is taken up again (its
        # drain, then its gate), then the rotation goes on.
        for ssd in r.emu.objects("Node"):
            if nodes.labels_of(ssd).get(nodes.NODEPOOL_LABEL) == "general":
                ssd["metadata"]["labels"]["disktype"] = "ssd"
                r.emu.put_object(ssd)
        r.clock.now += minutes(30)
        [resumed] = r.send(control("resume", "a1000000-0000-4000-8000-000000000009"))[:1]
        assert resumed.outcome is Outcome.ACTED
        r.follow()
        assert r.rotation().phase is Phase.COMPLETED
        assert [n.phase for n in r.rotation().nodes] == [NodePhase.DONE] * 3


# -- pause, resume, cancel -------------------------------------------------------------------------


def test_pause_lets_the_node_in_flight_finish_and_starts_no_other_until_resumed() -> None:
    with rig() as r:
        r.send(request())
        r.clock.now += timedelta(seconds=10)
        [paused] = r.send(control("pause", "a1000000-0000-4000-8000-000000000001"))
        assert paused.outcome is Outcome.ACTED and "paused" in paused.reason
        r.follow()
        rotation = r.rotation()
        assert rotation.phase is Phase.PAUSED
        assert [n.phase for n in rotation.nodes] == [
            NodePhase.DONE,
            NodePhase.PENDING,
            NodePhase.PENDING,
        ]
        assert not r.wakeups.pending  # nothing polls a paused rotation with nothing in flight
        r.clock.now = START + minutes(60)
        resumed = r.send(control("resume", "a1000000-0000-4000-8000-000000000002"))
        assert [rep.node for rep in resumed if rep.node] == [LEGACY[1]]
        assert r.out_of_service(LEGACY[1])
        r.follow()
        assert r.rotation().phase is Phase.COMPLETED


def test_a_paused_rotation_holds_its_waiting_node_even_when_it_could_go() -> None:
    with rig(with_do_not_disrupt("storefront-7b9c6d5f4-k2v8n")) as r:
        r.send(request(healthGate={"timeoutSeconds": 3600}))
        r.clock.now += minutes(1)
        r.send(control("pause", "a1000000-0000-4000-8000-000000000006"))
        pod = r.emu.get_object("Pod", "storefront-7b9c6d5f4-k2v8n", "shop")
        assert pod is not None
        del pod["metadata"]["annotations"][nodes.DO_NOT_DISRUPT]
        r.emu.put_object(pod)  # nothing holds the node any more but the pause
        r.follow(until=START + minutes(30))
        assert r.marked(LEGACY[0]) and not r.out_of_service(LEGACY[0])
        held = [rep for _, rep in r.log if rep.wakeup == str(Task.DECIDE)]
        assert held and all(rep.outcome is Outcome.DEFERRED for rep in held)
        assert "is paused: the node waits for it to resume" in held[-1].reason
        r.send(control("resume", "a1000000-0000-4000-8000-000000000007"))
        r.follow()
        assert r.rotation().phase is Phase.COMPLETED
        acted = [t for t, rep in r.log if rep.node == LEGACY[0] and rep.outcome is Outcome.ACTED]
        assert START + minutes(30) < acted[0] <= START + minutes(35)


def test_cancel_lets_a_waiting_node_go_and_never_starts_the_others() -> None:
    with rig(with_do_not_disrupt("storefront-7b9c6d5f4-k2v8n")) as r:
        r.send(request())
        assert r.marked(LEGACY[0])
        r.clock.now += minutes(2)
        [cancelled] = r.send(control("cancel", "a1000000-0000-4000-8000-000000000003"))
        assert cancelled.outcome is Outcome.ACTED and "cancelled" in cancelled.reason
        assert not r.marked(LEGACY[0])  # its waiting mark is gone with it
        r.follow()
        rotation = r.rotation()
        assert rotation.phase is Phase.CANCELLED
        assert [n.phase for n in rotation.nodes] == [NodePhase.RELEASED] * 3
        assert not any(r.out_of_service(n) or r.marked(n) for n in LEGACY)
        # The node's own deferred decision came back once, found the rotation cancelled.
        let_go = [rep for _, rep in r.log if rep.wakeup == str(Task.DECIDE)]
        assert [rep.outcome for rep in let_go] == [Outcome.IGNORED]
        assert "cancelled: node let go" in let_go[0].reason


def test_a_command_for_no_rotation_or_in_the_wrong_phase_changes_nothing() -> None:
    with rig() as r:
        [missing] = r.send(control("pause", "a1000000-0000-4000-8000-000000000004"))
        assert (
            missing.outcome is Outcome.IGNORED
            and "no rotation legacy-to-karpenter" in missing.reason
        )
        r.send(request())
        [resume] = r.send(control("resume", "a1000000-0000-4000-8000-000000000005"))
        assert resume.outcome is Outcome.IGNORED and "it is running" in resume.reason


# -- once per command ------------------------------------------------------------------------------


def test_each_command_acts_once_and_a_running_rotation_is_not_requested_again() -> None:
    with rig() as r:
        first = r.send(request())
        assert first[0].outcome is Outcome.ACTED
        [again] = r.send(request())  # a redelivery of the same event
        assert (again.outcome, again.reason) == (
            Outcome.IGNORED,
            "duplicate delivery: already handled",
        )
        other = request() | {"id": "6f3d9a2e-4b1c-4e8f-9a7d-2c5b8e1f0c01"}
        [refused] = r.send(other)
        assert refused.outcome is Outcome.IGNORED and "exists and is running" in refused.reason
        r.follow()
        # The refused event stays handled; once finished, a new request may reuse the name.
        [refused_again] = r.send(other)
        assert refused_again.reason == "duplicate delivery: already handled"
        r.clock.now += minutes(5)
        system = {"labels": {"eks.amazonaws.com/nodegroup": "system"}}
        renewed = request(selector=system) | {"id": "6f3d9a2e-4b1c-4e8f-9a7d-2c5b8e1f0c02"}
        reports = r.send(renewed)
        assert reports[0].outcome is Outcome.ACTED
        assert r.rotation().request_id == renewed["id"]
        assert [n.name for n in r.rotation().nodes] == ["ip-10-0-3-16.ec2.internal"]


def test_without_a_ledger_the_state_still_tells_a_redelivery() -> None:
    with rig(ledger=None) as r:
        r.pipeline.ledger = None
        r.send(request())
        [again] = r.send(request())
        assert again.outcome is Outcome.IGNORED and "duplicate" in again.reason


def test_two_looks_at_once_start_one_node() -> None:
    """Every look delivered twice and handled concurrently, up to the moment the first
    node's gate passes: the state's guarded write lets one of them start the next node and
    hand it to the pipeline, never both."""
    with rig(workers=2) as r:
        r.send(request())
        r.emu.latency = 0.01  # both looks read before either writes
        started = []
        for _ in range(100):
            if r.rotation().node(LEGACY[1]).phase is not NodePhase.PENDING:
                break
            due = r.wakeups.next_due()
            assert due is not None
            r.advance_to(due)
            for wakeup in r.wakeups.pop_due(due):
                reports = r.send(encode(wakeup), encode(wakeup))
                started += [rep for rep in reports if rep.node == LEGACY[1] and rep.actions]
        assert len(started) == 1, started
        after = r.rotation()
        assert after.node(LEGACY[0]).phase is NodePhase.DONE
        assert [n.name for n in after.in_flight] == [LEGACY[1]]


# -- what cannot be read, and dry runs -------------------------------------------------------------


def test_an_unreadable_state_is_reported_not_retried() -> None:
    with rig() as r:
        r.send(request())
        configmap = r.emu.get_object(
            "ConfigMap", "lifeboat-rotation-legacy-to-karpenter", "lifeboat"
        )
        assert configmap is not None
        configmap["data"]["state.json"] = '{"spec": {"name": "x"}}'
        r.emu.put_object(configmap)
        tick = next(w for w in r.wakeups.pending.values() if w.task is Task.ROTATE)
        r.clock.now = tick.due
        [report] = r.send(encode(tick))
        assert report.outcome is Outcome.IGNORED
        assert "state unreadable" in report.reason and "request_id" in report.reason


def test_a_dry_run_decides_the_first_node_and_changes_nothing() -> None:
    with rig(settings=Settings(dry_run=True)) as r:
        reports = r.send(request())
        assert reports[0].reason.startswith(
            "dry run, nothing changed: rotation legacy-to-karpenter"
        )
        assert reports[1].node == LEGACY[0] and reports[1].reason.startswith("dry run")
        assert r.emu.objects("ConfigMap") == []
        assert not any(r.out_of_service(n) for n in LEGACY)
        assert not r.wakeups.pending
