"""The instance status sweep's cost at fleet scale: EC2 calls and time for one sweep of a
region holding 5,000 instances across 50 clusters (``lifeboat.aws.sweep``).

EC2 is an in-process stand-in that answers as EC2 does for the calls the sweep makes:
``DescribeInstanceStatus`` filtered server-side by Karpenter's three filter sets
(``instance-status.status``, ``system-status.status``, ``event.code``; only running
instances, ``IncludeAllInstances`` false) and paginated at ``MaxResults`` (1,000 at most),
and ``DescribeInstances`` filtered by ``instance-id``. moto cannot serve here: it ignores
these filters and knows neither ``Events`` nor impairment. Each call is counted, and a fixed
latency per call (``call_ms``) stands for EC2's round trip.

What is timed is the sweep up to the clusters and past the split: the paginated reads, the
parse of every status into notices, the LIST of each managed cluster's nodes labelled
``lifeboat.dev/ec2-maintenance`` (for EC2 events no longer reported; :class:`MarkedNodes`
answers them, ``call_ms`` each), the one directory lookup and the triage that keeps only the
managed clusters' instances, then the split: the first ``NOTICES_PER_MESSAGE`` managed
instances acted on in the sweep's message, the rest handed on as sweep parts (wake-ups
naming instances, for which EC2 is asked again). What each notice then costs in its cluster
is what the per-kind measure (``bench.scenarios.requests_per_kind``) reports for a state change or a
scheduled change.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from lifeboat.aws.sweep import Ec2InstanceStatuses, sweep_request
from lifeboat.flow.pipeline import ClusterClients, Pipeline
from lifeboat.flow.split import NOTICES_PER_MESSAGE, split
from lifeboat.flow.sweep_request import SweepReader
from lifeboat.flow.sweep_triage import Sorted
from lifeboat.marks import node_marks
from lifeboat.marks.maintenance_holds import HOLDS_ANNOTATION
from lifeboat.model.instances import Ec2InstanceDirectory
from lifeboat.model.notice import Kind
from lifeboat.model.settings import Settings
from lifeboat.wakeup.codec import encode

NOW = datetime(2026, 12, 1, 18, 0, tzinfo=UTC)
SCHEDULED_TAINT = node_marks.taint_key(Kind.SCHEDULED_CHANGE)


class _Paginator:
    def __init__(self, ec2: FleetEc2, operation: str) -> None:
        self._ec2 = ec2
        self._operation = operation

    def paginate(self, **params: Any) -> Iterator[dict[str, Any]]:
        began = time.perf_counter()
        if self._operation == "describe_instance_status":
            found = [s for s in self._ec2.statuses if _matches(s, params.get("Filters", []))]
            size = min(int(params.get("MaxResults", 1000)), 1000)
            key = "InstanceStatuses"
        else:
            [wanted] = [f["Values"] for f in params["Filters"] if f["Name"] == "instance-id"]
            ids = set(wanted)
            found = [
                {"Instances": [instance]}
                for instance in self._ec2.instances
                if instance["InstanceId"] in ids
            ]
            size = 1000
            key = "Reservations"
        for start in range(0, max(len(found), 1), size):
            self._ec2.call(self._operation)
            page: dict[str, Any] = {key: found[start : start + size]}
            if start + size < len(found):
                page["NextToken"] = f"token-{start + size}"
            # EC2's side of the call (filtering, the round trip) is not Lifeboat's time.
            self._ec2.server_seconds += time.perf_counter() - began
            yield page
            began = time.perf_counter()


def _matches(status: dict[str, Any], filters: Sequence[dict[str, Any]]) -> bool:
    """EC2's server-side filters the sweep uses (ANDed across names, ORed across values)."""
    for name, values in ((f["Name"], f["Values"]) for f in filters):
        if name == "instance-status.status":
            value = [status["InstanceStatus"]["Status"]]
        elif name == "system-status.status":
            value = [status["SystemStatus"]["Status"]]
        elif name == "event.code":
            value = [event["Code"] for event in status.get("Events", [])]
        else:
            raise ValueError(f"filter {name} is not one the sweep sends")
        if not set(values) & set(value):
            return False
    return True


class FleetEc2:
    """Instances of ``clusters`` clusters (every tenth of a cluster this stack does not
    manage), the first ``impaired`` with a failed instance status check, the next
    ``scheduled`` with a system-reboot event."""

    def __init__(
        self, instances: int, clusters: int, impaired: int, scheduled: int, call_ms: float
    ) -> None:
        self.call_ms = call_ms
        self.calls: dict[str, int] = {}
        self.server_seconds = 0.0
        self.instances: list[dict[str, Any]] = []
        self.statuses: list[dict[str, Any]] = []
        for index in range(instances):
            instance_id = f"i-{index:017x}"
            cluster = f"cluster-{index % clusters:02d}"
            self.instances.append(
                {
                    "InstanceId": instance_id,
                    "PrivateDnsName": f"ip-10-{index // 65536}-{index // 256 % 256}-"
                    f"{index % 256}.ec2.internal",
                    "Placement": {"AvailabilityZone": "us-east-1a"},
                    "InstanceType": "m5.large",
                    "Tags": [
                        {"Key": "eks:cluster-name", "Value": cluster},
                        {"Key": "karpenter.sh/nodepool", "Value": "general"},
                        {"Key": "karpenter.sh/nodeclaim", "Value": f"general-{index:05d}"},
                    ],
                }
            )
            ok = {"Status": "ok", "Details": [{"Name": "reachability", "Status": "passed"}]}
            status: dict[str, Any] = {
                "InstanceId": instance_id,
                "AvailabilityZone": "us-east-1a",
                "InstanceState": {"Code": 16, "Name": "running"},
                "InstanceStatus": ok,
                "SystemStatus": ok,
            }
            if index < impaired:
                status["InstanceStatus"] = {
                    "Status": "impaired",
                    "Details": [
                        {
                            "Name": "reachability",
                            "Status": "failed",
                            "ImpairedSince": NOW - timedelta(minutes=5),
                        }
                    ],
                }
            elif index < impaired + scheduled:
                status["Events"] = [
                    {
                        "InstanceEventId": f"instance-event-{index:017x}",
                        "Code": "system-reboot",
                        "Description": "scheduled reboot",
                        "NotBefore": NOW + timedelta(days=7),
                    }
                ]
            self.statuses.append(status)

    def call(self, operation: str) -> None:
        self.calls[operation] = self.calls.get(operation, 0) + 1
        if self.call_ms:
            time.sleep(self.call_ms / 1000)

    def get_paginator(self, operation: str) -> _Paginator:
        return _Paginator(self, operation)


class MarkedNodes:
    """Each cluster's nodes labelled ``lifeboat.dev/ec2-maintenance`` (what a sweep lists to
    find vanished EC2 events): a node per instance with a scheduled event, and ``ended``
    more whose instances have none any more. Each LIST counted, ``call_ms`` each."""

    def __init__(self, ec2: FleetEc2, clusters: int, ended: int, call_ms: float) -> None:
        self.call_ms = call_ms
        self.lists = 0
        self.patches = 0  # the absence counts written on nodes
        # When the first LIST started and the last ended: the clusters are listed side by
        # side, so this span (not the sum of the calls) is what the lists add to a sweep.
        self.first: float | None = None
        self.last: float | None = None
        self._lock = threading.Lock()
        self.by_cluster: dict[str, list[dict[str, Any]]] = {}
        with_events = [s["InstanceId"] for s in ec2.statuses if s.get("Events")]
        without = [s["InstanceId"] for s in ec2.statuses if not s.get("Events")][-ended:]
        start = node_marks.ec2_maintenance_value(NOW + timedelta(days=7))
        for instance_id in with_events + (without if ended else []):
            index = int(instance_id.removeprefix("i-"), 16)
            # Held for the event; those whose event EC2 no longer lists were missing from
            # the sweeps of the last ten minutes already, so this sweep ends them.
            missing = (
                ',"missing_since":"2026-12-01T17:50:00Z","missing_sweeps":2'
                if instance_id in without
                else ""
            )
            hold = f'[{{"code":"system-reboot","start":"2026-12-08T18:00:00Z"{missing}}}]'
            node = {
                "metadata": {
                    "name": f"node-{index}",
                    "labels": {node_marks.EC2_MAINTENANCE_LABEL: start},
                    "annotations": {HOLDS_ANNOTATION: hold},
                },
                "spec": {
                    "providerID": f"aws:///us-east-1a/{instance_id}",
                    "taints": [{"key": SCHEDULED_TAINT, "effect": "PreferNoSchedule"}],
                },
            }
            self.by_cluster.setdefault(f"cluster-{index % clusters:02d}", []).append(node)

    @property
    def span(self) -> float:
        """Seconds from the first LIST's start to the last one's end."""
        if self.first is None or self.last is None:
            return 0.0
        return self.last - self.first

    def kube(self, cluster: str | None) -> Any:
        marked = self

        class _Kube:
            def list_nodes(self, label_selector: str) -> list[dict[str, Any]]:
                with marked._lock:
                    marked.lists += 1
                    if marked.first is None:
                        marked.first = time.perf_counter()
                if marked.call_ms:
                    time.sleep(marked.call_ms / 1000)
                with marked._lock:
                    marked.last = time.perf_counter()
                return list(marked.by_cluster.get(cluster or "", []))

            def patch_node(self, name: str, operations: list[dict[str, Any]]) -> dict[str, Any]:
                with marked._lock:
                    marked.patches += 1
                if marked.call_ms:
                    time.sleep(marked.call_ms / 1000)
                return {}

        return _Kube()


def sweep_cost(
    instances: int = 5000,
    clusters: int = 50,
    impaired: int = 50,
    scheduled: int = 50,
    call_ms: float = 50.0,
    ended: int = 0,
) -> dict[str, Any]:
    """One sweep: its EC2 calls, notices, and wall milliseconds (read, parse, triage)."""
    ec2 = FleetEc2(instances, clusters, impaired, scheduled, call_ms)
    managed = tuple(f"cluster-{n:02d}" for n in range(clusters) if n % 10 != 9)
    settings = Settings(clusters=managed)
    statuses = Ec2InstanceStatuses(ec2)
    directory = Ec2InstanceDirectory(ec2)
    marked = MarkedNodes(ec2, clusters, ended, call_ms)
    pipeline = Pipeline(
        clusters=cast(ClusterClients, marked),
        directory=directory,
        settings=settings,
        clock=lambda: NOW,
        statuses=statuses,
    )
    started = time.perf_counter()
    # The sweep request's answer (SweepReader.statuses): the statuses read and parsed, the
    # managed clusters' labelled nodes listed for vanished events, every notice triaged
    # (one directory lookup); then the split past what one message acts on.
    swept = SweepReader(pipeline).statuses(sweep_request("bench", NOW.isoformat()), {})
    assert isinstance(swept, Sorted), swept
    now, parts = split(swept.notices, NOTICES_PER_MESSAGE)
    encoded = [encode(part) for part in parts]
    elapsed = time.perf_counter() - started
    to_clusters = swept.notices
    handed_on = sum(len(part.instances) for part in parts)
    return {
        "instances": instances,
        "clusters": clusters,
        "managed_clusters": len(managed),
        "in_trouble": impaired + scheduled,
        "call_ms": call_ms,
        "describe_instance_status_calls": ec2.calls.get("describe_instance_status", 0),
        "describe_instances_calls": ec2.calls.get("describe_instances", 0),
        # One LIST of labelled nodes per managed cluster, for EC2 events no longer reported.
        "node_list_calls": marked.lists,
        "ended": sum(1 for n in to_clusters if n.ends_maintenance),
        "notices": len(to_clusters) + sum(1 for r in swept.reports if r.instance_id),
        "to_clusters": len(to_clusters),
        "unmanaged": sum(1 for r in swept.reports if r.unmanaged),
        "clusters_reached": len(
            {swept.infos[n.instance_id].cluster for n in to_clusters if n.instance_id}
        ),
        # Past NOTICES_PER_MESSAGE instances: acted on in the sweep's message, and handed on
        # as sweep parts (each asks EC2 again about its instances). Their sum is every
        # managed instance in trouble: none waits for a later sweep.
        "acted_in_message": len({n.instance_id for n in now if n.instance_id}),
        "handed_on": handed_on,
        "sweep_parts": len(parts),
        "part_bytes": max((len(body) for body in encoded), default=0),
        "sweep_ms": round(elapsed * 1000, 1),
        "node_lists_ms": round(marked.span * 1000, 1),
        # Lifeboat's own time: the sweep less EC2's side of its calls and the node lists.
        "lifeboat_ms": round((elapsed - ec2.server_seconds - marked.span) * 1000, 1),
    }


def sweeps(instances: int = 5000, clusters: int = 50) -> list[dict[str, Any]]:
    """A usual sweep (2 % of the fleet in trouble), one just past what a message acts on
    (60 impaired), and the worst case (every instance)."""
    half = instances // 2
    return [
        sweep_cost(instances, clusters, impaired=instances // 100, scheduled=instances // 100),
        sweep_cost(instances, clusters, impaired=66, scheduled=0),
        sweep_cost(instances, clusters, impaired=half, scheduled=instances - half),
    ]
