"""A node about to go leaves load balancers first: Lifeboat labels it
``node.kubernetes.io/exclude-from-external-load-balancers`` in the patch that taints and
cordons it, through the real ``kubernetes`` client against the emulator, and the operator's
view is checked with the stock ``kubectl``.

The rule relied on is Kubernetes' ("Well-Known Labels, Annotations and Taints",
``LabelNodeExcludeBalancers``): the service controller (``nodeIncludedPredicate``) and the
AWS Load Balancer Controller leave a node carrying the label, whatever its value, out of load
balancers' targets, as a label selector on the key alone selects it. The Node Termination
Handler's ``excludeFromLoadBalancers`` does the same on cordon. The emulator does not run a
load balancer controller: what is tested is the label on the Node as the API serves it.
"""

from __future__ import annotations

import copy
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kubemu import Emulator, load_cluster_file
from lifeboat.events.notice import Kind
from lifeboat.flow.pipeline import OneCluster, Pipeline
from lifeboat.kube import nodes
from lifeboat.kube.client import KubeApi, RetryPolicy
from lifeboat.marks import node_marks
from lifeboat.model.ledger import MemoryLedger
from lifeboat.model.report import Report
from lifeboat.model.settings import Settings
from lifeboat.wakeup.codec import MemoryWakeups
from lifeboat_local.directory import directory_from_objects
from tests.support.events import SAMPLE_TIME, aws_event
from tests.support.kubeconfigs import write_kubeconfig
from tests.support.paths import EVENTS

LABEL = nodes.EXCLUDE_FROM_LOAD_BALANCERS_LABEL
OWNED = node_marks.EXCLUDED_BY_LIFEBOAT_ANNOTATION
SPOT_NODE = "ip-10-0-1-11.ec2.internal"
REBALANCE_NODE = "ip-10-0-1-12.ec2.internal"
REBALANCE_INSTANCE = "i-0a1b2c3d4e5f60002"
# general's weekday freeze is 09:00-17:00 UTC: a Monday 08:00 is outside it.
BEFORE_THE_FREEZE = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)
PRODUCTION = Settings(kind_actions={Kind.REBALANCE_RECOMMENDATION: "cordon"})
KUBECTL = shutil.which("kubectl")
needs_kubectl = pytest.mark.skipif(
    KUBECTL is None, reason="kubectl is not installed (CI has it: /usr/bin/kubectl)"
)


@dataclass
class Cluster:
    emulator: Emulator
    objects: list[dict[str, Any]]
    kubeconfig: Path

    def handle(self, event: dict[str, Any], settings: Settings, now: datetime) -> Report:
        """One event through the pipeline ``lifeboat replay`` and the Lambda run."""
        pipeline = Pipeline(
            clusters=OneCluster(KubeApi(self.emulator.api_client(), RetryPolicy(attempts=2))),
            directory=directory_from_objects(self.objects),
            settings=settings,
            clock=lambda: now,
            wakeups=MemoryWakeups(),
            ledger=MemoryLedger(),
        )
        [result] = pipeline.process([event])
        assert result.error is None, result.error
        [report] = result.reports
        return report

    def node(self, name: str) -> dict[str, Any]:
        node = self.emulator.get_object("Node", name)
        assert node is not None
        return node

    def kubectl(self, *args: str) -> str:
        assert KUBECTL is not None
        done = subprocess.run(
            [KUBECTL, f"--kubeconfig={self.kubeconfig}", *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
        return done.stdout

    def excluded_nodes(self) -> set[str]:
        """What a load balancer controller's label selector on the key selects."""
        listed = self.kubectl("get", "nodes", "-l", LABEL, "-o", "name")
        return {line.removeprefix("node/") for line in listed.split()}

    def opt_out_general(self) -> None:
        pool = self.emulator.get_object("NodePool", "general")
        assert pool is not None
        pool["metadata"]["annotations"][node_marks.OPT_OUT_ANNOTATION] = "true"
        self.emulator.put_object(pool)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    objects = copy.deepcopy(load_cluster_file(EVENTS / "cluster.yaml"))
    with Emulator(objects) as emulator:
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", emulator.url)
        yield Cluster(emulator, objects, kubeconfig)


def label_actions(report: Report) -> list[dict[str, Any]]:
    return [a for a in report.actions if a["type"] in ("label", "unlabel")]


def test_a_spot_interruption_labels_the_node_in_its_one_taint_and_cordon_patch(
    cluster: Cluster,
) -> None:
    cluster.emulator.reset_counts()
    report = cluster.handle(aws_event("spot-interruption"), Settings(), SAMPLE_TIME)
    assert report.outcome == "acted"
    assert [a["type"] for a in report.actions][:3] == ["taint", "cordon", "label"]
    assert label_actions(report) == [{"type": "label", "key": LABEL, "value": "true"}]
    node = cluster.node(SPOT_NODE)
    assert nodes.labels_of(node)[LABEL] == "true"
    assert nodes.annotations_of(node)[OWNED] == "true"
    assert node["spec"]["unschedulable"] is True
    # The label costs no request of its own: one patch of the node did it all.
    assert cluster.emulator.requests_by_resource[("patch", "nodes")] == 1


@needs_kubectl
def test_the_labelled_node_is_what_a_label_selector_on_the_key_selects(cluster: Cluster) -> None:
    assert cluster.excluded_nodes() == set()
    cluster.handle(aws_event("spot-interruption"), Settings(), SAMPLE_TIME)
    assert cluster.excluded_nodes() == {SPOT_NODE}


def test_with_the_setting_off_nothing_is_labelled(cluster: Cluster) -> None:
    settings = Settings(exclude_from_load_balancers=False)
    report = cluster.handle(aws_event("spot-interruption"), settings, SAMPLE_TIME)
    assert report.outcome == "acted"
    assert label_actions(report) == []
    node = cluster.node(SPOT_NODE)
    assert node["spec"]["unschedulable"] is True
    assert LABEL not in nodes.labels_of(node)
    assert OWNED not in nodes.annotations_of(node)


@needs_kubectl
def test_an_operator_label_is_kept_and_not_claimed(cluster: Cluster) -> None:
    cluster.kubectl("label", "node", SPOT_NODE, f"{LABEL}=ops-team")
    report = cluster.handle(aws_event("spot-interruption"), Settings(), SAMPLE_TIME)
    assert report.outcome == "acted"
    assert label_actions(report) == []  # Lifeboat did not label it
    node = cluster.node(SPOT_NODE)
    assert node["spec"]["unschedulable"] is True
    assert nodes.labels_of(node)[LABEL] == "ops-team"
    assert OWNED not in nodes.annotations_of(node)


def test_a_deferred_notice_is_not_excluded_until_it_acts(cluster: Cluster) -> None:
    """The PreferNoSchedule mark keeps the node in service, and in its load balancers."""
    rebalance = aws_event("rebalance-recommendation")
    deferred = cluster.handle(rebalance, Settings(), SAMPLE_TIME)
    assert deferred.outcome == "deferred"
    assert label_actions(deferred) == []
    assert LABEL not in nodes.labels_of(cluster.node(REBALANCE_NODE))
    # The freeze ends at 17:00: decided again then, it acts, and the node leaves them.
    acted = cluster.handle(rebalance, Settings(), datetime(2026, 12, 1, 17, 0, tzinfo=UTC))
    assert acted.outcome == "acted"
    assert label_actions(acted) == [{"type": "label", "key": LABEL, "value": "true"}]
    node = cluster.node(REBALANCE_NODE)
    assert nodes.labels_of(node)[LABEL] == "true"
    assert nodes.annotations_of(node)[OWNED] == "true"


def _cordoned_then_returned_to_service(cluster: Cluster) -> None:
    """Production cordons a rebalance recommendation; the operator, keeping the node,
    uncordons it and removes Lifeboat's taint with kubectl, and leaves the label."""
    early = aws_event(
        "rebalance-recommendation", event_id="rebalance-monday", time=BEFORE_THE_FREEZE
    )
    acted = cluster.handle(early, PRODUCTION, BEFORE_THE_FREEZE)
    assert acted.outcome == "acted"
    assert label_actions(acted) == [{"type": "label", "key": LABEL, "value": "true"}]
    cluster.kubectl("uncordon", REBALANCE_NODE)
    taint = node_marks.taint_key(Kind.REBALANCE_RECOMMENDATION)
    cluster.kubectl("taint", "nodes", REBALANCE_NODE, f"{taint}-")


def _deferred_then_let_go(cluster: Cluster) -> Report:
    """A new recommendation waits for the freeze to end; the pool is opted out meanwhile,
    so its wake-up lets it go (CLEAR_PENDING)."""
    rebalance = aws_event("rebalance-recommendation", event_id="rebalance-tuesday")
    deferred = cluster.handle(rebalance, PRODUCTION, SAMPLE_TIME)
    assert deferred.outcome == "deferred"
    cluster.opt_out_general()
    let_go = cluster.handle(rebalance, PRODUCTION, SAMPLE_TIME)
    assert let_go.outcome == "ignored"
    assert not nodes.taints(cluster.node(REBALANCE_NODE))
    return let_go


@needs_kubectl
def test_letting_a_deferred_notice_go_removes_the_label_lifeboat_added(cluster: Cluster) -> None:
    _cordoned_then_returned_to_service(cluster)
    assert cluster.excluded_nodes() == {REBALANCE_NODE}
    let_go = _deferred_then_let_go(cluster)
    assert let_go.actions == (
        {"type": "untaint", "key": node_marks.taint_key(Kind.REBALANCE_RECOMMENDATION)},
        {"type": "unlabel", "key": LABEL},
    )
    assert cluster.excluded_nodes() == set()
    assert OWNED not in nodes.annotations_of(cluster.node(REBALANCE_NODE))


@needs_kubectl
def test_letting_a_deferred_notice_go_keeps_the_operators_label(cluster: Cluster) -> None:
    cluster.kubectl("label", "node", REBALANCE_NODE, f"{LABEL}=true")
    let_go = _deferred_then_let_go(cluster)
    assert let_go.actions == (
        {"type": "untaint", "key": node_marks.taint_key(Kind.REBALANCE_RECOMMENDATION)},
    )
    assert cluster.excluded_nodes() == {REBALANCE_NODE}
    assert nodes.labels_of(cluster.node(REBALANCE_NODE))[LABEL] == "true"


def test_a_node_still_going_keeps_its_label_when_another_notice_is_let_go(
    cluster: Cluster,
) -> None:
    """A rebalance recommendation waits (PreferNoSchedule); a Spot warning for the same
    instance then acts. The waiting notice, let go, must not put back into load balancers a
    node that is being interrupted."""
    rebalance = aws_event("rebalance-recommendation")
    assert cluster.handle(rebalance, Settings(), SAMPLE_TIME).outcome == "deferred"
    spot = aws_event("spot-interruption", instance=REBALANCE_INSTANCE, event_id="spot-2")
    assert cluster.handle(spot, Settings(), SAMPLE_TIME).outcome == "acted"
    cluster.opt_out_general()
    let_go = cluster.handle(rebalance, Settings(), SAMPLE_TIME)
    assert let_go.outcome == "ignored"
    assert label_actions(let_go) == []
    node = cluster.node(REBALANCE_NODE)
    assert nodes.labels_of(node)[LABEL] == "true"
    assert nodes.annotations_of(node)[OWNED] == "true"
    assert node["spec"]["unschedulable"] is True
