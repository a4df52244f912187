"""A sweep of any size, one path: every notice triaged before anything is split, the
managed instances past what one message acts on handed on as sweep parts (EC2 asked again
about them), and ``lifeboat replay`` of the same answer taking the same path.

DescribeInstanceStatus answers for the whole region, in EC2's order: 55 impaired instances
of another workload listed before 5 impaired nodes of the managed cluster once left the 5
unreached (the first 50 notices of the message were the other workload's, and the
remainder of impaired notices was refused by the wake-up codec). Each test here failed so.

The cluster is node-group nodes on the emulator through the real ``kubernetes`` client (an
impaired node group node is tainted, cordoned and drained: Lifeboat's own drain).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.stub import Stubber

from kubemu import Emulator
from lifeboat.aws.sweep import Ec2InstanceStatuses, sweep_request
from lifeboat.flow.pipeline import OneCluster, Pipeline
from lifeboat.flow.split import NOTICES_PER_MESSAGE
from lifeboat.kube.client import KubeApi
from lifeboat.model.instances import InstanceInfo, StaticInstanceDirectory
from lifeboat.model.ledger import MemoryLedger
from lifeboat.model.report import Report
from lifeboat.model.settings import Settings
from lifeboat.wakeup.codec import MemoryWakeups, Task, encode
from tests.integration.aws.test_instance_status import ec2_client, instance_status

NOW = datetime(2026, 12, 1, 18, 0, tzinfo=UTC)
SINCE = NOW - timedelta(minutes=5)


def instance(n: int, prefix: str = "a") -> str:
    return f"i-0{prefix}{n:015x}"


def node(n: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": f"node-{n:03d}",
            "labels": {"topology.kubernetes.io/zone": "us-east-1a"},
            "annotations": {},
        },
        "spec": {"providerID": f"aws:///us-east-1a/{instance(n)}"},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


class Fleet:
    """``managed`` impaired nodes of cluster prod, ``others`` impaired instances of a
    cluster this stack does not serve, listed first (EC2's order)."""

    def __init__(self, emulator: Emulator, managed: int, others: int) -> None:
        self.emulator = emulator
        self.managed = [instance(n) for n in range(managed)]
        self.others = [instance(n, "b") for n in range(others)]
        directory = StaticInstanceDirectory(
            [
                InstanceInfo(i, node_name=f"node-{n:03d}", cluster="prod", zone="us-east-1a")
                for n, i in enumerate(self.managed)
            ]
            + [InstanceInfo(i, cluster="someone-elses") for i in self.others]
        )
        self.ec2 = ec2_client()
        self.stubber = Stubber(self.ec2)
        self.stubber.activate()
        self.wakeups = MemoryWakeups()
        self.pipeline = Pipeline(
            clusters=OneCluster(KubeApi(emulator.api_client())),
            directory=directory,
            settings=Settings(clusters=("prod",)),
            clock=lambda: NOW,
            wakeups=self.wakeups,
            ledger=MemoryLedger(),
            notices_per_message=NOTICES_PER_MESSAGE,
            statuses=Ec2InstanceStatuses(self.ec2),
        )

    def statuses(self, ids: list[str]) -> list[dict[str, Any]]:
        return [instance_status(i, impaired_since=SINCE, zone="us-east-1a") for i in ids]

    def sweep(self) -> list[Report]:
        """The sweep's message, then every sweep part it handed on (each asks EC2 about its
        instances: the Stubber checks the InstanceIds asked)."""
        everything = self.others + self.managed
        answers: list[list[dict[str, Any]]] = [self.statuses(everything), [], []]
        for statuses in answers:  # one page per filter set
            self.stubber.add_response("describe_instance_status", {"InstanceStatuses": statuses})
        [result] = self.pipeline.process([json.dumps(sweep_request("sweep-1", NOW.isoformat()))])
        assert result.error is None, result.error
        reports = list(result.reports)
        for part in self.wakeups.pop_due(NOW + timedelta(minutes=1)):
            assert part.task is Task.SWEEP_PART, part
            self.stubber.add_response(
                "describe_instance_status",
                {"InstanceStatuses": self.statuses(list(part.instances))},
                {"InstanceIds": list(part.instances)},
            )
            [more] = self.pipeline.process([encode(part)])
            assert more.error is None, more.error
            reports += more.reports
        self.stubber.assert_no_pending_responses()
        return reports

    def cordoned(self) -> int:
        return sum(
            1 for n in self.emulator.objects("Node") if n["spec"].get("unschedulable") is True
        )


def fleet(managed: int, others: int) -> Iterator[Fleet]:
    with Emulator([node(n) for n in range(managed)]) as emulator:
        built = Fleet(emulator, managed, others)
        yield built
        built.stubber.deactivate()


def acted_on(reports: list[Report]) -> set[str]:
    return {r.instance_id for r in reports if r.outcome == "acted" and r.instance_id}


def test_55_impaired_of_another_workload_listed_first_leave_no_managed_node_unreached() -> None:
    for rig in fleet(5, 55):
        reports = rig.sweep()
        assert acted_on(reports) == set(rig.managed)
        assert rig.cordoned() == 5
        unmanaged = [r for r in reports if r.unmanaged]
        assert {r.instance_id for r in unmanaged} == set(rig.others)
        # Triaged before the split: the 5 fit one message, nothing is handed on.
        assert rig.wakeups.pending == {}


def test_60_impaired_managed_nodes_are_all_acted_on_in_the_sweep_that_reports_them() -> None:
    """50 in the sweep's message, 10 in one sweep part that asks EC2 about those 10 again
    (a wake-up carries their ids, never what EC2 said of them)."""
    for rig in fleet(60, 0):
        reports = rig.sweep()
        assert acted_on(reports) == set(rig.managed)
        assert rig.cordoned() == 60
        # The next sweep finds them all handled already.
        rig.stubber.add_response(
            "describe_instance_status", {"InstanceStatuses": rig.statuses(rig.managed)}
        )
        for _ in range(2):
            rig.stubber.add_response("describe_instance_status", {"InstanceStatuses": []})
        request = sweep_request("sweep-2", NOW.isoformat())
        [again] = rig.pipeline.process([json.dumps(request)])
        assert all("duplicate" in r.reason for r in again.reports if r.instance_id), again


def test_a_sweep_part_carrying_what_ec2_said_is_refused() -> None:
    """A part names instances only: one whose notice claims a start or an end (EC2's word
    copied into the queue) is rejected, as any forged wake-up."""
    from lifeboat.events.notice import Kind, Notice
    from lifeboat.wakeup.codec import Wakeup

    for rig in fleet(1, 0):
        forged = Wakeup(
            Task.SWEEP_PART,
            Notice(
                kind=Kind.SCHEDULED_CHANGE,
                event_id="x",
                event_time=NOW,
                deadline=NOW,
                ends_maintenance=True,
            ),
            NOW,
            instances=tuple(rig.managed),
        )
        [result] = rig.pipeline.process([encode(forged)])
        [report] = result.reports
        assert report.outcome == "rejected" and "sweep-part" in report.reason
        assert rig.cordoned() == 0


@pytest.mark.parametrize("count", [60])
def test_replay_of_the_same_answer_takes_the_same_path(count: int, tmp_path: Any) -> None:
    """``lifeboat replay`` of a saved answer naming 55 others and 5 managed, and of 60
    managed: the same nodes acted on as the Lambda's sweep (through its sweep, no split)."""
    from lifeboat_local.cli import main

    objects = [node(n) for n in range(count)]
    cluster = tmp_path / "cluster.json"
    cluster.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    answer = {
        "InstanceStatuses": [
            json.loads(json.dumps(s, default=str))
            for s in [
                instance_status(instance(n), impaired_since=SINCE, zone="us-east-1a")
                for n in range(count)
            ]
        ],
        "ResponseMetadata": {"HTTPHeaders": {"date": "Tue, 01 Dec 2026 18:00:00 GMT"}},
    }
    saved = tmp_path / "answer.json"
    saved.write_text(json.dumps(answer))
    out = tmp_path / "out.jsonl"
    with out.open("w") as stream:
        import contextlib

        with contextlib.redirect_stdout(stream):
            status = main(
                ["replay", str(saved), "--cluster", str(cluster), "--json", "--at", NOW.isoformat()]
            )
    records = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    assert status == 0, records
    acted = {r["instance_id"] for r in records if r["outcome"] == "acted"}
    assert acted == {instance(n) for n in range(count)}


def test_replay_of_complete_answers_ends_a_maintenance_that_vanished(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Saved complete answers replayed as a timeline (each at its ``date`` header's offset):
    the node group node cordoned for a system-reboot (``scheduled-change=cordon``: the
    simulation terminates a drained node group node) is given back once the event has been
    missing from three answers over five minutes, as the Lambda's sweeps would. Before, a
    saved answer was parsed as a message and never ended anything."""
    from lifeboat_local.cli import main
    from tests.integration.aws.test_instance_status import (
        NODE_GROUP_INSTANCE,
        NODE_GROUP_NODE,
        scheduled_event,
    )
    from tests.support.paths import EVENTS

    def answer(minute: int, *statuses: dict[str, Any]) -> Any:
        at = NOW + timedelta(minutes=minute)
        body = {
            "InstanceStatuses": [json.loads(json.dumps(s, default=str)) for s in statuses],
            "ResponseMetadata": {"HTTPHeaders": {"date": at.strftime("%a, %d %b %Y %H:%M:%S GMT")}},
        }
        path = tmp_path / f"answer-{minute:02d}.json"
        path.write_text(json.dumps(body))
        return path

    monkeypatch.setenv("LIFEBOAT_KIND_ACTIONS", "scheduled-change=cordon")
    event = scheduled_event("system-reboot", NOW + timedelta(days=7))
    listed = instance_status(NODE_GROUP_INSTANCE, events=[event], zone="us-east-1a")
    files = [answer(0, listed), answer(1), answer(4), answer(7)]
    state = tmp_path / "state.yaml"
    out = tmp_path / "out.jsonl"
    import contextlib

    with out.open("w") as stream, contextlib.redirect_stdout(stream):
        status = main(
            [
                "replay",
                *map(str, files),
                "--cluster",
                str(EVENTS / "cluster.yaml"),
                "--json",
                "--at",
                NOW.isoformat(),
                "--state-out",
                str(state),
            ]
        )
    records = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    assert status == 0, records
    mine = [r for r in records if r["instance_id"] == NODE_GROUP_INSTANCE]
    assert mine[0]["outcome"] == "acted" and mine[0]["kind"] == "scheduled-change"
    counting = mine[1:-1]
    assert counting and all("missing from" in r["reason"] for r in counting)
    assert mine[-1]["outcome"] == "acted" and "is over" in mine[-1]["reason"], mine[-1]
    from kubemu import load_cluster_file

    [after] = [o for o in load_cluster_file(state) if o["metadata"]["name"] == NODE_GROUP_NODE]
    assert not after["spec"].get("unschedulable")
