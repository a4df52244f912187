"""EKS bearer tokens and the per-container cache of cluster clients (moto, no network)."""

from __future__ import annotations

import base64
import logging
from typing import Any
from urllib.parse import parse_qs, urlparse

import boto3
import pytest

from lifeboat.kube.eks_auth import (
    CLUSTER_ID_HEADER,
    TOKEN_PREFIX,
    EksAuth,
    EksAuthError,
    generate_token,
)
from tests.support.aws import AwsCredentials, create_eks_cluster

REGION = "eu-west-1"
CLUSTER = "prod-eu"
# A syntactically valid PEM block; EKS returns base64(PEM) in certificateAuthority.data.
FAKE_PEM = (
    "-----BEGIN CERTIFICATE-----\n"
    + base64.b64encode(b"not a real certificate, only public test data").decode()
    + "\n-----END CERTIFICATE-----\n"
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def aws_region() -> str:
    return REGION


@pytest.fixture
def aws_credentials() -> AwsCredentials:
    return AwsCredentials("AKIDTESTLIFEBOAT", "secret-test-lifeboat", "SESSIONTOKENLIFEBOATXYZ")


@pytest.fixture
def aws(aws: boto3.Session) -> boto3.Session:
    """The shared moto fixture, in REGION with the credentials above, and an EKS cluster."""
    create_eks_cluster(aws, CLUSTER)
    _set_cluster_ca(CLUSTER, FAKE_PEM)
    return aws


def _set_cluster_ca(name: str, pem: str) -> None:
    # moto fills certificateAuthority.data with random characters; give it a PEM like EKS.
    from moto.core.models import DEFAULT_ACCOUNT_ID
    from moto.eks.models import eks_backends

    cluster = eks_backends[DEFAULT_ACCOUNT_ID][REGION].clusters[name]
    cluster.certificate_authority = {"data": base64.b64encode(pem.encode()).decode()}


def _decode(token: str) -> str:
    assert token.startswith(TOKEN_PREFIX)
    body = token[len(TOKEN_PREFIX) :]
    assert "=" not in body, "token must be unpadded base64url"
    assert "+" not in body
    assert "/" not in body
    return base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode()


def _counting_eks(session: boto3.Session) -> tuple[Any, list[str]]:
    eks = session.client("eks", region_name=REGION)
    calls: list[str] = []

    def count(**kwargs: Any) -> None:
        calls.append(kwargs["event_name"])

    eks.meta.events.register("before-call.eks.DescribeCluster", count)
    return eks, calls


def test_token_is_a_presigned_get_caller_identity_url(aws: boto3.Session) -> None:
    token = EksAuth(session=aws).token(CLUSTER)

    url = urlparse(_decode(token))
    query = parse_qs(url.query)
    assert url.scheme == "https"
    assert url.hostname == f"sts.{REGION}.amazonaws.com"
    assert query["Action"] == ["GetCallerIdentity"]
    assert query["Version"] == ["2011-06-15"]
    assert query["X-Amz-Expires"] == ["60"]
    assert query["X-Amz-Algorithm"] == ["AWS4-HMAC-SHA256"]
    signed = query["X-Amz-SignedHeaders"][0].split(";")
    assert CLUSTER_ID_HEADER in signed
    assert "host" in signed
    assert f"/{REGION}/sts/aws4_request" in query["X-Amz-Credential"][0]
    assert query["X-Amz-Security-Token"] == ["SESSIONTOKENLIFEBOATXYZ"]


def test_token_for_another_cluster_differs_in_signature(aws: boto3.Session) -> None:
    sts = aws.client("sts", region_name=REGION)
    first = parse_qs(urlparse(_decode(generate_token(sts, "a"))).query)
    second = parse_qs(urlparse(_decode(generate_token(sts, "b"))).query)
    assert first["X-Amz-Signature"] != second["X-Amz-Signature"]
    # The header hook is removed again after each token.
    assert sts.generate_presigned_url("get_caller_identity")  # no leftover handler errors


def test_global_sts_endpoint_is_replaced_by_the_regional_one(aws: boto3.Session) -> None:
    token = EksAuth(session=aws, region="us-east-1").token(CLUSTER)
    assert urlparse(_decode(token)).hostname == "sts.us-east-1.amazonaws.com"


def test_empty_cluster_name_is_rejected(aws: boto3.Session) -> None:
    with pytest.raises(EksAuthError, match="cluster_name"):
        generate_token(aws.client("sts"), "")


def test_cluster_is_described_once_per_container(aws: boto3.Session) -> None:
    eks, calls = _counting_eks(aws)
    auth = EksAuth(session=aws, eks_client=eks)

    first = auth.configuration(CLUSTER)
    second = auth.configuration(CLUSTER)

    assert len(calls) == 1
    assert first.host == second.host
    assert first.host.startswith("https://")
    assert first.ca_cert_data == FAKE_PEM
    assert first.ssl_ca_cert is None, "the CA is passed in memory, not through a file"
    assert auth.api_client(CLUSTER) is auth.api_client(CLUSTER)
    assert len(calls) == 1


def test_unknown_cluster_names_the_setting_to_fix(aws: boto3.Session) -> None:
    with pytest.raises(EksAuthError, match="LIFEBOAT_CLUSTERS"):
        EksAuth(session=aws).cluster_info("nope")


def test_token_is_reused_then_renewed_after_the_renewal_point(aws: boto3.Session) -> None:
    clock = FakeClock()
    auth = EksAuth(session=aws, clock=clock)
    first = auth.token(CLUSTER)

    clock.now += 9 * 60
    assert auth.token(CLUSTER) == first

    clock.now += 61
    renewed = auth.token(CLUSTER)
    # botocore signs with the wall clock, which may not have moved: compare what we minted,
    # not the signature.
    assert auth._tokens[CLUSTER].minted_at == clock.now
    assert renewed.startswith(TOKEN_PREFIX)


def test_configuration_refreshes_its_bearer_token(aws: boto3.Session) -> None:
    clock = FakeClock()
    minted: list[str] = []
    auth = EksAuth(session=aws, clock=clock)
    original = auth.token

    def spy(name: str) -> str:
        value = original(name)
        minted.append(value)
        return value

    auth.token = spy  # type: ignore[method-assign,assignment]
    configuration = auth.configuration(CLUSTER)

    header = configuration.auth_settings()["BearerToken"]
    assert header["key"] == "authorization"
    assert header["value"] == f"Bearer {minted[-1]}"
    before = auth._tokens[CLUSTER].minted_at

    clock.now += 11 * 60
    configuration.auth_settings()
    assert auth._tokens[CLUSTER].minted_at > before


def test_token_never_appears_in_logs(
    aws: boto3.Session, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The Lambda's Powertools Logger (named "lifeboat", loaded by other tests) stops its
    # children's records from propagating to the root logger, where caplog listens, and
    # sets its own level.
    monkeypatch.setattr(logging.getLogger("lifeboat"), "propagate", True)
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="lifeboat")
    auth = EksAuth(session=aws)
    auth.cluster_info(CLUSTER)  # botocore logs its own DescribeCluster call; not ours to hide
    caplog.clear()

    configuration = auth.configuration(CLUSTER)
    header = configuration.auth_settings()["BearerToken"]["value"]
    assert isinstance(header, str)
    token = header.removeprefix("Bearer ")

    signature = parse_qs(urlparse(_decode(token)).query)["X-Amz-Signature"][0]
    logged = caplog.text + "".join(str(r.args) for r in caplog.records)
    assert any(r.name == "lifeboat.kube.eks_auth" for r in caplog.records), "debug logging was on"
    assert token not in logged
    assert token[len(TOKEN_PREFIX) :][:40] not in logged
    # What would let someone rebuild the token: the signature and the session token.
    assert signature not in logged
    assert "SESSIONTOKENLIFEBOATXYZ" not in logged
    assert token not in repr(auth.cluster_info(CLUSTER))


def test_signing_logs_of_other_calls_are_not_suppressed(
    aws: boto3.Session, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    EksAuth(session=aws).token(CLUSTER)
    caplog.clear()
    aws.client("sts", region_name=REGION).get_caller_identity()
    assert any(r.name == "botocore.auth" for r in caplog.records)
