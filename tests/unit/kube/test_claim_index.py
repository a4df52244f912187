"""lifeboat.kube.claim_index: what a NodeClaim says of its instance, as Karpenter's
interruption controller reads it (aws/karpenter-provider-aws ``InterruptionHandler.handleMessage``
finds the NodeClaim by the instance id of ``status.providerID``)."""

from __future__ import annotations

from typing import Any

from lifeboat.kube.claim_index import index_claims, info_from_claim
from tests.support import kube

SPOT = "i-0000000000000000a"
GROUP = "i-0000000000000000b"


def _claim(name: str, instance: str, node: str, **changes: Any) -> dict[str, Any]:
    return kube.nodeclaim(name=name, instance_id=instance, node_name=node, **changes)


def test_a_claim_says_what_ec2_would_of_a_karpenter_instance() -> None:
    claim = _claim("general-x1", SPOT, "ip-10-0-1-1.ec2.internal", zone="us-east-1b")
    info = info_from_claim(claim, "demo")
    assert info is not None
    assert (info.instance_id, info.node_name, info.nodeclaim, info.cluster, info.zone) == (
        SPOT,
        "ip-10-0-1-1.ec2.internal",
        "general-x1",
        "demo",
        "us-east-1b",
    )
    assert info.nodepool == kube.NODEPOOL and info.state is None and not info.tags


def test_a_claim_not_launched_or_not_registered_answers_nothing() -> None:
    assert info_from_claim(kube.nodeclaim(launched=False), "demo") is None
    assert info_from_claim(kube.nodeclaim(registered=False), "demo") is None


def test_two_claims_naming_one_instance_leave_it_to_ec2() -> None:
    """A forged or left-over claim beside Karpenter's: neither is believed."""
    claims = [_claim("a", SPOT, "node-a"), _claim("b", SPOT, "node-b"), _claim("c", GROUP, "c")]
    assert set(index_claims(claims, "demo")) == {GROUP}
