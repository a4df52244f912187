"""What the emulator refuses, as the API server does: built-in schemas and Karpenter's CRDs."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from kubemu import Emulator
from kubemu.builders import nodeclaim
from tests.support.present import error_body, json_object


def custom(emu: Emulator) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(emu.api_client())


def refused(call: Any) -> tuple[int, dict[str, Any]]:
    with pytest.raises(ApiException) as caught:
        call()
    return caught.value.status, json.loads(error_body(caught.value))


def create_claim(emu: Emulator, body: dict[str, Any]) -> Any:
    return lambda: custom(emu).create_cluster_custom_object(
        "karpenter.sh", "v1", "nodeclaims", body
    )


def lease(renew: Any) -> dict[str, Any]:
    return {"metadata": {"name": "l1"}, "spec": {"holderIdentity": "a", "renewTime": renew}}


def test_a_lease_with_an_unparsable_time_cannot_be_decoded(emulator: Emulator) -> None:
    """MicroTime must be RFC 3339: the decoder fails, 400 BadRequest."""
    # The kubernetes client leaves request() unannotated.
    response = emulator.api_client().rest_client.request(  # type: ignore[no-untyped-call]
        "POST",
        f"{emulator.url}/apis/coordination.k8s.io/v1/namespaces/default/leases",
        headers={"Content-Type": "application/json"},
        body=lease("yesterday"),
    )
    assert response.status == 400
    assert "spec.renewTime" in json.loads(response.read())["message"]


def test_strict_field_validation_refuses_unknown_fields(emulator: Emulator) -> None:
    rest = emulator.api_client().rest_client
    body = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}, "spec": {"bogus": 1}}
    # The kubernetes client leaves request() unannotated.
    strict = rest.request(  # type: ignore[no-untyped-call]
        "POST",
        f"{emulator.url}/api/v1/nodes?fieldValidation=Strict",
        headers={"Content-Type": "application/json"},
        body=body,
    )
    assert strict.status == 400
    assert 'unknown field "spec.bogus"' in json.loads(strict.read())["message"]
    # The kubernetes client leaves request() unannotated.
    warned = rest.request(  # type: ignore[no-untyped-call]
        "POST",
        f"{emulator.url}/api/v1/nodes?fieldValidation=Warn",
        headers={"Content-Type": "application/json"},
        body=body,
    )
    assert warned.status == 201
    assert 'unknown field \\"spec.bogus\\"' in warned.headers["Warning"]
    assert "bogus" not in json.loads(warned.read())["spec"]  # dropped, as the Go types do


def test_nodeclaim_without_spec_is_invalid(emulator: Emulator) -> None:
    """NodeClaim CRD: spec is required."""
    body = nodeclaim("c1")
    del body["spec"]
    code, status = refused(create_claim(emulator, body))
    assert (code, status["reason"]) == (422, "Invalid")
    assert status["details"]["causes"][0]["field"] == "spec"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        # spec.required: nodeClassRef, requirements
        (lambda s: s.pop("nodeClassRef"), "spec.nodeClassRef"),
        (lambda s: s.pop("requirements"), "spec.requirements"),
        # spec.nodeClassRef.name: CEL self != ''
        (lambda s: s["nodeClassRef"].update(name=""), "spec.nodeClassRef.name"),
        # spec.requirements[].operator enum
        (lambda s: s["requirements"][0].update(operator="Maybe"), "spec.requirements[0].operator"),
        # spec.requirements CEL: minValues needs at least that many values
        (lambda s: s["requirements"][0].update(minValues=2), "spec.requirements"),
        # spec.requirements[].minValues: maximum 50
        (lambda s: s["requirements"][0].update(minValues=51), "spec.requirements[0].minValues"),
        # spec.requirements maxItems 100
        (lambda s: s.update(requirements=s["requirements"] * 101), "spec.requirements"),
        # spec.requirements[].key CEL: the karpenter.sh domain is restricted
        (
            lambda s: s["requirements"][0].update(key="karpenter.sh/custom"),
            "spec.requirements[0].key",
        ),
        # spec.requirements[].key CEL: kubernetes.io/hostname is restricted
        (
            lambda s: s["requirements"][0].update(key="kubernetes.io/hostname"),
            "spec.requirements[0].key",
        ),
        # spec.requirements CEL: In needs a value
        (lambda s: s["requirements"][0].update(values=[]), "spec.requirements"),
        # spec.requirements CEL: Gt takes a single non-negative integer
        (lambda s: s["requirements"][0].update(operator="Gt", values=["x"]), "spec.requirements"),
        # spec.taints[].effect enum
        (lambda s: s.update(taints=[{"key": "a", "effect": "NoSchedul"}]), "spec.taints[0].effect"),
        # spec.expireAfter pattern
        (lambda s: s.update(expireAfter="30 days"), "spec.expireAfter"),
        # spec.terminationGracePeriod pattern
        (lambda s: s.update(terminationGracePeriod="Never"), "spec.terminationGracePeriod"),
    ],
)
def test_nodeclaim_crd_rules(emulator: Emulator, change: Any, field: str) -> None:
    body = copy.deepcopy(nodeclaim("c1"))
    change(body["spec"])
    code, status = refused(create_claim(emulator, body))
    assert code == 422
    assert status["details"]["causes"][0]["field"] == field
    assert field in status["message"]


def test_nodeclaim_spec_is_immutable(emulator: Emulator) -> None:
    """NodeClaim CRD spec: CEL `self == oldSelf`."""
    create_claim(emulator, nodeclaim("c1"))()
    code, status = refused(
        lambda: custom(emulator).patch_cluster_custom_object(
            "karpenter.sh", "v1", "nodeclaims", "c1", {"spec": {"expireAfter": "1h"}}
        )
    )
    assert code == 422
    assert "spec is immutable" in status["message"]
    # Metadata may change.
    custom(emulator).patch_cluster_custom_object(
        "karpenter.sh", "v1", "nodeclaims", "c1", {"metadata": {"labels": {"a": "b"}}}
    )


def test_nodeclaim_defaults_are_applied(emulator: Emulator) -> None:
    """NodeClaim CRD: spec.expireAfter defaults to 720h."""
    created = create_claim(emulator, nodeclaim("c1"))()
    assert created["spec"]["expireAfter"] == "720h"


def _pool(**spec: Any) -> dict[str, Any]:
    template = {
        "spec": {
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "d"},
            "requirements": [],
        }
    }
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "p"},
        "spec": {"template": template, **spec},
    }


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        # budgets[].nodes pattern
        ({"disruption": {"budgets": [{"nodes": "ten"}]}}, "spec.disruption.budgets[0].nodes"),
        # budgets CEL: schedule must be set with duration
        (
            {"disruption": {"budgets": [{"nodes": "1", "schedule": "@daily"}]}},
            "spec.disruption.budgets",
        ),
        # budgets[].reasons enum
        (
            {"disruption": {"budgets": [{"nodes": "1", "reasons": ["Bored"]}]}},
            "spec.disruption.budgets[0].reasons[0]",
        ),
        # budgets maxItems 50
        ({"disruption": {"budgets": [{"nodes": "1"}] * 51}}, "spec.disruption.budgets"),
        # weight: 1..100
        ({"weight": 101}, "spec.weight"),
        # consolidationPolicy enum
        ({"disruption": {"consolidationPolicy": "Never"}}, "spec.disruption.consolidationPolicy"),
    ],
)
def test_nodepool_crd_rules(emulator: Emulator, spec: dict[str, Any], field: str) -> None:
    code, status = refused(
        lambda: custom(emulator).create_cluster_custom_object(
            "karpenter.sh", "v1", "nodepools", _pool(**spec)
        )
    )
    assert code == 422
    assert status["details"]["causes"][0]["field"] == field


def test_nodepool_template_labels_may_not_name_the_nodepool(emulator: Emulator) -> None:
    """template.metadata.labels CEL: label "karpenter.sh/nodepool" is restricted."""
    pool = _pool()
    pool["spec"]["template"]["metadata"] = {"labels": {"karpenter.sh/nodepool": "x"}}
    code, status = refused(
        lambda: custom(emulator).create_cluster_custom_object(
            "karpenter.sh", "v1", "nodepools", pool
        )
    )
    assert code == 422
    assert "spec.template.metadata.labels" in status["message"]


def test_a_valid_nodepool_gets_the_crds_defaults(emulator: Emulator) -> None:
    created = json_object(
        custom(emulator).create_cluster_custom_object("karpenter.sh", "v1", "nodepools", _pool())
    )
    assert created["spec"]["disruption"] == {
        "consolidateAfter": "0s",
        "consolidationPolicy": "WhenEmptyOrUnderutilized",
        "budgets": [{"nodes": "10%"}],
    }


def test_a_taint_with_a_typo_in_its_effect_is_refused(emulator: Emulator) -> None:
    """validateNodeTaints: Unsupported value, 422 naming the field."""
    emulator.put_object({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    code, status = refused(
        lambda: client.CoreV1Api(emulator.api_client()).patch_node(
            "n1", {"spec": {"taints": [{"key": "a", "effect": "NoSchedul"}]}}
        )
    )
    assert code == 422
    assert status["details"]["causes"][0]["field"] == "spec.taints[0].effect"


def test_schema_required_fields_are_not_enforced(emulator: Emulator) -> None:
    """The OpenAPI "required" of NodeSystemInfo only means "no omitempty": the decoder fills
    the zero value, and the API server accepts a node that reports part of it."""
    emulator.put_object(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n1"},
            "status": {"nodeInfo": {"kubeletVersion": "v1.31.2"}},
        }
    )
    # (The Python client's models insist on every field, so read the answer as JSON.)
    # The kubernetes client leaves request() unannotated.
    response = emulator.api_client().rest_client.request(  # type: ignore[no-untyped-call]
        "PATCH",
        f"{emulator.url}/api/v1/nodes/n1",
        headers={"Content-Type": "application/merge-patch+json"},
        body={"metadata": {"labels": {"a": "b"}}},
    )
    assert response.status == 200
    assert json.loads(response.read())["metadata"]["labels"] == {"a": "b"}
