"""No credential reaches a log line, stdout/stderr or a temporary file: neither the bearer
tokens Lifeboat sends to Kubernetes nor the Lambda role's own credentials
(``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, and the access key id with them).

One invocation of ``functions/interruption/app.py`` (``build_service`` monkeypatched, and
run by the import as in Lambda) over the Kubernetes emulator, with two clusters: one reached
through ``lifeboat.kube.eks_auth`` (a real presigned-STS EKS token, minted with moto) and one
through a ``Configuration`` carrying a known static token; EC2 (DescribeInstances) and the
Powertools idempotency ledger (DynamoDB) on moto, so botocore signs requests during the
batch. The root logger is at DEBUG, as Lambda sets it for ApplicationLogLevel DEBUG (what
samconfig's default environment deploys), the Powertools logger logs the incoming event, and
the batch exercises acting, rejecting and a failing record (whose error is logged).
Canaries prove each capture would have seen a leak.

Regression: botocore logs the canonical request of every call it signs at DEBUG, with the
``X-Amz-Security-Token`` header, so the role's session token reached the log group.
"""

from __future__ import annotations

import importlib.util
import io
import json
import logging
import os
import tempfile
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
from kubernetes import client as k8s
from moto import mock_aws

import lifeboat.runtime.service
from kubemu import Emulator, builders
from lifeboat.aws.idempotency import PowertoolsLedger
from lifeboat.flow.pipeline import Pipeline
from lifeboat.kube.client import KubeApi, RetryPolicy
from lifeboat.kube.eks_auth import EksAuth
from lifeboat.model.instances import Ec2InstanceDirectory
from lifeboat.model.settings import Settings
from lifeboat.runtime.service import Service
from tests.support.aws import ANY_AMI

ROOT = Path(__file__).resolve().parents[3]
REGION = "us-east-1"
NOW = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)
SPOT = json.loads((ROOT / "events" / "spot-interruption.json").read_text())


class _Clusters:
    def __init__(self, apis: dict[str, KubeApi]) -> None:
        self._apis = apis

    def kube(self, cluster: str | None) -> KubeApi:
        return self._apis[cluster or ""]


class _Context:
    function_name = "lifeboat-interruption"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:lifeboat"
    aws_request_id = "req-1"

    def get_remaining_time_in_millis(self) -> int:
        return 60_000


def _node(name: str, instance: str) -> dict[str, Any]:
    return builders.node(name, providerID=f"aws:///us-east-1a/{instance}")


# Unique per run, so no other text can contain them by chance.
ROLE_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": f"AKID{uuid.uuid4().hex[:16].upper()}",
    "AWS_SECRET_ACCESS_KEY": f"secret{uuid.uuid4().hex}",
    "AWS_SESSION_TOKEN": f"IQoJb3JpZ2luX2VjE{uuid.uuid4().hex}{uuid.uuid4().hex}",
}


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[boto3.Session]:
    for name, value in ROLE_CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with mock_aws():
        session = boto3.Session(region_name=REGION)
        session.client("eks").create_cluster(
            name="prod",
            roleArn="arn:aws:iam::123456789012:role/eks",
            resourcesVpcConfig={"subnetIds": ["subnet-1"]},
        )
        session.client("dynamodb").create_table(
            TableName="idempotency",
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            BillingMode="PAY_PER_REQUEST",
        )
        yield session


def _launch(session: boto3.Session, cluster: str) -> tuple[str, str]:
    """An instance of ``cluster`` in moto EC2: (instance id, node name = private DNS name)."""
    ec2 = session.client("ec2")
    [instance] = ec2.run_instances(
        ImageId=ANY_AMI,
        MinCount=1,
        MaxCount=1,
        TagSpecifications=[
            {"ResourceType": "instance", "Tags": [{"Key": "eks:cluster-name", "Value": cluster}]}
        ],
    )["Instances"]
    return str(instance["InstanceId"]), str(instance["PrivateDnsName"])


def _load_app() -> Any:
    """Import the entry point afresh (it builds the service at import, as in Lambda)."""
    spec = importlib.util.spec_from_file_location(
        "lifeboat_app_no_secrets", ROOT / "functions" / "interruption" / "app.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _files_containing(needles: list[bytes], root: Path) -> list[str]:
    """The files under ``root`` (the test's own temporary directory) holding a needle."""
    found = []
    for directory, _, files in os.walk(root):
        for name in files:
            path = os.path.join(directory, name)
            data = Path(path).read_bytes()
            found += [path for needle in needles if needle in data]
    return found


def test_no_token_or_role_credential_in_logs_output_or_tmp(
    aws: boto3.Session,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    # Lambda's writable /tmp is where a library's temporary files go (``tempfile``: the
    # kubernetes client's CA and key files, for one); here that is a directory of the
    # test's own, so only what this invocation wrote is read, never the machine's /tmp.
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "1")
    monkeypatch.setenv("POWERTOOLS_LOG_LEVEL", "DEBUG")
    monkeypatch.setenv("POWERTOOLS_LOGGER_LOG_EVENT", "true")
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "LifeboatTest")
    static_token = f"static-{uuid.uuid4().hex}"
    # The test's own setup, before the function's process "starts".
    (eks_instance, eks_node), (static_instance, static_node) = (
        _launch(aws, "prod"),
        _launch(aws, "legacy"),
    )
    caplog.set_level(logging.DEBUG)  # the root logger, as Lambda's DEBUG log level sets it
    for name in ("botocore", "boto3", "urllib3", "kubernetes"):  # as a fresh process has them
        monkeypatch.setattr(logging.getLogger(name), "level", logging.NOTSET)
    objects = [_node(eks_node, eks_instance), _node(static_node, static_instance)]
    with Emulator(objects) as emulator:
        built: dict[str, Any] = {}

        def build_service(env: Any = None) -> Service:
            """What lifeboat.runtime.service builds, with the clusters' API servers emulated."""
            auth = EksAuth(session=aws, region=REGION)
            eks_config = auth.configuration("prod")
            eks_config.host = emulator.url  # the cluster's API server is the emulator here
            static_config = k8s.Configuration(
                host=emulator.url,
                api_key={"BearerToken": static_token},
                api_key_prefix={"BearerToken": "Bearer"},
            )
            retry = RetryPolicy(attempts=2, base_delay=0.001)
            pipeline = Pipeline(
                clusters=_Clusters(
                    {
                        "prod": KubeApi(k8s.ApiClient(eks_config), retry),
                        "legacy": KubeApi(k8s.ApiClient(static_config), retry),
                    }
                ),
                directory=Ec2InstanceDirectory(aws.client("ec2")),
                settings=Settings(clusters=("prod", "legacy")),
                clock=lambda: NOW,
                ledger=PowertoolsLedger("idempotency", boto3_client=aws.client("dynamodb")),
            )
            built.update(auth=auth, eks_config=eks_config)
            return Service(pipeline, pipeline.settings)

        monkeypatch.setattr(lifeboat.runtime.service, "build_service", build_service)
        app = _load_app()
        auth, eks_config = built["auth"], built["eks_config"]
        eks_token = auth.token("prod")
        assert eks_config.api_key["BearerToken"] == eks_token  # the credential in use
        # What the Powertools logger writes, whatever stream its handler was bound to (an
        # earlier test in this process may have built the same "lifeboat" logger).
        powertools_output = io.StringIO()
        lifeboat_logger = logging.getLogger("lifeboat")
        handler = logging.StreamHandler(powertools_output)
        lifeboat_logger.addHandler(handler)
        level = lifeboat_logger.level
        lifeboat_logger.setLevel(logging.DEBUG)
        # The static cluster's node patch fails for good: its record fails and is logged.
        emulator.fail_next(500, times=100, verb="patch", resource="nodes", name=static_node)
        bodies = [
            {**SPOT, "id": "e-1", "detail": {**SPOT["detail"], "instance-id": eks_instance}},
            {**SPOT, "id": "e-2", "detail": {**SPOT["detail"], "instance-id": static_instance}},
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
        node = emulator.get_object("Node", eks_node)
        assert node is not None and node["spec"].get("unschedulable") is True

        # Canaries: each capture sees what goes through it (botocore's loggers included:
        # held at INFO, not silenced).
        canary = f"canary-{uuid.uuid4().hex}"
        logging.getLogger("botocore.endpoint").info("canary %s", canary)
        app.logger.info(canary)
        with tempfile.NamedTemporaryFile("w", prefix="lifeboat-canary-", delete=False) as file:
            file.write(canary)
        try:
            output = capfd.readouterr()
            logged = caplog.text + " ".join(str(r.__dict__) for r in caplog.records)
            written = powertools_output.getvalue()
            everything = logged + written + output.out + output.err
            assert canary in logged and canary in written
            assert "decision" in written and "message failed" in written
            secrets = [eks_token, static_token, eks_token[len("k8s-aws-v1.") :][:40]]
            secrets.append(eks_config.api_key["BearerToken"])  # the refreshed one
            secrets += ROLE_CREDENTIALS.values()
            leaked = [name for name, value in ROLE_CREDENTIALS.items() if value in everything]
            assert leaked == []
            for secret in secrets:
                assert secret not in everything
            tmp = _files_containing([s.encode() for s in secrets] + [canary.encode()], scratch)
            assert tmp == [file.name]
        finally:
            lifeboat_logger.removeHandler(handler)
            lifeboat_logger.setLevel(level)


def test_third_party_loggers_stay_out_of_debug_whatever_the_root_level() -> None:
    from lifeboat.telemetry.observability import THIRD_PARTY_LOGGERS, quiet_third_party_loggers

    root = logging.getLogger()
    saved = root.level, {n: logging.getLogger(n).level for n in THIRD_PARTY_LOGGERS}
    try:
        root.setLevel(logging.DEBUG)
        logging.getLogger("urllib3").setLevel(logging.ERROR)  # an operator's stricter choice
        ours = logging.getLogger("lifeboat").level
        quiet_third_party_loggers()
        for name in THIRD_PARTY_LOGGERS:
            assert not logging.getLogger(name).isEnabledFor(logging.DEBUG), name
            assert not logging.getLogger(f"{name}.child").isEnabledFor(logging.DEBUG), name
        assert logging.getLogger("urllib3").level == logging.ERROR  # kept
        assert logging.getLogger("lifeboat").level == ours  # Lifeboat's own level untouched
    finally:
        root.setLevel(saved[0])
        for name, level in saved[1].items():
            logging.getLogger(name).setLevel(level)
