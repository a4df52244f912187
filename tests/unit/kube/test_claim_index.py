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


def test_only_a_well_formed_aws_provider_id_is_indexed() -> None:
    """Karpenter's index (``SetupIndexers``, aws/karpenter-provider-aws
    ``pkg/operator/operator.go``) takes whatever ``utils.ParseInstanceID`` draws from
    ``(.*):///(.*)/(.*)``: any provider, a zone with slashes in it, an id not shaped like one.
    Stricter here, on purpose: a providerID that is not ``aws:///<zone>/i-...`` answers
    nothing (its zone guards the taint's patch), and EC2 decides."""
    for provider in (
        "gce:///us-east-1a/i-0000000000000000a",  # another provider
        "aws:///us-east-1a/extra/i-0000000000000000a",  # a zone with a slash
        "aws:////i-0000000000000000a",  # no zone
        "aws:///us-east-1a/0000000000000000a",  # not an instance id
        "aws:///us-east-1a/",
        "",
    ):
        claim = _claim("x", SPOT, "node-x", overrides={"status": {"providerID": provider}})
        assert info_from_claim(claim, "demo") is None, provider


def test_a_deleting_claim_still_answers_for_its_instance() -> None:
    """Unlike Karpenter's ``deleteNodeClaim`` (nothing more for a claim with a
    deletionTimestamp), a deleting claim still names the node: the warning's taint is still
    due while the node drains, and the decision says Karpenter is terminating it
    (``lifeboat.decide.notice``)."""
    claim = _claim("x", SPOT, "node-x", deleting="2026-12-01T14:00:00Z")
    assert set(index_claims([claim], "demo")) == {SPOT}
