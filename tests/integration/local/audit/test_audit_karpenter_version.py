"""``lifeboat audit --kubeconfig`` warns about a Karpenter controller of v1.12 or later.

From v1.12.0 Karpenter's AWS provider runs ``interruption.instancestatus``
(``pkg/controllers/interruption/instancestatus_controller.go``, registered unconditionally
in ``pkg/controllers/controllers.go``): it deletes the NodeClaim of every instance with an
EC2 scheduled event at once, unless its role is denied ``ec2:DescribeInstanceStatus``. v1.11
has no such controller. The version is the controller Deployment's image tag, as the Helm
chart writes it (``public.ecr.aws/karpenter/controller:1.12.1@sha256:...``).
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from kubemu import Emulator
from lifeboat_local.audit.karpenter_version import image_version
from lifeboat_local.cli import main
from tests.support.kubeconfigs import write_kubeconfig

CHECK = "karpenter-instance-status"
DIGEST = "@sha256:" + "0" * 64


def karpenter_deployment(image: str, name: str = "karpenter") -> dict[str, Any]:
    labels = {"app.kubernetes.io/name": "karpenter", "app.kubernetes.io/instance": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "kube-system", "labels": labels},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "controller", "image": image}]},
            },
        },
    }


def audit_live(tmp_path: Path, *objects: dict[str, Any]) -> tuple[int, list[dict[str, Any]]]:
    with Emulator(list(objects)) as emulator:
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", emulator.url)
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            status = main(["audit", "--kubeconfig", str(kubeconfig), "--json"])
    findings: list[dict[str, Any]] = json.loads(out.getvalue())["findings"]
    return status, [f for f in findings if f["check"] == CHECK]


@pytest.mark.parametrize("tag", ["1.12.0", "v1.13.1", "1.14.1"])
def test_a_karpenter_controller_from_1_12_is_a_warning_naming_the_deny(
    tmp_path: Path, tag: str
) -> None:
    image = f"public.ecr.aws/karpenter/controller:{tag}{DIGEST}"
    status, [finding] = audit_live(tmp_path, karpenter_deployment(image))
    assert finding["severity"] == "warning"
    assert finding["object"] == {
        "kind": "Deployment",
        "namespace": "kube-system",
        "name": "karpenter",
    }
    assert "polls ec2:DescribeInstanceStatus" in finding["message"]
    assert "deny ec2:DescribeInstanceStatus" in finding["fix"]
    assert "Running with Karpenter" in finding["fix"]
    assert status == 0  # a warning fails the audit only with --strict


def test_karpenter_1_11_and_other_deployments_are_not_reported(tmp_path: Path) -> None:
    _, found = audit_live(
        tmp_path,
        karpenter_deployment(f"public.ecr.aws/karpenter/controller:1.11.3{DIGEST}"),
        karpenter_deployment("nginx:1.27", name="web"),
    )
    assert found == []


@pytest.mark.parametrize(
    ("image", "version"),
    [
        ("public.ecr.aws/karpenter/controller:1.12.0@sha256:abc", (1, 12)),
        ("123456789012.dkr.ecr.us-east-1.amazonaws.com/karpenter/controller:v1.14.1", (1, 14)),
        ("public.ecr.aws/karpenter/controller:1.13.0-rc.1", (1, 13)),
        ("public.ecr.aws/karpenter/controller@sha256:abc", None),  # digest only: unknown
        ("public.ecr.aws/karpenter/controller:latest", None),
        ("registry:5000/karpenter/controller", None),  # a port, not a tag
        ("public.ecr.aws/karpenter/karpenter-webhook:1.12.0", None),
        ("example.com/notkarpenter/controller:1.12.0", None),
    ],
)
def test_image_version(image: str, version: tuple[int, int] | None) -> None:
    assert image_version(image) == version


# --- whether the deny is in place (iam:SimulatePrincipalPolicy) --------------------------------

ROLE = "arn:aws:iam::123456789012:role/KarpenterController-prod"


def audit_with_role(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answer: dict[str, Any] | None
) -> list[dict[str, Any]]:
    """The audit given Karpenter's role, IAM's simulator answering ``answer`` (None: the
    call is refused) through botocore's Stubber, which checks the request IAM gets."""
    import boto3
    from botocore.stub import Stubber

    from lifeboat_local.audit import karpenter_access

    iam = boto3.client(
        "iam", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    stubber = Stubber(iam)
    expected = {"PolicySourceArn": ROLE, "ActionNames": ["ec2:DescribeInstanceStatus"]}
    if answer is None:
        stubber.add_client_error(
            "simulate_principal_policy",
            "AccessDenied",
            http_status_code=403,
            expected_params=expected,
        )
    else:
        stubber.add_response("simulate_principal_policy", answer, expected)
    stubber.activate()
    monkeypatch.setattr(karpenter_access, "default_client", lambda: iam)
    image = f"public.ecr.aws/karpenter/controller:1.13.1{DIGEST}"
    with Emulator([karpenter_deployment(image)]) as emulator:
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", emulator.url)
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            main(["audit", "--kubeconfig", str(kubeconfig), "--json", "--karpenter-role-arn", ROLE])
    stubber.assert_no_pending_responses()
    findings: list[dict[str, Any]] = json.loads(out.getvalue())["findings"]
    return [f for f in findings if f["check"] == CHECK]


def decision(value: str) -> dict[str, Any]:
    return {
        "EvaluationResults": [
            {
                "EvalActionName": "ec2:DescribeInstanceStatus",
                "EvalResourceName": "*",
                "EvalDecision": value,
            }
        ]
    }


@pytest.mark.parametrize("denied", ["explicitDeny", "implicitDeny"])
def test_once_the_deny_is_in_place_the_check_says_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, denied: str
) -> None:
    """It warned for every Karpenter >= 1.12, deny or not."""
    assert audit_with_role(tmp_path, monkeypatch, decision(denied)) == []


def test_a_role_still_allowed_the_action_is_a_warning_saying_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    [finding] = audit_with_role(tmp_path, monkeypatch, decision("allowed"))
    assert f"role {ROLE} is allowed it" in finding["message"]
    assert "restart" in finding["fix"]


def test_when_iam_cannot_say_the_finding_gives_the_one_command_that_tells(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    [finding] = audit_with_role(tmp_path, monkeypatch, None)
    assert "IAM could not say" in finding["message"] and "AccessDenied" in finding["message"]
    assert (
        f"aws iam simulate-principal-policy --policy-source-arn {ROLE} "
        "--action-names ec2:DescribeInstanceStatus" in finding["fix"]
    )


def test_without_a_role_the_finding_names_the_flag_and_the_command(tmp_path: Path) -> None:
    image = f"public.ecr.aws/karpenter/controller:1.12.0{DIGEST}"
    _, [finding] = audit_live(tmp_path, karpenter_deployment(image))
    assert "--karpenter-role-arn" in finding["fix"]
    assert "aws iam simulate-principal-policy" in finding["fix"]
