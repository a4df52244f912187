"""The Karpenter CRDs' CEL rules through the real client over HTTP: the emulator refuses what
an API server holding aws/karpenter-provider-aws's CRDs refuses, with its answer (422,
``<path>: Invalid value: "<type>": <message>``), the rules run by cel-python from the CRD
files unchanged (kubemu/crds)."""

from __future__ import annotations

import copy
import json
import urllib.error
import urllib.request
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from kubemu import Emulator, celrules, karpenter
from kubemu.builders import nodeclaim
from kubemu.resources import NODECLAIMS


def custom(emu: Emulator) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(emu.api_client())


def refusal(call: Any) -> tuple[int, str, str]:
    """(status, the cause's field, the message) of a refused request."""
    with pytest.raises(ApiException) as caught:
        call()
    body = json.loads(caught.value.body or "{}")
    return int(caught.value.status), body["details"]["causes"][0]["field"], body["message"]


def pool(name: str = "p", **template_spec: Any) -> dict[str, Any]:
    spec = {
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "d"},
        "requirements": [],
        **template_spec,
    }
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {"template": {"spec": spec}},
    }


def create(emu: Emulator, plural: str, body: dict[str, Any]) -> Any:
    group = "karpenter.k8s.aws" if plural == "ec2nodeclasses" else "karpenter.sh"
    return lambda: custom(emu).create_cluster_custom_object(group, "v1", plural, body)


def test_a_windows_alias_must_be_latest_the_rule_that_calls_split(emulator: Emulator) -> None:
    """EC2NodeClass amiSelectorTerms[].alias: ``self.split('@')[0] in [windows...] ?
    self.split('@')[1] == 'latest' : true`` (cel-go ext/strings.go split)."""
    body: dict[str, Any] = {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "win"},
        "spec": {
            "role": "KarpenterNodeRole-fleet",
            "amiSelectorTerms": [{"alias": "windows2022@v20250101"}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "fleet"}}],
            "securityGroupSelectorTerms": [{"id": "sg-0123456789abcdef0"}],
        },
    }
    status, field, message = refusal(create(emulator, "ec2nodeclasses", body))
    assert (status, field) == (422, "spec.amiSelectorTerms[0].alias")
    assert message == (
        'EC2NodeClass.karpenter.k8s.aws "win" is invalid: spec.amiSelectorTerms[0].alias:'
        " Invalid value: \"string\": windows families may only specify version 'latest'"
    )
    body["spec"]["amiSelectorTerms"] = [{"alias": "windows2022@latest"}]
    create(emulator, "ec2nodeclasses", body)()


def test_a_nodepool_requirement_in_the_aws_domain_is_restricted(emulator: Emulator) -> None:
    """The provider's CRD: ``label domain "karpenter.k8s.aws" is restricted`` but for its
    well-known labels (the hand translation had no such rule: this was accepted)."""
    requirement = {"key": "karpenter.k8s.aws/gpu-flavour", "operator": "Exists"}
    status, field, message = refusal(
        create(emulator, "nodepools", pool(requirements=[requirement]))
    )
    assert (status, field) == (422, "spec.template.spec.requirements[0].key")
    assert message.endswith(
        'spec.template.spec.requirements[0].key: Invalid value: "string": label domain'
        ' "karpenter.k8s.aws" is restricted'
    )
    requirement["key"] = "karpenter.k8s.aws/instance-family"
    create(emulator, "nodepools", pool(requirements=[requirement]))()


def test_a_key_without_a_slash_is_its_own_domain(emulator: Emulator) -> None:
    """``!self.find("^([^/]+)").endsWith("karpenter.sh")``: the key ``karpenter.sh`` is in
    the restricted domain (the hand translation read a key without '/' as domain-less)."""
    claim = nodeclaim("c1")
    claim["spec"]["requirements"] = [{"key": "karpenter.sh", "operator": "Exists"}]
    status, field, message = refusal(create(emulator, "nodeclaims", claim))
    assert (status, field) == (422, "spec.requirements[0].key")
    assert 'label domain "karpenter.sh" is restricted' in message


def test_a_value_int_cannot_parse_is_an_evaluation_error(emulator: Emulator) -> None:
    """``int(x.values[0]) >= 0`` on "ten": the rule fails to evaluate, reported as the API
    server reports it (``<error> evaluating rule: <message>``)."""
    claim = nodeclaim("c1")
    claim["spec"]["requirements"] = [
        {"key": "example.com/size", "operator": "Gt", "values": ["ten"]}
    ]
    status, field, message = refusal(create(emulator, "nodeclaims", claim))
    assert (status, field) == (422, "spec.requirements")
    assert message.endswith(
        "evaluating rule: requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single"
        " positive integer value"
    )


def test_transition_rules_fire_on_update_only(emulator: Emulator) -> None:
    """NodePool ``nodeClassRef``: ``self.kind == oldSelf.kind``; ``spec``:
    ``has(self.replicas) == has(oldSelf.replicas)``. Any kind and either mode is fine on a
    create; an update that changes them is refused."""
    create(
        emulator, "nodepools", pool("a", nodeClassRef={"group": "g", "kind": "K", "name": "n"})
    )()
    patch = custom(emulator).patch_cluster_custom_object
    changed = {"spec": {"template": {"spec": {"nodeClassRef": {"kind": "Other"}}}}}
    status, field, message = refusal(lambda: patch("karpenter.sh", "v1", "nodepools", "a", changed))
    assert (status, field) == (422, "spec.template.spec.nodeClassRef")
    assert 'Invalid value: "object": nodeClassRef.kind is immutable' in message
    status, field, message = refusal(
        lambda: patch("karpenter.sh", "v1", "nodepools", "a", {"spec": {"replicas": 2}})
    )
    assert (status, field) == (422, "spec")
    assert "Cannot transition NodePool between static (replicas set) and dynamic" in message
    patch("karpenter.sh", "v1", "nodepools", "a", {"spec": {"weight": 5}})  # no transition


def test_a_rule_that_cannot_compile_is_a_clear_422_not_a_traceback(
    emulator: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CRD carrying a rule cel-python cannot compile: every write of the kind is refused
    with ``rule compile error`` (as the API server's validation.go) naming the CRD file, the
    schema path and the rule."""
    version = karpenter.crd(NODECLAIMS)["spec"]["versions"][0]
    schema = copy.deepcopy(version["schema"]["openAPIV3Schema"])
    schema["properties"]["spec"]["x-kubernetes-validations"] = [{"rule": "self.size( > 1"}]
    broken = celrules.compile_schema("crds/karpenter.sh_nodeclaims.yaml", schema)
    monkeypatch.setattr(karpenter, "rules", lambda resource: broken)
    status, field, message = refusal(create(emulator, "nodeclaims", nodeclaim("c1")))
    assert (status, field) == (422, "spec")
    assert (
        'spec: Invalid value: "object": rule compile error: crds/karpenter.sh_nodeclaims.yaml:'
        " spec: rule 'self.size( > 1': "
    ) in message
    assert "Traceback" not in message


def test_an_integer_beyond_int64_is_refused_as_the_server_decodes_it(emulator: Emulator) -> None:
    """k8s.io/apimachinery util/json ``convertNumber``: int64 when it fits, else float64,
    which the schema refuses as no integer. Before, kubemu kept Python's exact 2**70; where
    a schema had no maximum (EC2NodeClass ebs.iops) it reached celpy, whose ValueError
    dropped the connection (celrules' unit test keeps that path an evaluation error)."""
    body = pool("w")
    body["spec"]["weight"] = 2**70
    status, field, message = refusal(create(emulator, "nodepools", body))
    assert (status, field) == (422, "spec.weight")
    assert message.endswith(
        "spec.weight: Invalid value: 1.1805916207174113e+21: spec.weight in body must be of"
        " type integer"
    )


@pytest.mark.parametrize("number", [float("nan"), float("inf")])
def test_nan_and_infinity_are_not_json(emulator: Emulator, number: float) -> None:
    """The kubernetes client's json.dumps writes NaN and Infinity; Go's encoding/json (and
    so the API server) refuses them, 400 the body is not JSON. Python's json.loads took them
    and kubemu answered a 422 about the field."""
    body = pool("n")
    body["spec"]["weight"] = number
    status, message = refusal_status(create(emulator, "nodepools", body))
    assert status == 400
    assert "the request body is not valid JSON: invalid character" in message


def refusal_status(call: Any) -> tuple[int, str]:
    with pytest.raises(ApiException) as caught:
        call()
    return int(caught.value.status), json.loads(caught.value.body or "{}").get("message", "")


def test_a_deeply_nested_free_form_field_is_a_400_not_a_dropped_connection(
    emulator: Emulator,
) -> None:
    """EC2NodeClass ``spec.kubelet`` keeps unknown fields, so any nesting reaches the
    handlers; 700 levels made deepcopy exceed Python's recursion limit and the client saw
    its connection closed. Now a 400 naming the limit. (Sent with urllib: the kubernetes
    client's serializer recurses too deep itself for 700 levels.)"""
    from tests.unit.kubemu.test_celrules import ec2_node_classes

    body = ec2_node_classes()[1]
    body["spec"]["kubelet"] = {"x": "DEEP"}
    text = json.dumps(body).replace('"DEEP"', '{"a": ' * 700 + "1" + "}" * 700)
    url = f"{emulator.api_client().configuration.host}/apis/karpenter.k8s.aws/v1/ec2nodeclasses"
    request = urllib.request.Request(url, text.encode(), {"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=30)
    assert caught.value.code == 400
    assert "exceeded max depth of 100" in caught.value.read().decode()
