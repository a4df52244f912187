"""`lifeboat convert` under hostile and partial input (a review's attacks, kept where they
protect): two groups that would share one pool, a launch template whose first volume is not
the root one or that maps a device twice, a launch template version that is gone, sizes past
what Karpenter's EC2NodeClass CRD accepts. Outputs are created on the emulator, whose
EC2NodeClass checks are the upstream CRD's (kubemu/crds, shipped unchanged)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import pytest

from kubemu import Emulator
from tests.conftest import CliRun
from tests.integration.local.convert.test_convert import (
    ISSUE_SETTINGS,
    _eks_image,
    _network,
    apply_all,
    write,
)
from tests.integration.local.convert.test_convert_faithful import _asg, _template
from tests.support import cyaml

PINNED = ("--ami-alias", "al2023@v20241121")


@pytest.fixture
def aws_region() -> str:
    return "eu-west-1"


def _settings(tmp_path: Path, cli: Callable[..., CliRun], text: str) -> CliRun:
    return cli(
        "convert", "--settings", write(tmp_path, text), "--cluster-name", "prod-a",
        "--zone", "eu-west-1a", *PINNED,
    )  # fmt: skip


def _named(name: str) -> str:
    return ISSUE_SETTINGS.replace("m5.8xlarge-min-300-max-2500", name)


def _pools(out: str) -> list[str]:
    items = cyaml.safe_load(out)["items"]
    return [o["metadata"]["name"] for o in items if o["kind"] == "NodePool"]


# --- one pool name for two groups ---------------------------------------------------------


def test_two_settings_of_one_name_are_refused_not_one_silently_replacing_the_other(
    tmp_path: Path, cli: Callable[..., CliRun]
) -> None:
    """Applied, the second NodePool of a name replaces the first: the second is refused."""
    run = _settings(tmp_path, cli, _named("workers") + "---\n" + _named("workers"))
    assert run.code == 2, run.err
    assert _pools(run.out) == ["workers"]
    assert "document 2" in run.err and "as " in run.err and "document 1" in run.err


def test_a_group_named_as_another_groups_mapped_name_is_refused(
    tmp_path: Path, cli: Callable[..., CliRun]
) -> None:
    """``ng_1`` maps to ``ng-1-<hash>``; a group already named so would share its pool."""
    mapped = "ng-1-" + hashlib.sha256(b"ng_1").hexdigest()[:6]
    run = _settings(tmp_path, cli, _named("ng_1") + "---\n" + _named(mapped))
    assert run.code == 2, run.err
    assert _pools(run.out) == [mapped]
    assert f"would be named '{mapped}'" in run.err


# --- block devices ------------------------------------------------------------------------


def _volume(device: str, size: int, **ebs: Any) -> dict[str, Any]:
    return {"DeviceName": device, "Ebs": {"VolumeSize": size, "VolumeType": "gp3", **ebs}}


def _convert_template(aws: boto3.Session, cli: Callable[..., CliRun], **data: Any) -> CliRun:
    net = _network(aws)
    image = _eks_image(aws, "amazon-eks-node-al2023-x86_64-standard-1.31-v20241121")
    template = _template(aws, net, image, "legacy-workers", InstanceType="m5.large", **data)
    _asg(aws, net, LaunchTemplate={"LaunchTemplateId": template, "Version": "1"})
    return cli("convert", "--node-group", "legacy-workers", "--cluster-name", "prod-a")


def test_the_root_volume_is_the_amis_root_device_not_the_first_listed_and_data_volumes_kept(
    aws: boto3.Session, cli: Callable[..., CliRun], emulator: Emulator
) -> None:
    """``rootVolume`` is the volume Karpenter sizes ephemeral storage by (karpenter-provider-aws
    instancetype ``ephemeralStorage``): a 500 GiB data volume listed first must not be it,
    and listing any volume drops the others (they are the class's only mappings)."""
    run = _convert_template(
        aws, cli, BlockDeviceMappings=[_volume("/dev/xvdb", 500), _volume("/dev/xvda", 30)]
    )
    assert run.code == 0, run.err
    items = cyaml.safe_load(run.out)["items"]
    mappings = next(o for o in items if o["kind"] == "EC2NodeClass")["spec"]["blockDeviceMappings"]
    assert [(m["deviceName"], m.get("rootVolume"), m["ebs"]["volumeSize"]) for m in mappings] == [
        ("/dev/xvda", True, "30Gi"),
        ("/dev/xvdb", None, "500Gi"),
    ]
    apply_all(emulator, run.out)


def test_a_template_without_the_root_device_marks_no_root_volume_and_says_so(
    aws: boto3.Session, cli: Callable[..., CliRun], emulator: Emulator
) -> None:
    run = _convert_template(aws, cli, BlockDeviceMappings=[_volume("/dev/xvdb", 500)])
    assert run.code == 0, run.err
    items = cyaml.safe_load(run.out)["items"]
    mappings = next(o for o in items if o["kind"] == "EC2NodeClass")["spec"]["blockDeviceMappings"]
    assert [m["deviceName"] for m in mappings] == ["/dev/xvdb"]
    assert "rootVolume" not in mappings[0]
    assert "does not size /dev/xvda" in run.err
    apply_all(emulator, run.out)


def test_a_device_mapped_twice_is_refused_naming_it(
    aws: boto3.Session, cli: Callable[..., CliRun]
) -> None:
    run = _convert_template(
        aws, cli, BlockDeviceMappings=[_volume("/dev/xvda", 30), _volume("/dev/xvda", 80)]
    )
    assert run.code == 2, run.err
    assert "maps /dev/xvda more than once" in run.err and "Traceback" not in run.err


# --- partial answers ----------------------------------------------------------------------


def test_a_launch_template_version_that_is_gone_is_named_not_a_traceback(
    aws: boto3.Session, cli: Callable[..., CliRun]
) -> None:
    net = _network(aws)
    image = _eks_image(aws, "amazon-eks-node-al2023-x86_64-standard-1.31-v20241121")
    template = _template(aws, net, image, "legacy-workers", InstanceType="m5.large")
    _asg(aws, net, LaunchTemplate={"LaunchTemplateId": template, "Version": "7"})
    run = cli("convert", "--node-group", "legacy-workers", "--cluster-name", "prod-a")
    assert run.code == 2, run.err
    assert "Traceback" not in run.err
    assert template in run.err and "'7'" in run.err


# --- sizes past the CRD -------------------------------------------------------------------


def test_a_root_volume_past_the_crds_bound_is_refused_naming_the_field(
    tmp_path: Path, cli: Callable[..., CliRun]
) -> None:
    """volumeSize's pattern (EC2NodeClass CRD) stops at 59000Gi (64 TiB)."""
    run = _settings(tmp_path, cli, ISSUE_SETTINGS.replace("'100'", "'2000000'"))
    assert run.code == 2, run.err
    assert "volumeSize" in run.err and "Traceback" not in run.err
    assert _pools(run.out) == []
