"""The soak's own parts, so that its verdicts can be trusted: the audit sees a second
replacement for one old NodeClaim whatever notice made it, the emulator counts the faults
it injected, and the simulated queue dead-letters a message that always fails."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes import client as k8s

from bench.soak.audit import audit_replacements, read_server, replacements_by_old_claim
from bench.soak.messages import Sent
from bench.soak.queue import OutcomeMetrics, SimulatedQueue
from kubemu import Emulator
from lifeboat.flow.pipeline import MessageResult
from lifeboat.kube.client import KubeApi, KubeError, RetryPolicy
from lifeboat.model.report import Outcome, Report
from tests.support import kube

NOW = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)


def _replacement(old_claim: str, notice: str) -> dict[str, Any]:
    """A replacement as Lifeboat creates it: generateName, the replaces label, the notice."""
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {
            "generateName": "general-",
            "labels": {"karpenter.sh/nodepool": "general", "lifeboat.dev/replaces": old_claim},
            "annotations": {"lifeboat.dev/notice": notice},
        },
        "spec": {"nodeClassRef": dict(kube.NODE_CLASS_REF), "requirements": []},
    }


def _create(emulator: Emulator, claim: dict[str, Any]) -> None:
    api = k8s.CustomObjectsApi(emulator.api_client())
    api.create_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", claim)


def test_two_notices_replacing_one_claim_are_one_claim_replaced_twice() -> None:
    """Per old claim, not per (event, instance): a Spot warning and a state change for the
    same instance are two notices, and still one claim that may be replaced once."""
    other_claim, other_node = kube.nodeclaim_and_node(
        name="general-b4wpl", instance_id="i-0a1b2c3d4e5f60002", node_name="ip-10-0-1-12"
    )
    objects = [kube.nodepool(), *kube.nodeclaim_and_node(), other_claim, other_node]
    with Emulator(objects) as emulator:
        _create(emulator, _replacement("general-7xkqz", "spot-1#i-0a1b2c3d4e5f60001"))
        _create(emulator, _replacement("general-7xkqz", "state-1#i-0a1b2c3d4e5f60001"))
        _create(emulator, _replacement("general-b4wpl", "spot-2#i-0a1b2c3d4e5f60002"))
        server = read_server(emulator, ["general-7xkqz", "general-b4wpl"])
    assert server.claim_creates == 3
    assert replacements_by_old_claim(server) == {"general-7xkqz": 2, "general-b4wpl": 1}
    assert audit_replacements(server) == [
        "2 replacement NodeClaims for old NodeClaim general-7xkqz"
    ]


def test_a_created_claim_without_the_replaces_label_is_reported() -> None:
    with Emulator([kube.nodepool()]) as emulator:
        unlabelled = _replacement("general-7xkqz", "spot-1#i-1")
        del unlabelled["metadata"]["labels"]["lifeboat.dev/replaces"]
        _create(emulator, unlabelled)
        problems = audit_replacements(read_server(emulator, []))
    assert len(problems) == 1
    assert "created without lifeboat.dev/replaces" in problems[0]


def test_the_emulator_counts_the_faults_it_injected() -> None:
    """``Emulator.answers``: what the soak asserts its faults were met by."""
    with Emulator([kube.node()]) as emulator:
        api = KubeApi(emulator.api_client(), RetryPolicy(attempts=1, request_timeout=0.2))
        emulator.fail_next(503, times=2, verb="get", resource="nodes")
        for _ in range(2):
            with pytest.raises(KubeError) as failed:
                api.get_node(kube.NODE)
            assert failed.value.status == 503
        assert api.get_node(kube.NODE) is not None
        assert api.get_node("no-such-node") is None
        emulator.set_fault_rate(rate=0.0, timeout_rate=1.0, timeout_delay=0.4)
        with pytest.raises(KubeError) as dropped:
            api.get_node(kube.NODE)
        assert dropped.value.status == 0  # no answer
        emulator.clear_faults()
        answers = emulator.answers
    assert answers["503"] == 2
    assert answers["200"] == 1
    assert answers["404"] == 1
    assert answers["dropped"] == 1


class _AlwaysFailing:
    """A pipeline whose every message fails (a node whose API calls always answer 500)."""

    clock = staticmethod(lambda: NOW)

    def process(self, bodies: Sequence[Any], **_: Any) -> list[MessageResult]:
        return [MessageResult(error=KubeError(500, "injected")) for _ in bodies]


class _ActsOnEverything:
    clock = staticmethod(lambda: NOW)

    def process(self, bodies: Sequence[Any], **_: Any) -> list[MessageResult]:
        reports = [
            Report(json.loads(b)["id"], "spot-interruption", Outcome.ACTED, "acted") for b in bodies
        ]
        return [MessageResult([report]) for report in reports]


def _queue(pipeline: Any) -> SimulatedQueue:
    return SimulatedQueue(
        pipeline,
        batch_size=10,
        max_receive=5,
        visibility=0.0,
        context=None,
        metrics=OutcomeMetrics(),
    )


def test_a_message_that_always_fails_is_dead_lettered_after_max_receive() -> None:
    queue = _queue(_AlwaysFailing())
    poison = Sent("m-1", json.dumps({"id": "e1"}), "poison", "e1")
    queue.send([poison])
    queue.drain()
    assert poison.dead_lettered and queue.dead == [poison]
    assert poison.receive_count == 5 and len(poison.errors) == 5
    assert poison.reports is None
    # One message alone in its batch: handle_batch raises (every record failed), and the
    # whole invocation fails, as Lambda sees it.
    assert queue.stats.batch_errors == 5 and queue.stats.violations == []


def test_deleted_messages_carry_the_decisions_handle_batch_logged_for_them() -> None:
    queue = _queue(_ActsOnEverything())
    messages = [
        Sent(f"m-{i}", json.dumps({"id": f"e{i}"}), "spot-interruption", f"e{i}") for i in range(12)
    ]
    queue.send(messages)
    queue.drain()
    assert queue.stats.batches == 2
    assert [[r.event_id for r in m.reports or []] for m in messages] == [
        [f"e{i}"] for i in range(12)
    ]
    assert queue.metrics.counts["Outcomes.acted"] == 12
