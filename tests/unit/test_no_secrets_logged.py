"""The bearer tokens Lifeboat sends to Kubernetes never reach a log line, stdout/stderr or a
file under /tmp.

One invocation of ``functions/interruption/app.py`` (``build_service`` monkeypatched) over the
Kubernetes emulator, with two clusters: one reached through ``lifeboat.eks_auth`` (a real
presigned-STS EKS token, minted with moto) and one through a ``Configuration`` carrying a
known static token. Everything is logged at DEBUG (botocore included), the Powertools logger
logs the incoming event, and the batch exercises acting, rejecting and a failing record (whose
error is logged). Canaries prove each capture would have seen a leak.
"""

from __future__ import annotations

import importlib.util
import io
import json
import logging
import os
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
from kubernetes import client as k8s

import lifeboat.service
from kubemu import Emulator
from lifeboat.eks_auth import EksAuth
from lifeboat.instances import InstanceInfo, StaticInstanceDirectory
from lifeboat.kube import KubeApi, RetryPolicy
from lifeboat.ledger import MemoryLedger
from lifeboat.pipeline import Pipeline
from lifeboat.service import Service
from lifeboat.settings import Settings
from tests.support import kube
from tests.support.aws import AwsCredentials, create_eks_cluster
from tests.support.events import sample
from tests.support.fakes import LambdaContext as _Context
from tests.support.paths import ROOT

REGION = "us-east-1"
NOW = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)
SPOT = sample("spot-interruption")
EKS_INSTANCE, STATIC_INSTANCE = "i-0a1b2c3d4e5f60001", "i-0a1b2c3d4e5f60002"


class _Clusters:
    def __init__(self, apis: dict[str, KubeApi]) -> None:
        self._apis = apis

    def kube(self, cluster: str | None) -> KubeApi:
        return self._apis[cluster or ""]


def _node(name: str, instance: str) -> dict[str, Any]:
    return kube.node(kube.NODE_GROUP_NODE, name=name, instance_id=instance, zone="us-east-1a")


@pytest.fixture
def aws_credentials() -> AwsCredentials:
    return AwsCredentials("AKIDNOSECRETSTEST", "secret-no-secrets-test", "SESSIONNOSECRETSTEST")


@pytest.fixture
def aws(aws: boto3.Session) -> boto3.Session:
    """The shared moto fixture, with the credentials above and an EKS cluster."""
    create_eks_cluster(aws, "prod")
    return aws


def _load_app(monkeypatch: pytest.MonkeyPatch, service: Service) -> Any:
    monkeypatch.setattr(lifeboat.service, "build_service", lambda env=None: service)
    spec = importlib.util.spec_from_file_location(
        "lifeboat_app_no_secrets", ROOT / "functions" / "interruption" / "app.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _files_under_tmp_containing(needles: list[bytes], since: float) -> list[str]:
    found = []
    for directory, _, files in os.walk("/tmp"):
        for name in files:
            path = os.path.join(directory, name)
            try:
                stat = os.stat(path, follow_symlinks=False)
                if stat.st_mtime < since or stat.st_size > 5_000_000 or not os.path.isfile(path):
                    continue
                with open(path, "rb") as handle:
                    data = handle.read()
            except OSError:
                continue
            found += [path for needle in needles if needle in data]
    return found


def test_no_token_in_logs_output_or_tmp(
    aws: boto3.Session,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    since = time.time() - 1
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "1")
    monkeypatch.setenv("POWERTOOLS_LOG_LEVEL", "DEBUG")
    monkeypatch.setenv("POWERTOOLS_LOGGER_LOG_EVENT", "true")
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "LifeboatTest")
    caplog.set_level(logging.DEBUG)
    static_token = f"static-{uuid.uuid4().hex}"

    objects = [_node("eks-node", EKS_INSTANCE), _node("static-node", STATIC_INSTANCE)]
    with Emulator(objects) as emulator:
        auth = EksAuth(session=aws, region=REGION)
        eks_config = auth.configuration("prod")
        eks_config.host = emulator.url  # the cluster's API server is the emulator here
        eks_token = auth.token("prod")
        assert eks_config.api_key["BearerToken"] == eks_token  # the credential in use
        static_config = k8s.Configuration(
            host=emulator.url,
            api_key={"BearerToken": static_token},
            api_key_prefix={"BearerToken": "Bearer"},
        )
        assert static_token in static_config.get_api_key_with_prefix("BearerToken")
        retry = RetryPolicy(attempts=2, base_delay=0.001)
        pipeline = Pipeline(
            clusters=_Clusters(
                {
                    "prod": KubeApi(k8s.ApiClient(eks_config), retry),
                    "legacy": KubeApi(k8s.ApiClient(static_config), retry),
                }
            ),
            directory=StaticInstanceDirectory(
                [
                    InstanceInfo(EKS_INSTANCE, node_name="eks-node", cluster="prod"),
                    InstanceInfo(STATIC_INSTANCE, node_name="static-node", cluster="legacy"),
                ]
            ),
            settings=Settings(clusters=("prod", "legacy")),
            clock=lambda: NOW,
            ledger=MemoryLedger(),
        )
        app = _load_app(monkeypatch, Service(pipeline, pipeline.settings))
        # What the Powertools logger writes, whatever stream its handler was bound to (an
        # earlier test in this process may have built the same "lifeboat" logger).
        powertools_output = io.StringIO()
        lifeboat_logger = logging.getLogger("lifeboat")
        handler = logging.StreamHandler(powertools_output)
        lifeboat_logger.addHandler(handler)
        level = lifeboat_logger.level
        lifeboat_logger.setLevel(logging.DEBUG)
        # The static cluster's node patch fails for good: its record fails and is logged.
        emulator.fail_next(500, times=100, verb="patch", resource="nodes", name="static-node")
        bodies = [
            {**SPOT, "id": "e-1", "detail": {**SPOT["detail"], "instance-id": EKS_INSTANCE}},
            {**SPOT, "id": "e-2", "detail": {**SPOT["detail"], "instance-id": STATIC_INSTANCE}},
            {"not": "an event"},
        ]
        event = {
            "Records": [
                {"messageId": f"m-{i}", "body": json.dumps(body), "eventSource": "aws:sqs"}
                for i, body in enumerate(bodies)
            ]
        }
        response = app.lambda_handler(event, _Context())
        assert response == {"batchItemFailures": [{"itemIdentifier": "m-1"}]}
        node = emulator.get_object("Node", "eks-node")
        assert node is not None and node["spec"].get("unschedulable") is True

        # Canaries: each capture sees what goes through it.
        canary = f"canary-{uuid.uuid4().hex}"
        logging.getLogger("botocore.endpoint").debug("canary %s", canary)
        app.logger.info(canary)
        Path(f"/tmp/lifeboat-canary-{canary}").write_text(canary)
        try:
            output = capfd.readouterr()
            logged = caplog.text + " ".join(str(r.__dict__) for r in caplog.records)
            written = powertools_output.getvalue()
            everything = logged + written + output.out + output.err
            assert canary in logged and canary in written
            assert "decision" in written and "message failed" in written
            secrets = [eks_token, static_token, eks_token[len("k8s-aws-v1.") :][:40]]
            secrets.append(eks_config.api_key["BearerToken"])  # the refreshed one
            for secret in secrets:
                assert secret not in everything
            tmp = _files_under_tmp_containing(
                [s.encode() for s in secrets] + [canary.encode()], since
            )
            assert tmp == [f"/tmp/lifeboat-canary-{canary}"]
        finally:
            Path(f"/tmp/lifeboat-canary-{canary}").unlink()
            lifeboat_logger.removeHandler(handler)
            lifeboat_logger.setLevel(level)
