"""Assemble the pipeline from the Lambda's environment, once per container.

Every setting is validated here, at start-up: a stack with a setting that cannot apply
fails its first invocation with the variable named, rather than mishandling events.

Nothing here calls AWS: clients are made, not used, so building the service costs no
network round trip. Under SnapStart, :meth:`Service.before_snapshot` then does the slow
once-per-environment work (describing each cluster, loading the service models of the
clients made on first use) so that it is part of the snapshot, and
:meth:`Service.after_restore` renews what must not be shared between the environments
restored from one snapshot (see ``lifeboat.runtime.snapstart``).
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from lifeboat.aws.notify import Notifier
from lifeboat.aws.redelivery import Redelivery
from lifeboat.flow.lookup import ClaimsWhenThrottled, end_on_first_throttle, served
from lifeboat.flow.pipeline import Pipeline
from lifeboat.flow.split import NOTICES_PER_MESSAGE
from lifeboat.kube.client import KubeApi
from lifeboat.model.instances import InstanceDirectory
from lifeboat.model.settings import Settings, SettingsError, load_settings

if TYPE_CHECKING:  # eks_auth imports boto3: only build_service pays for it, at start-up
    from lifeboat.aws.discovery import ClusterCatalog
    from lifeboat.kube.eks_auth import EksAuth

# What a plain cold start imports only with its first message (beside each kind's parser,
# lifeboat.events.registry): the sweep's reader and the wake-ups' handler.
LEFT_TO_FIRST_USE = ("lifeboat.flow.sweep_request", "lifeboat.flow.wake")
# Messages of one SQS batch handled at once (each mostly waits on the API server).
BATCH_WORKERS = 10
# Seconds one invocation keeps retrying PDB-blocked evictions before scheduling the rest.
DRAIN_PATIENCE = 20.0

_log = logging.getLogger(__name__)


def utc_now() -> datetime:
    return datetime.now(UTC)


def _required(env: Mapping[str, str], name: str) -> str:
    value = env.get(name, "")
    if not value:
        raise SettingsError(f"{name} is not set; the SAM template sets it (see template.yaml)")
    return value


class EksClusters:
    """A Kubernetes client per managed EKS cluster, authenticated with the function's role.

    The first request to a cluster describes it (``eks:DescribeCluster``); that call is made
    outside any lock shared between clusters, so one slow cluster never delays the others.
    """

    def __init__(
        self, settings: Settings, auth: EksAuth, catalog: ClusterCatalog | None = None
    ) -> None:
        self._auth = auth
        self._clusters = settings.clusters
        self._apis: dict[str, KubeApi] = {}
        self._lock = threading.Lock()
        # Clusters found by their tag (lifeboat.aws.discovery): warmed from it, dropped with it.
        self.catalog = catalog

    def kube(self, cluster: str | None) -> KubeApi:
        name = cluster or (self._clusters[0] if len(self._clusters) == 1 else None)
        if name is None:
            raise SettingsError(
                "an instance named no cluster and LIFEBOAT_CLUSTERS lists several; "
                "tag instances with eks:cluster-name"
            )
        api = self._apis.get(name)
        if api is not None:
            return api
        api_client = self._auth.api_client(name)  # EksAuth serialises per cluster
        with self._lock:
            return self._apis.setdefault(name, KubeApi(api_client))

    def forget(self, cluster: str) -> None:
        """Drop the client of a cluster no longer served (its tag was removed)."""
        with self._lock:
            self._apis.pop(cluster, None)
        self._auth.forget(cluster)

    def warm(self) -> None:
        """Describe every managed cluster and make its client (best effort: a cluster that
        cannot be reached now is described on its first request instead). With discovery,
        every cluster of the account and region is described first (ListClusters)."""
        names = self._clusters
        if self.catalog is not None:
            try:
                names = self.catalog.refresh()
            except Exception as error:
                _log.warning("could not discover clusters: %r", error)
        for name in names:
            try:
                self.kube(name)
            except Exception as error:
                _log.warning("could not prepare cluster %s: %r", name, error)

    def renew(self) -> None:
        """Forget tokens and pooled connections (they must not outlive a snapshot)."""
        self._auth.forget_tokens()
        self._auth.close_connections()


class LazyClient:
    """A boto3 client made on first use.

    Loading a service model costs tens of milliseconds of cold start. Scheduler, Auto
    Scaling, SQS and EventBridge are needed only by deferrals, lifecycle hooks, failures and
    actions, so their clients wait until then (or until :meth:`warm`, before a SnapStart
    snapshot). Creating clients from one session is not thread-safe, hence the lock.
    """

    def __init__(self, session: Any, service: str, region: str) -> None:
        self._session = session
        self._service = service
        self._region = region
        self._client: Any = None
        self._lock = threading.Lock()

    def warm(self) -> Any:
        with self._lock:
            if self._client is None:
                from lifeboat.aws.retries import make_client

                self._client = make_client(self._session, self._service, self._region)
            return self._client

    def __getattr__(self, name: str) -> Any:
        return getattr(self.warm(), name)


@dataclass
class Service:
    """What the Lambda keeps for its lifetime: the pipeline and what serves it."""

    pipeline: Pipeline
    settings: Settings
    notifier: Notifier | None = None
    redelivery: Redelivery | None = None
    clusters: EksClusters | None = None
    lazy_clients: list[LazyClient] = field(default_factory=list)

    def before_snapshot(self) -> None:
        """Work worth keeping in a SnapStart snapshot: cluster endpoints, service models, and
        the wake-ups' pydantic models, loaded and built, which a plain cold start leaves to
        the first wake-up (``lifeboat.wakeup.codec.decode``) but a snapshot holds for free;
        likewise the modules a plain cold start leaves to their first message."""
        from lifeboat.events.registry import parsers
        from lifeboat.wakeup.format import build_models

        build_models()
        parsers()  # every kind's parser, not only the Spot warning's
        for module in LEFT_TO_FIRST_USE:
            importlib.import_module(module)
        for client in self.lazy_clients:
            client.warm()
        if self.clusters is not None:
            self.clusters.warm()

    def after_restore(self) -> None:
        if self.clusters is not None:
            self.clusters.renew()


@dataclass(frozen=True)
class _StackResources:
    """What the SAM template tells the function about the stack's own resources."""

    idempotency_table: str
    schedule_group: str
    scheduler_role_arn: str
    queue_arn: str
    queue_url: str
    dead_letter_arn: str
    # Where notifications go; empty: none are published.
    notification_bus: str

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> _StackResources:
        return cls(
            idempotency_table=_required(env, "LIFEBOAT_IDEMPOTENCY_TABLE"),
            schedule_group=_required(env, "LIFEBOAT_SCHEDULE_GROUP"),
            scheduler_role_arn=_required(env, "LIFEBOAT_SCHEDULER_ROLE_ARN"),
            queue_arn=_required(env, "LIFEBOAT_QUEUE_ARN"),
            queue_url=_required(env, "LIFEBOAT_QUEUE_URL"),
            dead_letter_arn=_required(env, "LIFEBOAT_DEAD_LETTER_QUEUE_ARN"),
            notification_bus=env.get("LIFEBOAT_NOTIFICATION_BUS", "").strip(),
        )


def build_service(
    env: Mapping[str, str] | None = None, *, clock: Callable[[], datetime] = utc_now
) -> Service:
    import boto3

    from lifeboat.aws.notify import EventBridgeNotifier
    from lifeboat.aws.redelivery import SqsRedelivery
    from lifeboat.kube.eks_auth import EksAuth

    env = os.environ if env is None else env
    settings = load_settings(env)
    if not settings.clusters and settings.cluster_tag_key is None:
        raise SettingsError(
            "LIFEBOAT_CLUSTERS is empty and LIFEBOAT_CLUSTER_TAG_KEY is not set: name at "
            "least one EKS cluster, or serve the clusters tagged <key>=true"
        )
    # Every setting is checked before any client is made: a broken stack fails fast.
    stack = _StackResources.from_env(env)
    session = boto3.Session()
    region = settings.region or session.region_name
    if not region:
        raise SettingsError(
            "LIFEBOAT_REGION is not set and no AWS region is configured (AWS_REGION); "
            "the SAM template sets it (see template.yaml)"
        )
    lazy = {
        name: LazyClient(session, name, region)
        for name in ("scheduler", "autoscaling", "sqs", "events")
    }
    eks = LazyClient(session, "eks", region)
    auth = EksAuth(session=session, region=region, eks_client=eks)
    clusters = _clusters(settings, auth, eks)
    pipeline = _pipeline(env, settings, stack, session, region, lazy, clusters, clock)
    bus = stack.notification_bus
    notifier = (
        EventBridgeNotifier(lazy["events"], bus=bus, dry_run=settings.dry_run) if bus else None
    )
    return Service(
        pipeline,
        settings,
        notifier=notifier,
        redelivery=SqsRedelivery(lazy["sqs"], stack.queue_url),
        clusters=clusters,
        lazy_clients=[lazy[name] for name in sorted(lazy) if name != "events" or bus] + [eks],
    )


def _clusters(settings: Settings, auth: EksAuth, eks: LazyClient) -> EksClusters:
    """The clients of the clusters served: those named, and (a tag key set) those tagged."""
    clusters = EksClusters(settings, auth)
    if settings.cluster_tag_key is not None:
        from lifeboat.aws.discovery import ClusterCatalog

        clusters.catalog = ClusterCatalog(
            eks,
            tag_key=settings.cluster_tag_key,
            named=settings.clusters,
            ttl=settings.discovery_ttl.total_seconds(),
            on_described=auth.remember,
            on_dropped=clusters.forget,
        )
    return clusters


def _lookup(
    settings: Settings, clusters: EksClusters, directory: InstanceDirectory
) -> InstanceDirectory:
    """EC2, and the clusters' NodeClaims for Spot warnings while EC2 throttles
    (lifeboat.flow.lookup); EC2 alone when a managed tag must be read off every instance."""
    if settings.managed_tag:
        return directory
    catalog = clusters.catalog
    names = catalog.serving if catalog is not None else (lambda: settings.clusters)
    return ClaimsWhenThrottled(directory, served(names, clusters.kube))


def _pipeline(
    env: Mapping[str, str],
    settings: Settings,
    stack: _StackResources,
    session: Any,
    region: str,
    lazy: Mapping[str, LazyClient],
    clusters: EksClusters,
    clock: Callable[[], datetime],
) -> Pipeline:
    """The pipeline over the stack's AWS services, its clients made but not used yet."""
    from lifeboat.aws.capacity_blocks import Ec2CapacityReservations
    from lifeboat.aws.clock import AwsClock
    from lifeboat.aws.idempotency import PowertoolsLedger
    from lifeboat.aws.lifecycle import AutoScalingLifecycle
    from lifeboat.aws.retries import make_client
    from lifeboat.aws.scheduler import SchedulerWakeups
    from lifeboat.aws.sweep import Ec2InstanceStatuses
    from lifeboat.model.instances import Ec2InstanceDirectory

    # Retried a few times, then within the message's deadline window (lifeboat.aws.retries).
    ec2 = make_client(session, "ec2", region)
    dynamodb = make_client(session, "dynamodb", region)
    # AWS's time, not the function's (issue 33.6): every deadline weighed is AWS's.
    clock = aws_clock = AwsClock(clock)
    aws_clock.watch(ec2)
    aws_clock.watch(dynamodb)
    sweep_schedule = env.get("LIFEBOAT_SWEEP_SCHEDULE_ARN", "").strip() or None
    wakeups = SchedulerWakeups(
        lazy["scheduler"],
        group=stack.schedule_group,
        role_arn=stack.scheduler_role_arn,
        queue_arn=stack.queue_arn,
        dead_letter_arn=stack.dead_letter_arn,
        clock=clock,
    )
    directory = Ec2InstanceDirectory(end_on_first_throttle(ec2))
    blocks = Ec2CapacityReservations(ec2) if settings.sweep_capacity_blocks else None
    return Pipeline(
        clusters=clusters,
        directory=_lookup(settings, clusters, directory),
        settings=settings,
        clock=clock,
        lifecycle=AutoScalingLifecycle(lazy["autoscaling"]),
        wakeups=wakeups,
        ledger=PowertoolsLedger(stack.idempotency_table, boto3_client=dynamodb),
        drain_patience=DRAIN_PATIENCE,
        holder=env.get("AWS_LAMBDA_FUNCTION_NAME", "lifeboat"),
        workers=BATCH_WORKERS,
        notices_per_message=NOTICES_PER_MESSAGE,
        # The sweep off (empty: InstanceStatusSweepMinutes=0, maintenance given back to
        # Karpenter's poller): no EC2 reader, so a sweep request left on the queue from
        # before, or sent by anyone, sweeps nothing (None would mean "any schedule").
        statuses=Ec2InstanceStatuses(ec2) if sweep_schedule else None,
        scope=clusters.catalog,
        reservations=directory,
        capacity_reservations=blocks,
        # Only the stack's own schedule asks for a sweep.
        sweep_schedule=sweep_schedule,
    )
