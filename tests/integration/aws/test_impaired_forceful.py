"""Issue 34, item 1: an impaired Karpenter node is forced out as Karpenter >= 1.13 forces it.

aws/karpenter-provider-aws ``pkg/controllers/interruption/utils.go`` (#9198, fixing #9173):
``actionForMessage`` maps an instance or system status failure to ``ForcefulTermination``;
``handleNodeClaim`` then calls ``annotateTerminationTimestamp`` (the claim's
``karpenter.sh/nodeclaim-termination-timestamp`` = ``clk.Now().Format(time.RFC3339)``, unless it
already has one) before ``deleteNodeClaim``. Core's termination controller reads that annotation
(``nodeTerminationTime``, kubernetes-sigs/karpenter since v1.0.0): past it, pods are deleted,
not evicted, and volume detachment is not waited for. Scheduled maintenance and the queue's
kinds stay ``CordonAndDrain`` (no annotation; its suite: "should NOT annotate the NodeClaim
with a termination timestamp for scheduled maintenance events").

Lifeboat: the replacement first (Karpenter's poller makes none; Lifeboat's point), then the
annotation, then the delete; through the real ``kubernetes`` client to the emulator.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from lifeboat.aws.sweep import sweep_request
from lifeboat.karpenter.forceful import TERMINATION_TIMESTAMP
from tests.integration.aws.test_instance_status import (
    KARPENTER_CLAIM,
    KARPENTER_INSTANCE,
    KARPENTER_NODE,
    NOW,
    Rig,
    instance_status,
    make_rig,
    one_set,
    stub_sweep,
    types,
)
from tests.support.paths import EVENTS

STAMP = "2026-12-01T18:00:00Z"  # NOW as Go's time.RFC3339 prints it in UTC


@pytest.fixture
def rig() -> Iterator[Rig]:
    yield from make_rig()


def _claim_writes(rig: Rig) -> list[tuple[str, str]]:
    """(verb, name) of every write to a NodeClaim, in the order the emulator served them."""
    return [
        (verb, name)
        for verb, _group, resource, _ns, name in rig.emulator.request_log
        if resource == "nodeclaims" and verb in ("create", "patch", "delete")
    ]


def test_an_impaired_claim_is_annotated_with_now_then_deleted_after_its_replacement(
    rig: Rig,
) -> None:
    """``handleNodeClaim`` ForcefulTermination: annotate, then delete; Lifeboat creates the
    replacement before both. The replacement carries no termination timestamp."""
    rig.emulator.reset_counts()
    [report] = rig.sweep(
        instance_status(KARPENTER_INSTANCE, impaired_since=NOW - timedelta(minutes=3))
    )
    assert report.outcome == "acted"
    assert types(report) == [
        "taint",
        "cordon",
        "label",  # exclude_from_load_balancers
        "create-nodeclaim",
        "annotate-nodeclaim",
        "delete-nodeclaim",
    ]
    [create, annotate] = [
        a for a in report.actions if a["type"] in ("create-nodeclaim", "annotate-nodeclaim")
    ]
    assert annotate == {
        "type": "annotate-nodeclaim",
        "name": KARPENTER_CLAIM,
        "key": TERMINATION_TIMESTAMP,
        "value": STAMP,
    }
    assert "terminates the node forcefully" in report.reason
    old = rig.claim(KARPENTER_CLAIM)
    assert old["metadata"]["annotations"][TERMINATION_TIMESTAMP] == STAMP
    assert old["metadata"].get("deletionTimestamp")
    replacement = rig.claim(create["name"])
    assert TERMINATION_TIMESTAMP not in replacement["metadata"].get("annotations", {})
    writes = _claim_writes(rig)
    assert [verb for verb, _ in writes] == ["create", "patch", "delete"]
    assert [name for _, name in writes[1:]] == [KARPENTER_CLAIM, KARPENTER_CLAIM]


def test_a_termination_timestamp_already_there_is_kept(rig: Rig) -> None:
    """``annotateTerminationTimestamp`` returns at once when the annotation exists (an
    earlier poll, or a grace period's deadline): never moved, only reported."""
    claim = rig.claim(KARPENTER_CLAIM)
    claim["metadata"]["annotations"][TERMINATION_TIMESTAMP] = "2026-12-01T17:00:00Z"
    rig.emulator.put_object(claim)
    [report] = rig.sweep(
        instance_status(KARPENTER_INSTANCE, impaired_since=NOW - timedelta(minutes=3))
    )
    [annotate] = [a for a in report.actions if a["type"] == "annotate-nodeclaim"]
    assert annotate["value"] == "2026-12-01T17:00:00Z" and annotate["existing"] is True
    after = rig.claim(KARPENTER_CLAIM)
    assert after["metadata"]["annotations"][TERMINATION_TIMESTAMP] == "2026-12-01T17:00:00Z"
    assert after["metadata"].get("deletionTimestamp")


def test_a_claim_changed_under_the_annotation_is_read_again_not_overwritten(rig: Rig) -> None:
    """The patch tests the claim's resourceVersion: a write between the read and the patch
    (here Karpenter's, adding a label) makes it fail (422); the claim is read again and
    annotated on the fresh copy, the other write kept."""
    api = rig.pipeline.clusters.kube(None)
    real_get = api.get_nodeclaim
    touched = {"done": False}

    def get_then_touch(name: str) -> dict[str, Any] | None:
        claim = real_get(name)
        if name == KARPENTER_CLAIM and not touched["done"] and claim is not None:
            touched["done"] = True
            fresh = rig.claim(KARPENTER_CLAIM)
            fresh["metadata"]["labels"]["touched-by"] = "karpenter"
            rig.emulator.put_object(fresh)
        return claim

    api.get_nodeclaim = get_then_touch  # type: ignore[method-assign]
    [report] = rig.sweep(
        instance_status(KARPENTER_INSTANCE, impaired_since=NOW - timedelta(minutes=3))
    )
    assert touched["done"]
    assert "annotate-nodeclaim" in types(report)
    after = rig.claim(KARPENTER_CLAIM)
    assert after["metadata"]["annotations"][TERMINATION_TIMESTAMP] == STAMP
    assert after["metadata"]["labels"]["touched-by"] == "karpenter"


def test_a_spot_interruption_is_drained_gently_without_the_annotation(rig: Rig) -> None:
    """``actionForMessage``: a Spot interruption is CordonAndDrain; no termination timestamp
    (Karpenter's drain honours PDBs until the claim's own grace period)."""
    event = json.loads((EVENTS / "spot-interruption.json").read_text())
    [report] = rig.send(event)
    assert report.outcome == "acted"
    assert "annotate-nodeclaim" not in types(report)
    assert "forcefully" not in report.reason
    for claim in rig.emulator.objects("NodeClaim"):
        assert TERMINATION_TIMESTAMP not in claim["metadata"].get("annotations", {})


def test_a_claim_karpenter_deletes_gently_is_forced_without_a_second_delete(rig: Rig) -> None:
    """Karpenter already deletes the claim (its queue's CordonAndDrain, a drift) without a
    termination timestamp, and the instance is then found impaired: Karpenter >= 1.13 still
    annotates it (``annotateTerminationTimestamp`` runs before ``deleteNodeClaim`` returns
    for a claim being deleted), so its drain stuck on a PDB is forced. Lifeboat does the
    same: the annotation only; no replacement (Karpenter makes capacity for the drained
    pods), no second delete. A claim already annotated gets nothing (test_instance_status)."""
    for obj in (rig.claim(KARPENTER_CLAIM), rig.node(KARPENTER_NODE)):
        obj["metadata"]["deletionTimestamp"] = "2026-12-01T17:59:00Z"
        obj["metadata"]["finalizers"] = ["karpenter.sh/termination"]
        rig.emulator.put_object(obj)
    before = rig.claims()
    rig.emulator.reset_counts()
    [report] = rig.sweep(
        instance_status(KARPENTER_INSTANCE, impaired_since=NOW - timedelta(minutes=3))
    )
    assert report.outcome == "acted"
    assert "already being deleted" in report.reason and "forcing it" in report.reason
    assert types(report) == ["annotate-nodeclaim", "delete-nodeclaim"]
    assert report.actions[1].get("existing") is True
    assert rig.claim(KARPENTER_CLAIM)["metadata"]["annotations"][TERMINATION_TIMESTAMP] == STAMP
    assert rig.claims() == before
    assert _claim_writes(rig) == [("patch", KARPENTER_CLAIM)]


@pytest.mark.parametrize(
    "forged",
    [
        "2099-01-01T00:00:00Z",  # far future: the gentle drain would go on for decades
        "not-a-time",  # core's nodeTerminationTime fails "parsing annotation" forever
        "2026-12-01",  # a date alone: Go's time.Parse(time.RFC3339) refuses it
        "x" * 100_000,  # huge: replaced, and reported shortened
    ],
    ids=["future", "words", "date-only", "huge"],
)
def test_a_forged_termination_timestamp_is_replaced_by_now(rig: Rig, forged: str) -> None:
    """Hostile review of issue 34.1: a stamp in the future or unparsable on an impaired
    claim. The provider's ``annotateTerminationTimestamp`` keeps any value, but core's
    termination controller (``nodeTerminationTime``) fails on one it cannot parse and the node
    is never deleted, and a future one keeps the gentle drain going. Lifeboat follows core's
    node repair (``annotateTerminationGracePeriod``, pkg/controllers/node/health: only a
    parsable past time is kept): the stamp becomes now, the forged value reported shortened."""
    claim = rig.claim(KARPENTER_CLAIM)
    claim["metadata"]["annotations"][TERMINATION_TIMESTAMP] = forged
    rig.emulator.put_object(claim)
    [report] = rig.sweep(
        instance_status(KARPENTER_INSTANCE, impaired_since=NOW - timedelta(minutes=3))
    )
    [annotate] = [a for a in report.actions if a["type"] == "annotate-nodeclaim"]
    assert annotate["value"] == STAMP and "existing" not in annotate
    assert annotate["replaced"] == (forged if len(forged) <= 64 else forged[:64] + "...")
    after = rig.claim(KARPENTER_CLAIM)
    assert after["metadata"]["annotations"][TERMINATION_TIMESTAMP] == STAMP
    assert after["metadata"].get("deletionTimestamp")


def test_a_claim_being_deleted_with_a_future_grace_deadline_is_forced_now(rig: Rig) -> None:
    """Karpenter's lifecycle controller deletes a claim with a ``terminationGracePeriod`` of
    48 h and stamps deletion + 48 h; then its instance is impaired. That stamp is not in
    effect: Lifeboat sets now (core's ``annotateTerminationGracePeriod`` overwrites a future
    time) rather than leave the broken node draining gently for two days; no second delete."""
    for obj in (rig.claim(KARPENTER_CLAIM), rig.node(KARPENTER_NODE)):
        obj["metadata"]["deletionTimestamp"] = "2026-12-01T17:59:00Z"
        obj["metadata"]["finalizers"] = ["karpenter.sh/termination"]
        if obj["kind"] == "NodeClaim":
            obj["metadata"]["annotations"][TERMINATION_TIMESTAMP] = "2026-12-03T17:59:00Z"
        rig.emulator.put_object(obj)
    rig.emulator.reset_counts()
    [report] = rig.sweep(
        instance_status(KARPENTER_INSTANCE, impaired_since=NOW - timedelta(minutes=3))
    )
    assert report.outcome == "acted" and "forcing it" in report.reason
    assert types(report) == ["annotate-nodeclaim", "delete-nodeclaim"]
    assert report.actions[0]["replaced"] == "2026-12-03T17:59:00Z"
    assert rig.claim(KARPENTER_CLAIM)["metadata"]["annotations"][TERMINATION_TIMESTAMP] == STAMP
    assert _claim_writes(rig) == [("patch", KARPENTER_CLAIM)]


def test_a_past_stamp_with_an_offset_is_kept(rig: Rig) -> None:
    """A parsable past time in another zone is in effect: kept, never moved (both
    ``annotateTerminationTimestamp`` and ``annotateTerminationGracePeriod`` keep it)."""
    claim = rig.claim(KARPENTER_CLAIM)
    claim["metadata"]["annotations"][TERMINATION_TIMESTAMP] = "2026-12-01T18:30:00+01:00"
    rig.emulator.put_object(claim)
    [report] = rig.sweep(
        instance_status(KARPENTER_INSTANCE, impaired_since=NOW - timedelta(minutes=3))
    )
    [annotate] = [a for a in report.actions if a["type"] == "annotate-nodeclaim"]
    assert annotate["existing"] is True and annotate["value"] == "2026-12-01T18:30:00+01:00"


def test_a_crash_between_the_annotation_and_the_delete_is_finished_by_the_next_sweep(
    rig: Rig,
) -> None:
    """Hostile review of 34.1: the delete fails (500 through every retry) after the
    annotation was written. The next sweep, two minutes later, keeps the first stamp (in
    effect: ``annotateTerminationTimestamp`` never moves it) and deletes the claim; the
    replacement made the first time is not made again."""
    rig.emulator.fail_next(
        500, times=10, verb="delete", resource="nodeclaims", name=KARPENTER_CLAIM
    )
    stub_sweep(
        rig.stubber,
        *one_set([instance_status(KARPENTER_INSTANCE, impaired_since=NOW - timedelta(minutes=3))]),
    )
    request = sweep_request("sweep-crash", rig.now.isoformat())
    [first] = rig.pipeline.process([json.dumps(request)])
    assert first.error is not None
    claim = rig.claim(KARPENTER_CLAIM)
    assert claim["metadata"]["annotations"][TERMINATION_TIMESTAMP] == STAMP
    assert not claim["metadata"].get("deletionTimestamp")
    claims_before = {c["metadata"]["name"] for c in rig.emulator.objects("NodeClaim")}
    rig.emulator.clear_faults()
    rig.now = NOW + timedelta(minutes=2)
    [report] = rig.sweep(
        instance_status(KARPENTER_INSTANCE, impaired_since=NOW - timedelta(minutes=3))
    )
    [annotate] = [a for a in report.actions if a["type"] == "annotate-nodeclaim"]
    assert annotate == {**annotate, "value": STAMP, "existing": True}
    after = rig.claim(KARPENTER_CLAIM)
    assert after["metadata"]["annotations"][TERMINATION_TIMESTAMP] == STAMP
    assert after["metadata"].get("deletionTimestamp")
    assert {c["metadata"]["name"] for c in rig.emulator.objects("NodeClaim")} == claims_before
