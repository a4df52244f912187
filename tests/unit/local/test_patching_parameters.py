"""The public SSM parameter naming a node's recommended AMI (patching.judge), per AWS's
documented paths: EKS-optimized AL2023 (standard/nvidia, x86_64/arm64), AL2 (plain, -arm64,
-gpu) and Bottlerocket (aws-k8s-<version>[-nvidia]/<arch>/latest)."""

from __future__ import annotations

from typing import Any

import pytest

from lifeboat_local.patching.judge import facts, recommended_parameter

EKS = "/aws/service/eks/optimized-ami/1.30"
ROCKET = "/aws/service/bottlerocket"


def node(os_image: str, arch: str = "amd64", gpus: str = "0", kubelet: str = "v1.30.4") -> Any:
    return {
        "metadata": {"name": "n", "labels": {}},
        "spec": {"providerID": "aws:///eu-west-1a/i-0abc"},
        "status": {
            "capacity": {"nvidia.com/gpu": gpus},
            "nodeInfo": {"kubeletVersion": kubelet, "osImage": os_image, "architecture": arch},
        },
    }


AL2023, AL2, BR = "Amazon Linux 2023.6", "Amazon Linux 2", "Bottlerocket OS 1.27.0"
CASES: list[tuple[Any, str | None]] = [
    (node(AL2023), f"{EKS}/amazon-linux-2023/x86_64/standard/recommended/image_id"),
    (node(AL2023, arch="arm64"), f"{EKS}/amazon-linux-2023/arm64/standard/recommended/image_id"),
    (node(AL2023, gpus="4"), f"{EKS}/amazon-linux-2023/x86_64/nvidia/recommended/image_id"),
    (node(AL2), f"{EKS}/amazon-linux-2/recommended/image_id"),
    (node(AL2, arch="arm64"), f"{EKS}/amazon-linux-2-arm64/recommended/image_id"),
    (node(AL2, gpus="1"), f"{EKS}/amazon-linux-2-gpu/recommended/image_id"),
    (node(BR), f"{ROCKET}/aws-k8s-1.30/x86_64/latest/image_id"),
    (node(BR, arch="arm64", gpus="1"), f"{ROCKET}/aws-k8s-1.30-nvidia/arm64/latest/image_id"),
    (node("Ubuntu 22.04.4 LTS"), None),
    (node(AL2023, kubelet=""), None),
]


@pytest.mark.parametrize(("obj", "expected"), CASES)
def test_recommended_parameter(obj: Any, expected: str | None) -> None:
    assert recommended_parameter(facts(obj)) == expected


def test_instance_id_comes_from_the_provider_id() -> None:
    assert facts(node("Amazon Linux 2")).instance_id == "i-0abc"


def test_the_rotate_line_names_a_valid_rotation_for_any_group_name() -> None:
    """Rotation names are DNS labels of at most 40: a long group name with dots is cut and
    cleaned, and the line still parses as a rotation request."""
    from datetime import UTC, datetime

    from lifeboat.rotation.request import (
        NAME_MAX,
        RotationSpec,
        Verb,
        command_event,
        parse_command,
    )
    from lifeboat_local.patching.command import summary
    from lifeboat_local.patching.judge import Verdict

    obj = node("Amazon Linux 2023.6")
    group_name = "M5.8xlarge-min-300-max-2500-prod-eu"
    obj["metadata"]["labels"] = {"eks.amazonaws.com/nodegroup": group_name}
    verdict = Verdict(
        node=facts(obj),
        ami="ami-0123456789abcdef0",
        ami_source="ec2",
        parameter=None,
        recommended="ami-0fedcba9876543210",
        ami_created=None,
        recommended_created=None,
        age_days=40,
        status="outdated",
        gating=True,
    )
    [group] = summary([verdict], "prod-a")
    name = group["rotate"].split()[2]
    assert len(name) <= NAME_MAX and name.startswith("patch-m5-8xlarge")
    spec = RotationSpec(name=name, amis=("ami-0123456789abcdef0",))
    event = command_event(Verb.REQUEST, name, spec=spec, now=datetime(2026, 12, 1, tzinfo=UTC))
    assert parse_command(event).name == name
