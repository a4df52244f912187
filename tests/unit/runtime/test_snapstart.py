"""SnapStart: the hooks the Lambda registers with ``snapshot_restore_py`` renew what must not
be shared between environments restored from one snapshot, and warm what is worth keeping.

The runtime calls every registered ``(func, args, kwargs)`` of
``snapshot_restore_py.get_after_restore()`` after a restore (and of ``get_before_snapshot()``
before the snapshot, in reverse order); the tests call them the same way. A "restore" is
simulated by putting the process back into the state it had at the snapshot (the RNG state)
and running the hooks, as two environments restored from one snapshot would.
"""

from __future__ import annotations

import importlib
import random
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import boto3
import pytest
import snapshot_restore_py  # type: ignore[import-untyped]  # ships no type information
from moto import mock_aws

import lifeboat.kube.eks_auth
from kubemu import Emulator, builders
from lifeboat.kube.client import KubeApi
from lifeboat.kube.eks_auth import EksAuth
from lifeboat.kube.rest import RestClient
from lifeboat.model.settings import Settings
from lifeboat.runtime import snapstart
from lifeboat.runtime.service import EksClusters, LazyClient, Service
from lifeboat.telemetry.observability import PowertoolsBatchMetrics
from lifeboat.telemetry.tracing import LazyTracer
from tests.support.present import present

REGION = "us-east-1"
ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[boto3.Session]:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": REGION,
    }.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        session = boto3.Session(region_name=REGION)
        for name in ("prod", "stage"):
            session.client("eks").create_cluster(
                name=name,
                roleArn="arn:aws:iam::123456789012:role/eks",
                resourcesVpcConfig={"subnetIds": ["subnet-1"]},
            )
        yield session


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> tuple[list[Any], list[Any]]:
    """snapshot_restore_py's registries, emptied for the test and restored after it."""
    before: list[Any] = []
    after: list[Any] = []
    monkeypatch.setattr(snapshot_restore_py, "_before_snapshot_registry", before)
    monkeypatch.setattr(snapshot_restore_py, "_after_restore_registry", after)
    return before, after


def run_hooks(hooks: list[Any], *, reverse: bool = False) -> None:
    """What Lambda's runtime does with a registry."""
    for func, args, kwargs in reversed(hooks) if reverse else hooks:
        func(*args, **kwargs)


class CountingMints:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        real = lifeboat.kube.eks_auth.generate_token

        def mint(sts: Any, cluster: str) -> str:
            self.count += 1
            return f"{real(sts, cluster)}#{self.count}"  # distinct even within one second

        monkeypatch.setattr(lifeboat.kube.eks_auth, "generate_token", mint)


def _service(aws: boto3.Session) -> tuple[Service, EksAuth, EksClusters, LazyClient]:
    settings = Settings(clusters=("prod", "stage"))
    auth = EksAuth(session=aws, region=REGION)
    clusters = EksClusters(settings, auth)
    scheduler = LazyClient(aws, "scheduler", REGION)
    service = Service(
        pipeline=None,  # type: ignore[arg-type]  # not needed by the hooks
        settings=settings,
        clusters=clusters,
        lazy_clients=[scheduler],
    )
    return service, auth, clusters, scheduler


def test_install_registers_the_hooks_with_the_runtime_library(
    aws: boto3.Session, registry: tuple[list[Any], list[Any]]
) -> None:
    service, *_ = _service(aws)
    metrics, tracer = PowertoolsBatchMetrics("Lifeboat"), LazyTracer()
    assert snapstart.install(service, metrics, tracer) is True
    before, after = registry
    assert [(f, a) for f, a, _ in before] == [
        (snapstart.before_snapshot, (service, metrics, tracer))
    ]
    assert [(f, a) for f, a, _ in after] == [(snapstart.after_restore, (service, metrics, tracer))]


def test_without_the_runtime_library_nothing_is_registered(
    aws: boto3.Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "snapshot_restore_py", None)  # import fails
    service, *_ = _service(aws)
    assert snapstart.install(service) is False


def test_before_the_snapshot_the_clusters_are_described_and_lazy_clients_made(
    aws: boto3.Session, registry: tuple[list[Any], list[Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Work kept in the snapshot: eks:DescribeCluster for every managed cluster and the
    service models of the clients made on first use. (Tracing is off here; the X-Ray
    warm-up is covered by test_tracing.)"""
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "1")
    service, auth, clusters, scheduler = _service(aws)
    described: list[str] = []
    eks = aws.client("eks")
    eks.meta.events.register(
        "before-parameter-build.eks.DescribeCluster",
        lambda params, **_: described.append(params["name"]),
    )
    auth.facts._eks = eks
    snapstart.install(service, PowertoolsBatchMetrics("Lifeboat"), LazyTracer())
    run_hooks(registry[0], reverse=True)
    assert sorted(described) == ["prod", "stage"]
    assert scheduler._client is not None
    assert set(clusters._apis) == {"prod", "stage"}


def test_after_a_restore_every_environment_mints_its_own_eks_token(
    aws: boto3.Session, registry: tuple[list[Any], list[Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A token minted before the snapshot (the warm-up seeds one per cluster) would be
    shared by every restored environment, and its clock (minted_at) belongs to the snapshot.
    After the restore hooks, the next request of each cluster mints a new one."""
    mints = CountingMints(monkeypatch)
    service, auth, clusters, _ = _service(aws)
    snapstart.install(service)
    run_hooks(registry[0], reverse=True)  # before the snapshot: clients made, tokens seeded
    configuration = clusters.kube("prod")._client.configuration
    before = configuration.api_key["BearerToken"]
    assert auth.token("prod") == before  # reused while fresh, without a restore
    seeded = mints.count

    run_hooks(registry[1])  # restored
    # The client declares the hook as None; EksAuth installs a function there.
    refresh: object = configuration.refresh_api_key_hook
    assert callable(refresh)
    refresh(configuration)  # what the client does before a request
    after = configuration.api_key["BearerToken"]
    assert after != before
    assert mints.count == seeded + 1
    assert auth.token("stage") != before and mints.count == seeded + 2


def test_after_a_restore_pooled_connections_are_dropped(
    registry: tuple[list[Any], list[Any]], aws: boto3.Session
) -> None:
    """Sockets opened before the snapshot did not survive it; the pools start empty."""
    with Emulator([builders.node("n1", providerID="aws:///us-east-1a/i-0a1b2c3d4e5f60001")]) as emu:
        service, auth, _, _ = _service(aws)
        api_client = emu.api_client()
        # The cluster's client, on the emulator: an ApiClient has both attributes a RestClient has
        # (configuration, rest_client), all that EksAuth and snapstart use of it.
        auth._api_clients["prod"] = cast(RestClient, api_client)
        KubeApi(api_client).get_node("n1")
        pools = api_client.rest_client.pool_manager.pools
        assert len(pools) == 1
        snapstart.install(service)
        run_hooks(registry[1])
        assert len(pools) == 0
        assert KubeApi(api_client).get_node("n1") is not None  # reconnects on demand


def test_restored_environments_do_not_share_random_state(
    aws: boto3.Session, registry: tuple[list[Any], list[Any]]
) -> None:
    """Two environments restored from one snapshot start with the same memory: the same
    ``random`` state (botocore's retry jitter draws from it), so without renewal they would
    draw the same "random" numbers and retry in step."""
    service, *_ = _service(aws)
    snapstart.install(service)
    snapshot = random.getstate()

    def environment(renew: bool) -> list[float]:
        random.setstate(snapshot)
        if renew:
            run_hooks(registry[1])
        return [random.random() for _ in range(5)]

    assert environment(renew=False) == environment(renew=False)  # what sharing means
    assert environment(renew=True) != environment(renew=True)


def test_the_retry_jitter_and_lease_holder_ids_keep_no_state_a_snapshot_could_copy() -> None:
    """KubeApi draws its backoff from SystemRandom (the OS, each time), and a lease holder
    id is made per hold with uuid4 (the OS, each time): copies of a snapshotted process
    still draw differently."""
    import uuid

    kube = KubeApi(None)  # type: ignore[arg-type]  # no request is made
    assert isinstance(kube._rng, random.SystemRandom)
    with pytest.raises(NotImplementedError):
        kube._rng.getstate()  # nothing for a snapshot to hold
    draws = [kube._retry.delay(3, kube._rng) for _ in range(8)]
    assert len(set(draws)) == len(draws)
    pool_lock = importlib.import_module("lifeboat.kube.pool_lock")
    assert "uuid.uuid4()" in Path(present(pool_lock.__file__, "pool_lock.__file__")).read_text()
    assert uuid.uuid4() != uuid.uuid4()


def test_the_first_batch_after_a_restore_counts_as_a_cold_start(
    aws: boto3.Session, registry: tuple[list[Any], list[Any]]
) -> None:
    service, *_ = _service(aws)
    out: list[str] = []
    metrics = PowertoolsBatchMetrics("Lifeboat", out=out.append)
    metrics.flush()  # the environment's first batch (before the snapshot in this story)
    snapstart.install(service, metrics)
    assert metrics.flush() == 0
    run_hooks(registry[1])
    assert metrics.flush() == 1 and '"ColdStart":[1.0]' in out[-1]


def test_before_the_snapshot_the_wake_ups_models_are_loaded(
    aws: boto3.Session, registry: tuple[list[Any], list[Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plain cold start loads the wake-ups' pydantic models with the first wake-up
    (lifeboat.wakeup.codec.decode); a snapshot holds them, so a restored environment does not."""
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "1")
    monkeypatch.delitem(sys.modules, "lifeboat.wakeup.format", raising=False)
    service, *_ = _service(aws)
    snapstart.install(service, PowertoolsBatchMetrics("Lifeboat"), LazyTracer())
    run_hooks(registry[0], reverse=True)
    wakeup_format = sys.modules["lifeboat.wakeup.format"]
    assert wakeup_format.MODELS
    for model in wakeup_format.MODELS:  # defer_build: only built on first use otherwise
        assert model.__pydantic_complete__, model.__name__
