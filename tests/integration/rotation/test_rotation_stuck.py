"""Issue 22, item 5: a rotation never calls a stuck node done.

A node a PodDisruptionBudget never lets drain (Kubernetes' Eviction API answers 429 while
``disruptionsAllowed`` is 0, ``pkg/registry/core/pod/storage/eviction.go``; Lifeboat defers
it as Karpenter's ``ValidatePodsDisruptable`` skips such a candidate), or one whose pod keeps
``karpenter.sh/do-not-disrupt``, is held back before it is cordoned. The health gate's clock
starts when it is first held back; when it runs out, the node fails, naming what held it, and
the rotation stops ``failed`` touching no further node (as a failed health gate does: the
operator must fix the blocker, then resume). ``lifeboat status`` exits non-zero unless every
node is done, so a script waiting to scale the group down keeps waiting.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from kubemu import dump_cluster_file
from lifeboat.aws.notify import GIVE_UP, detail_type
from lifeboat.kube import nodes
from lifeboat.rotation.model import NodePhase, Phase
from lifeboat_local.exits import EXIT_NOT_DONE
from tests.conftest import CliRun
from tests.support.rotation_rig import (
    LEGACY,
    START,
    minutes,
    pods_on,
    request,
    rig,
    sample_objects,
)


def _session_cache_never_allows() -> list[dict[str, Any]]:
    """PDB shop/session-cache at ``maxUnavailable: 0``: its pods (session-cache-0 on the
    second node, session-cache-1 on the third) may never be evicted."""
    objects = sample_objects()
    for obj in objects:
        if obj["kind"] == "PodDisruptionBudget" and obj["metadata"]["name"] == "session-cache":
            obj["spec"]["maxUnavailable"] = 0
            obj.setdefault("status", {})["disruptionsAllowed"] = 0
    return objects


def test_a_node_whose_pdb_never_allows_fails_the_rotation_and_status_says_not_done(
    cli: Callable[..., CliRun], tmp_path: Path
) -> None:
    """The done-when of issue 22: 3-node group, the second node's PDB never allows an
    eviction. The first node rotates; the second is held back and fails after the gate
    (600 s from its first hold-back), naming the PDB; the third is never touched after the
    failure; the rotation is ``failed``, not ``completed``; ``lifeboat status`` exits 4."""
    with rig(_session_cache_never_allows()) as r:
        touched_after_failure: list[str] = []

        def check(rig_: Any) -> None:
            rotation = rig_.rotation()
            if rotation.phase is Phase.FAILED:
                for name in LEGACY[1:]:
                    if rig_.out_of_service(name) or rig_.marked(name):
                        touched_after_failure.append(name)

        r.send(request())
        r.follow(each=check)
        rotation = r.rotation()
        assert rotation.phase is Phase.FAILED, rotation.summary()
        first, second, third = (rotation.node(name) for name in LEGACY)
        assert first.phase is NodePhase.DONE
        assert second.phase is NodePhase.FAILED
        assert "held back, never drained" in second.note
        assert "PDB shop/session-cache" in second.note
        assert second.gate_started is not None and second.since is not None
        assert second.since - second.gate_started >= minutes(10)
        assert "PDB shop/session-cache" in rotation.reason
        assert third.phase is NodePhase.RELEASED
        # Never cordoned, its pods still there, nothing left marked or scheduled.
        assert touched_after_failure == []
        assert not r.out_of_service(LEGACY[1]) and not r.marked(LEGACY[1])
        assert any(p["metadata"]["name"] == "session-cache-0" for p in pods_on(r.emu, LEGACY[1]))
        assert not r.out_of_service(LEGACY[2])
        assert not r.wakeups.pending
        # The Event names the blocker, on the node and on the rotation's ConfigMap.
        blocked = r.events("RotationNodeBlocked")
        assert {e["involvedObject"]["kind"] for e in blocked} == {"ConfigMap", "Node"}
        assert all("PDB shop/session-cache" in e["message"] for e in blocked)
        assert all(e["type"] == "Warning" for e in blocked)

        # ... and so does the notification (a give-up, published as one).
        given_up = [rep for _, rep in r.log if rep.gave_up]
        assert given_up and all(detail_type(rep) == GIVE_UP for rep in given_up)
        assert any("PDB shop/session-cache" in rep.reason for rep in given_up)

        state = tmp_path / "state.yaml"
        dump_cluster_file(r.emu.objects(), state)
    status = cli("status", "--cluster", state)
    assert status.code == EXIT_NOT_DONE, status.err
    assert status.out.startswith("rotation legacy-to-karpenter: failed (health gate of")


def test_a_do_not_disrupt_that_never_ends_names_the_pod() -> None:
    with rig(_with_do_not_disrupt("storefront-7b9c6d5f4-k2v8n")) as r:
        r.send(request(healthGate={"timeoutSeconds": 900}))
        r.follow()
        rotation = r.rotation()
        assert rotation.phase is Phase.FAILED
        first = rotation.node(LEGACY[0])
        assert first.phase is NodePhase.FAILED
        assert "shop/storefront-7b9c6d5f4-k2v8n" in first.note
        assert "do-not-disrupt" in first.note
        assert first.since is not None and first.since - START >= minutes(15)
        assert not any(r.out_of_service(name) for name in LEGACY)


def _with_do_not_disrupt(pod_name: str) -> list[dict[str, Any]]:
    objects = sample_objects()
    for obj in objects:
        if obj["kind"] == "Pod" and obj["metadata"]["name"] == pod_name:
            obj["metadata"].setdefault("annotations", {})[nodes.DO_NOT_DISRUPT] = "true"
    return objects
