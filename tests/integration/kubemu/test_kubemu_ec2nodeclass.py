"""EC2NodeClass (karpenter.k8s.aws/v1) through the real client: the emulator answers as an
API server holding aws/karpenter-provider-aws's CRD (pkg/apis/crds/
karpenter.k8s.aws_ec2nodeclasses.yaml, shipped unchanged in kubemu/crds)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any, cast

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from kubemu import Emulator, ec2nodeclass

GROUP, VERSION, PLURAL = "karpenter.k8s.aws", "v1", "ec2nodeclasses"


def node_class(name: str = "default", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "EC2NodeClass",
        "metadata": {"name": name},
        "spec": {
            "role": "KarpenterNodeRole-fleet",
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "fleet"}}],
            "securityGroupSelectorTerms": [{"id": "sg-0123456789abcdef0"}],
        },
    }
    body["spec"].update(spec)
    return body


def create(emu: Emulator, body: dict[str, Any]) -> Any:
    api = client.CustomObjectsApi(emu.api_client())
    return api.create_cluster_custom_object(GROUP, VERSION, PLURAL, body)


def refusal(emu: Emulator, body: dict[str, Any]) -> tuple[int, str]:
    with pytest.raises(ApiException) as caught:
        create(emu, body)
    body_text: str = caught.value.body or "{}"
    return int(caught.value.status), str(json.loads(body_text)["message"])


def test_every_cel_rule_of_the_shipped_crd_has_an_implementation() -> None:
    """A newer CRD with a rule kubemu does not know fails here, not silently at runtime."""
    assert ec2nodeclass.rules_without_implementation() == []
    assert len(ec2nodeclass.RULES) >= 30


def test_a_valid_node_class_is_stored_with_the_crds_defaults(emulator: Emulator) -> None:
    """metadataOptions' default (httpTokens required, hop limit 1) is applied on create."""
    stored = create(emulator, node_class())
    assert stored["spec"]["metadataOptions"] == {
        "httpEndpoint": "enabled",
        "httpProtocolIPv6": "disabled",
        "httpPutResponseHopLimit": 1,
        "httpTokens": "required",
    }
    listed = cast(
        dict[str, Any],
        client.CustomObjectsApi(emulator.api_client()).list_cluster_custom_object(
            GROUP, VERSION, PLURAL
        ),
    )
    assert [item["metadata"]["name"] for item in listed["items"]] == ["default"]


def _without(key: str) -> Callable[[dict[str, Any]], None]:
    return lambda spec: spec.pop(key)


REFUSED: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    # spec CEL: exactly one of role and instanceProfile.
    ("no role", _without("role"), "must specify exactly one of ['role', 'instanceProfile']"),
    (
        "role and profile",
        lambda s: s.update(instanceProfile="p"),
        "must specify exactly one of ['role', 'instanceProfile']",
    ),
    # spec CEL: an AMI id needs amiFamily.
    (
        "id without family",
        lambda s: s.update(amiSelectorTerms=[{"id": "ami-0abc"}]),
        "must specify amiFamily if amiSelectorTerms does not contain an alias",
    ),
    # amiSelectorTerms[].alias CEL: the family must be known.
    (
        "unknown alias family",
        lambda s: s.update(amiSelectorTerms=[{"alias": "ubuntu@latest"}]),
        "family is not supported",
    ),
    # amiSelectorTerms CEL: alias alone.
    (
        "alias with another term",
        lambda s: s.update(amiSelectorTerms=[{"alias": "al2023@latest"}, {"id": "ami-1"}]),
        "'alias' is mutually exclusive, cannot be set with a combination of other amiSelectorTerms",
    ),
    # spec CEL: amiFamily agrees with the alias.
    (
        "family against alias",
        lambda s: s.update(amiFamily="Bottlerocket"),
        "if set, amiFamily must be 'AL2023' or 'Custom' when using an AL2023 alias",
    ),
    (
        "no subnets",
        lambda s: s.update(subnetSelectorTerms=[]),
        "subnetSelectorTerms cannot be empty",
    ),
    (
        "subnet id and tags",
        lambda s: s.update(subnetSelectorTerms=[{"id": "subnet-1", "tags": {"a": "b"}}]),
        "'id' is mutually exclusive",
    ),
    # securityGroupSelectorTerms[].id: pattern sg-[0-9a-z]+.
    (
        "sg id pattern",
        lambda s: s.update(securityGroupSelectorTerms=[{"id": "group-1"}]),
        "should match 'sg-[0-9a-z]+'",
    ),
    (
        "empty tag value",
        lambda s: s.update(subnetSelectorTerms=[{"tags": {"team": ""}}]),
        "empty tag keys or values aren't supported",
    ),
    (
        "restricted tag",
        lambda s: s.update(tags={"kubernetes.io/cluster/fleet": "owned"}),
        "tag contains a restricted tag matching kubernetes.io/cluster/",
    ),
    # blockDeviceMappings: one root volume, and an ebs with a size or snapshot.
    (
        "two root volumes",
        lambda s: s.update(
            blockDeviceMappings=[
                {"deviceName": "/dev/xvda", "rootVolume": True, "ebs": {"volumeSize": "20Gi"}},
                {"deviceName": "/dev/xvdb", "rootVolume": True, "ebs": {"volumeSize": "20Gi"}},
            ]
        ),
        "must have only one blockDeviceMappings with rootVolume",
    ),
    (
        "volume size pattern",
        lambda s: s.update(
            blockDeviceMappings=[{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "100GB"}}]
        ),
        "spec.blockDeviceMappings[0].ebs.volumeSize",
    ),
    (
        "volume type enum",
        lambda s: s.update(
            blockDeviceMappings=[
                {"deviceName": "/dev/xvda", "ebs": {"volumeSize": "20Gi", "volumeType": "gp9"}}
            ]
        ),
        'Unsupported value: "gp9"',
    ),
    ("missing terms", _without("amiSelectorTerms"), "spec.amiSelectorTerms: Required value"),
]


@pytest.mark.parametrize(
    ("change", "expected"), [(c, e) for _, c, e in REFUSED], ids=[n for n, _, _ in REFUSED]
)
def test_the_crds_rules_refuse_as_the_api_server_does(
    emulator: Emulator, change: Callable[[dict[str, Any]], None], expected: str
) -> None:
    body = node_class()
    change(body["spec"])
    status, message = refusal(emulator, body)
    assert status == 422
    assert expected in message


def test_unknown_fields_follow_field_validation(emulator: Emulator) -> None:
    """Structural pruning: Strict refuses, Warn (the default) drops the field with a warning."""
    body = node_class(bogus=1)
    rest = emulator.api_client().rest_client
    strict = rest.request(  # type: ignore[no-untyped-call]
        "POST",
        f"{emulator.url}/apis/{GROUP}/{VERSION}/{PLURAL}?fieldValidation=Strict",
        headers={"Content-Type": "application/json"},
        body=copy.deepcopy(body),
    )
    assert strict.status == 400
    assert 'unknown field "spec.bogus"' in json.loads(strict.read())["message"]
    stored = create(emulator, body)
    assert "bogus" not in stored["spec"]


def test_discovery_serves_the_karpenter_k8s_aws_group(emulator: Emulator) -> None:
    groups = client.ApisApi(emulator.api_client()).get_api_versions()
    assert "karpenter.k8s.aws" in [group.name for group in groups.groups]
