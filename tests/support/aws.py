"""moto's AWS, as the ``aws`` fixture of ``tests/conftest.py`` sets it up, and what tests
create in it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tests.support.events import ACCOUNT

# The image instances are launched from. moto launches any id (it validates AMIs only with
# MOTO_ENABLE_AMI_VALIDATION) and the ``aws`` fixture does not load moto's ~2,700 built-in
# images (MOTO_EC2_LOAD_DEFAULT_AMIS=false: seconds per test); a test that reads an image
# registers it.
ANY_AMI = "ami-0123456789abcdef0"


@dataclass(frozen=True)
class AwsCredentials:
    """What the ``aws`` fixture puts in the environment (moto accepts any)."""

    access_key_id: str = "testing"
    secret_access_key: str = "testing"
    session_token: str = "testing"


def create_eks_cluster(session: Any, name: str) -> None:
    """An EKS cluster in moto, for the code that looks up its endpoint and CA."""
    session.client("eks").create_cluster(
        name=name,
        roleArn=f"arn:aws:iam::{ACCOUNT}:role/eks",
        resourcesVpcConfig={"subnetIds": ["subnet-1"]},
    )


def create_idempotency_table(client: Any, name: str) -> None:
    """The table of template.yaml's IdempotencyTable: key ``id`` (a string), on demand."""
    client.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
