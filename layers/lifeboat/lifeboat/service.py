"""Assemble the pipeline from the Lambda's environment, once per container.

Every setting is validated here, at start-up: a stack with a setting that cannot apply
fails its first invocation with the variable named, rather than mishandling events.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from lifeboat.kube import KubeApi
from lifeboat.pipeline import Pipeline
from lifeboat.settings import Settings, SettingsError, load_settings

if TYPE_CHECKING:  # eks_auth imports boto3: only build_service pays for it, at start-up
    from lifeboat.eks_auth import EksAuth

# Messages of one SQS batch handled at once (each mostly waits on the API server).
BATCH_WORKERS = 10
# Seconds one invocation keeps retrying PDB-blocked evictions before scheduling the rest.
DRAIN_PATIENCE = 20.0


def utc_now() -> datetime:
    return datetime.now(UTC)


def _required(env: Mapping[str, str], name: str) -> str:
    value = env.get(name, "")
    if not value:
        raise SettingsError(f"{name} is not set; the SAM template sets it (see template.yaml)")
    return value


class EksClusters:
    """A Kubernetes client per managed EKS cluster, authenticated with the function's role."""

    def __init__(self, settings: Settings, auth: EksAuth) -> None:
        self._auth = auth
        self._clusters = settings.clusters
        self._apis: dict[str, KubeApi] = {}
        self._lock = threading.Lock()

    def kube(self, cluster: str | None) -> KubeApi:
        name = cluster or (self._clusters[0] if len(self._clusters) == 1 else None)
        if name is None:
            raise SettingsError(
                "an instance named no cluster and LIFEBOAT_CLUSTERS lists several; "
                "tag instances with eks:cluster-name"
            )
        with self._lock:
            if name not in self._apis:
                self._apis[name] = KubeApi(self._auth.api_client(name))
            return self._apis[name]


class LazyClient:
    """A boto3 client made on first use.

    Loading a service model costs tens of milliseconds of cold start. Scheduler and Auto
    Scaling are needed only by deferrals and lifecycle hooks, which a Spot storm never
    touches, so their clients wait until then. (Creating clients from one session is not
    thread-safe, hence the lock.)
    """

    def __init__(self, session: Any, service: str, region: str) -> None:
        self._session = session
        self._service = service
        self._region = region
        self._client: Any = None
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        with self._lock:
            if self._client is None:
                self._client = self._session.client(self._service, region_name=self._region)
        return getattr(self._client, name)


@dataclass
class Service:
    pipeline: Pipeline
    settings: Settings


def build_service(env: Mapping[str, str] | None = None) -> Service:
    import boto3

    from lifeboat.eks_auth import EksAuth
    from lifeboat.idempotency import PowertoolsLedger
    from lifeboat.instances import Ec2InstanceDirectory
    from lifeboat.lifecycle import AutoScalingLifecycle
    from lifeboat.scheduler import SchedulerWakeups

    env = os.environ if env is None else env
    settings = load_settings(env)
    if not settings.clusters:
        raise SettingsError("LIFEBOAT_CLUSTERS is empty: name at least one EKS cluster")
    # Every setting is checked before any client is made: a broken stack fails fast.
    table = _required(env, "LIFEBOAT_IDEMPOTENCY_TABLE")
    group = _required(env, "LIFEBOAT_SCHEDULE_GROUP")
    role_arn = _required(env, "LIFEBOAT_SCHEDULER_ROLE_ARN")
    queue_arn = _required(env, "LIFEBOAT_QUEUE_ARN")
    session = boto3.Session()
    region = settings.region or session.region_name
    if not region:
        raise SettingsError(
            "LIFEBOAT_REGION is not set and no AWS region is configured (AWS_REGION); "
            "the SAM template sets it (see template.yaml)"
        )
    wakeups = SchedulerWakeups(
        LazyClient(session, "scheduler", region),
        group=group,
        role_arn=role_arn,
        queue_arn=queue_arn,
        clock=utc_now,
    )
    pipeline = Pipeline(
        clusters=EksClusters(settings, EksAuth(session=session, region=region)),
        directory=Ec2InstanceDirectory(session.client("ec2", region_name=region)),
        settings=settings,
        clock=utc_now,
        lifecycle=AutoScalingLifecycle(LazyClient(session, "autoscaling", region)),
        wakeups=wakeups,
        ledger=PowertoolsLedger(table, boto3_client=session.client("dynamodb", region_name=region)),
        drain_patience=DRAIN_PATIENCE,
        holder=env.get("AWS_LAMBDA_FUNCTION_NAME", "lifeboat"),
        workers=BATCH_WORKERS,
    )
    return Service(pipeline, settings)
