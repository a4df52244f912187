"""A NodeClaim's answer that led to no node: Karpenter acted first, or the claim lies.

While EC2 throttles, a Spot warning's node is found from the NodeClaim whose
``status.providerID`` names the instance (``lifeboat.flow.lookup``). When the node it names is
not there (or bears another instance's providerID), two stories fit:

- Karpenter acted first: its interruption controller deleted the claim
  (``InterruptionHandler.deleteNodeClaim`` in aws/karpenter-provider-aws
  ``pkg/controllers/interruption/utils.go``) and the node went with the drain. The claim is
  then gone or being deleted; as Karpenter's ``handleMessage`` does for an instance no claim
  names, the warning is let go, and the report says why. EC2, throttled, is not asked.
- The claim stands, not deleting, yet no node bears its instance. Karpenter never leaves
  that state for long: a Node's deletion deletes its claim first (kubernetes-sigs/karpenter
  ``pkg/controllers/node/termination/controller.go``, ``Controller.finalize``), and a claim
  names its node only once registered. So: a claim written by someone other than Karpenter
  (a NodeClaim is writable by more than Karpenter) naming, say, a node-group instance or
  another cluster's, whose real node it must not hide. EC2 decides, as without the claims.
"""

from __future__ import annotations

from lifeboat.flow.resolve import runs_on
from lifeboat.kube import nodes
from lifeboat.kube.client import KubeApi
from lifeboat.model.instances import InstanceInfo


def karpenter_acted_first(kube: KubeApi, info: InstanceInfo) -> str | None:
    """Why the warning needs nothing more when the claim ``info`` came from is gone or being
    deleted (one GET of the claim); None when the claim still stands: EC2 must be asked."""
    name = info.nodeclaim
    if name is None:
        return None
    claim = kube.get_nodeclaim(name)
    where = f"its node {info.node_name} is gone"
    if claim is None:
        return f"NodeClaim {name} is gone and {where}: Karpenter acted first"
    if not runs_on(claim, info.instance_id):
        return None  # another claim by that name now: not the one that answered
    if nodes.is_deleting(claim):
        return f"NodeClaim {name} is being deleted and {where}: Karpenter is terminating it"
    return None
