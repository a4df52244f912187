"""A NodeClaim name that came back as another claim (``ClaimDeleter.delete``).

Lifeboat knows the old claim by name and uid (the Node's ownerReference, which Karpenter's
``registration.go`` sets). When a notice is delivered again after the replacement was made,
the old claim is read back before deleting it: if that name now belongs to a claim with
another uid, the old claim is gone (deleted, terminated) and the namesake is someone else's,
so nothing is deleted and the old claim's deletion is reported as done before.

On the real kubernetes client over HTTP to the emulator, through the pipeline.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from kubemu import Emulator, load_cluster_file
from lifeboat.flow.pipeline import OneCluster, Pipeline
from lifeboat.kube.client import KubeApi, RetryPolicy
from lifeboat.model.report import Report
from lifeboat.model.settings import Settings
from lifeboat_local.directory import directory_from_objects
from tests.support.events import aws_event
from tests.support.paths import EVENTS

NOW = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)
OLD_CLAIM = "general-7xkqz"  # the claim of i-0a1b2c3d4e5f60001's node ip-10-0-1-11
NAMESAKE_UID = "99999999-0000-4000-8000-000000000001"


@pytest.fixture
def cluster() -> Iterator[tuple[Emulator, list[dict[str, Any]]]]:
    objects = load_cluster_file(EVENTS / "cluster.yaml")
    with Emulator(objects) as emulator:
        yield emulator, objects


def deliver(cluster: tuple[Emulator, list[dict[str, Any]]], event: dict[str, Any]) -> Report:
    emulator, objects = cluster
    pipeline = Pipeline(
        clusters=OneCluster(KubeApi(emulator.api_client(), RetryPolicy(attempts=1))),
        directory=directory_from_objects(objects, cluster="prod"),
        settings=Settings(clusters=("prod",)),
        clock=lambda: NOW,
    )
    [result] = pipeline.process([event])
    assert result.error is None, result.error
    [report] = result.reports
    return report


def claim_actions(report: Report) -> list[dict[str, Any]]:
    return [a for a in report.actions if a["type"] in ("create-nodeclaim", "delete-nodeclaim")]


def test_a_redelivered_notice_never_deletes_a_namesake_of_the_old_claim(
    cluster: tuple[Emulator, list[dict[str, Any]]],
) -> None:
    emulator, _ = cluster
    spot = aws_event("spot-interruption", instance="i-0a1b2c3d4e5f60001", event_id="spot-1")
    first = deliver(cluster, spot)
    [created, deleted] = claim_actions(first)
    assert deleted == {"type": "delete-nodeclaim", "name": OLD_CLAIM}

    # Karpenter finished with the old claim, and a new claim took its name.
    old = emulator.get_object("NodeClaim", OLD_CLAIM)
    assert old is not None and old["metadata"]["deletionTimestamp"]
    assert emulator.delete_object("NodeClaim", OLD_CLAIM)
    namesake = {**old, "metadata": {**old["metadata"], "uid": NAMESAKE_UID, "finalizers": []}}
    del namesake["metadata"]["deletionTimestamp"]
    emulator.put_object(namesake)
    emulator.reset_counts()

    again = deliver(cluster, spot)

    assert claim_actions(again) == [
        {"type": "create-nodeclaim", "name": created["name"], "existing": True},
        {"type": "delete-nodeclaim", "name": OLD_CLAIM, "existing": True},
    ]
    deletes = [e for e in emulator.request_log if e[0] == "delete" and e[2] == "nodeclaims"]
    assert deletes == []
    kept = emulator.get_object("NodeClaim", OLD_CLAIM)
    assert kept is not None
    assert kept["metadata"]["uid"] == NAMESAKE_UID
    assert not kept["metadata"].get("deletionTimestamp")
