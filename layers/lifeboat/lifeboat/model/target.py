"""What ``resolve`` learns about an instance and ``decide`` judges: plain, immutable data."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from lifeboat.model.instances import InstanceInfo
from lifeboat.model.objects import Obj


@dataclass(frozen=True)
class ClaimRef:
    """The Karpenter NodeClaim that owns a node. The uid guards every write: a later claim
    of the same name is another claim."""

    name: str
    uid: str | None = None
    # Already being deleted (Karpenter, or an earlier notice, is terminating the node); known
    # when the claim was read (voluntary notices list the pool's claims).
    deleting: bool = False
    # Its karpenter.sh/nodeclaim-termination-timestamp, when it carries one (read with the
    # claim): an impaired instance's claim is already being forced out.
    terminates_by: str | None = None


@dataclass(frozen=True)
class PoolCounts:
    """How many nodes a NodePool has, and how many of them are already disrupting, as
    Karpenter counts them for its budgets."""

    node_count: int
    disrupting: int
    # Who is disrupting and why, as (node, reason).
    disrupting_nodes: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Target:
    """Everything known about the instance a notice names.

    ``counts``, ``pods`` and ``pdbs`` are loaded only when the decision needs them (voluntary
    kinds), so a Spot warning costs no list request.
    """

    instance_id: str
    info: InstanceInfo | None = None
    node: Obj | None = None
    claim: ClaimRef | None = None
    # The NodePool the instance belongs to: its NodeClaim's label (the Node's label, or
    # EC2's tag, only when there is no claim to read) ...
    nodepool_name: str | None = None
    # ... and that NodePool's object, when it exists: budgets and the replacement's template.
    nodepool: Obj | None = None
    counts: PoolCounts | None = None
    pods: tuple[Obj, ...] | None = None
    # The PodDisruptionBudgets of the namespaces of the pods a drain would evict.
    pdbs: tuple[Obj, ...] | None = None
    # The pool's resource usage as Karpenter's cluster state sums it (its NodeClaims' and
    # Nodes' capacity, :mod:`lifeboat.karpenter.pool_usage`), loaded with ``counts``: what its
    # limits
    # are weighed against.
    usage: Mapping[str, Fraction] | None = None
    # The Node's own karpenter.sh/nodepool label when it disagrees with its claim's pool
    # (reported; the claim's pool is the one judged by).
    node_nodepool_label: str | None = None

    @property
    def node_name(self) -> str | None:
        return str(self.node["metadata"]["name"]) if self.node else None
