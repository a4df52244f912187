"""Clusters served by their tag (lifeboat.aws.discovery), through boto3 to moto: two accounts and
two regions, tagged, untagged, a tag removed, a cluster created between two warnings, and a
flood of warnings about clusters no one tagged.

Each stack serves its own account and region (a StackSet puts one in each): a catalog built
with one account's credentials in one region must see exactly the clusters tagged there.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from kubemu import Emulator
from lifeboat.aws.discovery import ClusterCatalog
from lifeboat.flow.pipeline import OneCluster, Pipeline
from lifeboat.kube.client import KubeApi, RetryPolicy
from lifeboat.kube.eks_auth import ClusterInfo, EksAuth
from lifeboat.model.instances import Ec2InstanceDirectory
from lifeboat.model.report import Outcome
from lifeboat.model.settings import Settings, SettingsError
from lifeboat.runtime.service import build_service
from tests.support.aws import ANY_AMI
from tests.support.events import aws_event
from tests.support.kube.core import node

TAG = "lifeboat.dev/managed"
OTHER_ACCOUNT = "222222222222"
HOME = "us-east-1"
AWAY = "eu-west-1"
NOW = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)


class Clock:
    """Monotonic seconds moved by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _create(session: boto3.Session, name: str, tags: dict[str, str] | None = None) -> str:
    account = session.client("sts").get_caller_identity()["Account"]
    created = session.client("eks").create_cluster(
        name=name,
        roleArn=f"arn:aws:iam::{account}:role/eks",
        resourcesVpcConfig={"subnetIds": ["subnet-1"]},
        tags=tags or {},
    )
    arn: str = created["cluster"]["arn"]
    return arn


def _other_account(session: boto3.Session, region: str) -> boto3.Session:
    """A session in OTHER_ACCOUNT (moto gives an assumed role's keys its account)."""
    credentials = session.client("sts").assume_role(
        RoleArn=f"arn:aws:iam::{OTHER_ACCOUNT}:role/lifeboat", RoleSessionName="discovery"
    )["Credentials"]
    return boto3.Session(
        aws_access_key_id=credentials["AccessKeyId"],
        aws_secret_access_key=credentials["SecretAccessKey"],
        aws_session_token=credentials["SessionToken"],
        region_name=region,
    )


def _count_describes(eks: Any) -> list[str]:
    """The names of the DescribeCluster calls ``eks`` makes from now on."""
    seen: list[str] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        seen.append(params["name"])

    eks.meta.events.register("provide-client-params.eks.DescribeCluster", record)
    return seen


def _catalog(eks: Any, clock: Clock, **options: Any) -> ClusterCatalog:
    return ClusterCatalog(eks, tag_key=TAG, clock=clock, **options)


@dataclass
class Fleet:
    """Clusters in two accounts and two regions, one of each kind where it matters."""

    home: boto3.Session  # this stack's account, in HOME
    away: boto3.Session  # this stack's account, in AWAY
    other: boto3.Session  # OTHER_ACCOUNT, in HOME


@pytest.fixture
def fleet(aws: boto3.Session) -> Fleet:
    home = aws
    away = boto3.Session(region_name=AWAY)
    other = _other_account(aws, HOME)
    _create(home, "payments", {TAG: "true"})
    _create(home, "sandbox")  # untagged
    _create(home, "legacy", {TAG: "false"})  # tagged, but not opted in
    _create(home, "shared", {"team": "platform"})  # untagged here ...
    _create(other, "shared", {TAG: "true"})  # ... tagged in the other account
    _create(other, "search", {TAG: "true"})
    _create(away, "analytics", {TAG: "true"})
    return Fleet(home, away, other)


def test_each_account_and_region_serves_exactly_its_tagged_clusters(fleet: Fleet) -> None:
    """ListClusters + DescribeCluster tags, per account and region: the same name tagged in
    another account is that account's, and a region sees only its own clusters."""
    clock = Clock()
    served = {
        "home": _catalog(fleet.home.client("eks"), clock).refresh(),
        "away": _catalog(fleet.away.client("eks"), clock).refresh(),
        "other": _catalog(fleet.other.client("eks"), clock).refresh(),
    }
    assert served == {
        "home": ("payments",),
        "away": ("analytics",),
        "other": ("search", "shared"),
    }


def test_a_warning_asks_only_about_its_own_cluster_and_the_answer_is_kept(fleet: Fleet) -> None:
    """A miss describes the one cluster named, if EKS lists it here (one ListClusters, kept);
    within the TTL, asking again costs nothing, for a served and an unserved cluster alike."""
    clock = Clock()
    eks = fleet.home.client("eks")
    describes = _count_describes(eks)
    catalog = _catalog(eks, clock, ttl=300)
    assert catalog.serves("payments")
    assert not catalog.serves("sandbox")
    assert not catalog.serves("legacy")
    assert not catalog.serves("search")  # the other account's: not found here
    assert not catalog.serves("analytics")  # the other region's
    assert not catalog.serves(None)  # an instance of no cluster
    for _ in range(50):
        assert catalog.serves("payments")
        assert not catalog.serves("sandbox")
    # The other account's and the other region's clusters are not listed: not described.
    assert describes == ["payments", "sandbox", "legacy"]
    assert catalog.calls.list_clusters == 1


def test_a_removed_tag_stops_the_service_after_the_ttl_and_drops_the_client(
    fleet: Fleet,
) -> None:
    clock = Clock()
    eks = fleet.home.client("eks")
    dropped: list[str] = []
    catalog = _catalog(eks, clock, ttl=300, on_dropped=dropped.append)
    arn = eks.describe_cluster(name="payments")["cluster"]["arn"]
    assert catalog.serves("payments")
    eks.untag_resource(resourceArn=arn, tagKeys=[TAG])
    clock.now += 299
    assert catalog.serves("payments")  # the answer is trusted for the TTL
    assert dropped == []
    clock.now += 1
    assert not catalog.serves("payments")
    assert dropped == ["payments"]
    eks.tag_resource(resourceArn=arn, tags={TAG: "true"})
    clock.now += 300
    assert catalog.serves("payments")


def test_a_full_refresh_forgets_a_deleted_cluster(fleet: Fleet) -> None:
    clock = Clock()
    eks = fleet.home.client("eks")
    dropped: list[str] = []
    catalog = _catalog(eks, clock, on_dropped=dropped.append)
    assert catalog.refresh() == ("payments",)
    eks.delete_cluster(name="payments")
    assert catalog.refresh() == ()
    assert dropped == ["payments"]


def test_named_clusters_are_served_without_asking_eks(fleet: Fleet) -> None:
    """LIFEBOAT_CLUSTERS stays an alternative: a named cluster is served, tag or not."""
    eks = fleet.home.client("eks")
    describes = _count_describes(eks)
    catalog = ClusterCatalog(eks, tag_key=None, named=["sandbox"], clock=Clock())
    assert catalog.serves("sandbox")
    assert not catalog.serves("payments")  # no tag key: only the named ones
    both = _catalog(eks, Clock(), named=["sandbox"])
    assert both.serves("sandbox") and both.serves("payments")
    assert describes == ["payments"]


def test_a_flood_of_warnings_about_unknown_clusters_costs_two_list_calls_a_minute(
    fleet: Fleet,
) -> None:
    """Warnings about instances of 100 distinct clusters EKS does not list here, twice over,
    within a minute: no DescribeCluster, one ListClusters per 30 seconds. A flood about an
    untagged cluster costs one DescribeCluster per TTL."""
    clock = Clock()
    eks = fleet.home.client("eks")
    describes = _count_describes(eks)
    catalog = _catalog(eks, clock, ttl=300)
    for second in range(60):
        clock.now += 1
        for index in range(100):
            assert not catalog.serves(f"self-managed-{(index + second) % 100}")
    assert describes == []
    assert catalog.calls.list_clusters == 2
    for _ in range(500):
        assert not catalog.serves("sandbox")
    clock.now += 299
    assert not catalog.serves("sandbox")
    assert describes == ["sandbox"]
    clock.now += 1
    assert not catalog.serves("sandbox")
    assert describes == ["sandbox", "sandbox"]


class FailingEks:
    """moto's EKS, whose DescribeCluster fails (throttled) while ``failing`` is set."""

    def __init__(self, eks: Any) -> None:
        self._eks = eks
        self.exceptions = eks.exceptions
        self.failing = False

    def get_paginator(self, name: str) -> Any:
        return self._eks.get_paginator(name)

    def describe_cluster(self, **params: Any) -> Any:
        if self.failing:
            error = {"Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"}}
            raise ClientError(error, "DescribeCluster")
        return self._eks.describe_cluster(**params)


def test_when_eks_does_not_answer_the_last_answer_stands(fleet: Fleet) -> None:
    clock = Clock()
    eks = FailingEks(fleet.home.client("eks"))
    catalog = _catalog(eks, clock, ttl=60)
    assert catalog.serves("payments")
    eks.failing = True
    clock.now += 61  # expired, and EKS throttles
    assert catalog.serves("payments")
    # A cluster never described cannot be judged: the message goes back to the queue.
    with pytest.raises(ClientError, match="Rate exceeded"):
        catalog.serves("sandbox")
    eks.failing = False
    assert not catalog.serves("sandbox")


def test_a_described_cluster_hands_its_endpoint_to_eks_auth(fleet: Fleet) -> None:
    """The DescribeCluster of discovery is the only one: the client is built from it."""
    eks = fleet.home.client("eks")
    describes = _count_describes(eks)
    auth = EksAuth(session=fleet.home, region=HOME, eks_client=eks)
    catalog = _catalog(eks, Clock(), on_described=auth.remember)
    assert catalog.serves("payments")
    expected = eks.describe_cluster(name="payments")["cluster"]["endpoint"]
    describes.clear()
    assert auth.cluster_info("payments").endpoint == expected
    assert describes == []


def test_a_cluster_recreated_under_its_name_gets_a_new_client(fleet: Fleet) -> None:
    eks = fleet.home.client("eks")
    auth = EksAuth(session=fleet.home, region=HOME, eks_client=eks)
    old = ClusterInfo("payments", "https://old.example", "-----BEGIN CERTIFICATE-----\n")
    auth.remember(old)
    first = auth.api_client("payments")
    assert auth.api_client("payments") is first
    auth.remember(old)  # described again, unchanged: the client stays
    assert auth.api_client("payments") is first
    auth.remember(ClusterInfo("payments", "https://new.example", old.ca_data))
    assert auth.api_client("payments") is not first
    auth.forget("payments")
    assert auth.cached_clusters() == ()


# --- through the pipeline: the instance's EC2 tags name the cluster, the tag serves it --------


@dataclass(frozen=True)
class Instance:
    instance_id: str
    node_name: str


@pytest.fixture
def emulated(aws: boto3.Session) -> Iterator[tuple[Emulator, dict[str, Instance]]]:
    """An instance of each of the clusters "payments", "checkout" and "sandbox" (EC2 tag
    eks:cluster-name, as EKS sets it) and their nodes, in one emulated API server."""
    ec2 = aws.client("ec2")
    image = ANY_AMI
    instances: dict[str, Instance] = {}
    objects = []
    for cluster in ("payments", "checkout", "sandbox"):
        launched = ec2.run_instances(
            ImageId=image,
            MinCount=1,
            MaxCount=1,
            InstanceType="m5.large",
            TagSpecifications=[
                {
                    "ResourceType": "instance",
                    "Tags": [{"Key": "eks:cluster-name", "Value": cluster}],
                }
            ],
        )["Instances"][0]
        instances[cluster] = Instance(launched["InstanceId"], launched["PrivateDnsName"])
        zone = launched["Placement"]["AvailabilityZone"]
        objects.append(
            node(
                name=launched["PrivateDnsName"],
                instance_id=launched["InstanceId"],
                zone=zone,
                nodepool=None,
                nodeclaim=None,
            )
        )
    with Emulator(objects) as emulator:
        yield emulator, instances


def _tainted(emulator: Emulator, name: str) -> bool:
    stored = emulator.get_object("Node", name)
    assert stored is not None
    taints = stored.get("spec", {}).get("taints") or []
    return any("lifeboat" in taint.get("key", "") for taint in taints)


def test_a_cluster_created_between_two_warnings_is_served_on_its_first_warning(
    fleet: Fleet, emulated: tuple[Emulator, dict[str, Instance]]
) -> None:
    """The instance's EC2 tags name its cluster (lifeboat.model.instances.cluster_from_tags); the
    cluster's own tag decides whether it is served, asked on the warning itself."""
    emulator, instances = emulated
    clock = Clock()
    eks = fleet.home.client("eks")
    describes = _count_describes(eks)
    pipeline = Pipeline(
        clusters=OneCluster(KubeApi(emulator.api_client(), RetryPolicy(attempts=2))),
        directory=Ec2InstanceDirectory(fleet.home.client("ec2")),
        settings=Settings(cluster_tag_key=TAG),
        clock=lambda: NOW,
        scope=_catalog(eks, clock),
    )

    def warn(cluster: str, event_id: str) -> tuple[Outcome, str, str | None]:
        event = aws_event(
            "spot-interruption", instance=instances[cluster].instance_id, event_id=event_id
        )
        [result] = pipeline.process([event])
        assert result.error is None
        [report] = result.reports
        return report.outcome, report.reason, report.cluster

    outcome, _, cluster = warn("payments", "one")
    assert outcome is not Outcome.IGNORED and cluster == "payments"
    assert _tainted(emulator, instances["payments"].node_name)
    outcome, reason, _ = warn("sandbox", "two")
    assert outcome is Outcome.IGNORED and "sandbox" in reason
    assert not _tainted(emulator, instances["sandbox"].node_name)

    _create(fleet.home, "checkout", {TAG: "true"})  # a minute later, within the TTL
    clock.now += 60
    outcome, reason, cluster = warn("checkout", "three")
    assert outcome is not Outcome.IGNORED, reason
    assert cluster == "checkout"
    assert _tainted(emulator, instances["checkout"].node_name)
    assert describes == ["payments", "sandbox", "checkout"]


def test_a_tagged_cluster_without_lifeboats_access_fails_the_message_loudly(
    fleet: Fleet, emulated: tuple[Emulator, dict[str, Instance]]
) -> None:
    """The owner tagged the cluster but skipped the access entry and RBAC: the API server
    answers 403, and the message goes back to the queue (then the DLQ and its alarm); it
    is neither acknowledged nor reported as handled."""
    emulator, instances = emulated
    emulator.enforce_rbac([])  # Lifeboat's user may do nothing
    pipeline = Pipeline(
        clusters=OneCluster(KubeApi(emulator.api_client(), RetryPolicy(attempts=1))),
        directory=Ec2InstanceDirectory(fleet.home.client("ec2")),
        settings=Settings(cluster_tag_key=TAG),
        clock=lambda: NOW,
        scope=_catalog(fleet.home.client("eks"), Clock()),
    )
    event = aws_event("spot-interruption", instance=instances["payments"].instance_id)
    [result] = pipeline.process([event])
    assert result.error is not None
    assert "403" in str(result.error) or "forbidden" in str(result.error).lower()
    assert result.reports == []
    assert not _tainted(emulator, instances["payments"].node_name)


@pytest.mark.parametrize(
    ("cluster", "outcome", "why"),
    [
        ("sandbox", Outcome.IGNORED, "rotation for cluster sandbox, not managed here"),
        (None, Outcome.REJECTED, "detail.cluster: required"),
    ],
)
def test_a_rotation_names_a_tagged_cluster(
    fleet: Fleet, cluster: str | None, outcome: Outcome, why: str
) -> None:
    """An operator's rotation command is refused before any cluster is touched when its
    cluster is not tagged (or not named at all: a stack of tagged clusters has no default)."""
    touched: list[str | None] = []

    def kube_for(name: str | None) -> KubeApi:
        touched.append(name)
        raise AssertionError("no cluster may be asked")

    class Clusters:
        def kube(self, name: str | None) -> KubeApi:
            return kube_for(name)

    pipeline = Pipeline(
        clusters=Clusters(),
        directory=Ec2InstanceDirectory(fleet.home.client("ec2")),
        settings=Settings(cluster_tag_key=TAG),
        clock=lambda: NOW,
        scope=_catalog(fleet.home.client("eks"), Clock()),
    )
    command = aws_event("rotation/legacy-to-karpenter")
    if cluster is None:
        del command["detail"]["cluster"]
    else:
        command["detail"]["cluster"] = cluster
    [result] = pipeline.process([command])
    assert result.error is None
    [report] = result.reports
    assert report.outcome is outcome
    assert why in report.reason
    assert touched == []


# --- start-up ------------------------------------------------------------------------------


def _env(**changes: str) -> dict[str, str]:
    return {
        "LIFEBOAT_IDEMPOTENCY_TABLE": "idempotency",
        "LIFEBOAT_SCHEDULE_GROUP": "lifeboat",
        "LIFEBOAT_SCHEDULER_ROLE_ARN": "arn:aws:iam::123456789012:role/scheduler",
        "LIFEBOAT_QUEUE_ARN": "arn:aws:sqs:us-east-1:123456789012:lifeboat",
        "LIFEBOAT_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/lifeboat",
        "LIFEBOAT_DEAD_LETTER_QUEUE_ARN": "arn:aws:sqs:us-east-1:123456789012:dlq",
        "LIFEBOAT_REGION": HOME,
    } | changes


def test_a_stack_with_a_tag_key_and_no_names_serves_the_tagged_clusters(fleet: Fleet) -> None:
    service = build_service(_env(LIFEBOAT_CLUSTER_TAG_KEY=TAG))
    assert service.clusters is not None and service.clusters.catalog is not None
    assert service.pipeline.scope is service.clusters.catalog
    eks = service.clusters.catalog._eks
    describes = _count_describes(eks)
    # Before a SnapStart snapshot: every cluster of the account described, the tagged one's
    # client made from that description (no second DescribeCluster).
    service.before_snapshot()
    assert service.clusters.catalog.served() == ("payments",)
    assert service.clusters._auth.cached_clusters() == ("payments",)
    assert sorted(describes) == ["legacy", "payments", "sandbox", "shared"]


def test_neither_names_nor_a_tag_key_is_refused_at_start_up(aws: boto3.Session) -> None:
    with pytest.raises(SettingsError, match="LIFEBOAT_CLUSTER_TAG_KEY"):
        build_service(_env())


@pytest.mark.parametrize("key", ["aws:managed", "a=b", "x" * 129])
def test_a_tag_key_eks_cannot_hold_is_named(aws: boto3.Session, key: str) -> None:
    with pytest.raises(SettingsError, match="LIFEBOAT_CLUSTER_TAG_KEY"):
        build_service(_env(LIFEBOAT_CLUSTER_TAG_KEY=key))
