"""What ``resolve`` learns about an instance and ``decide`` judges: plain, immutable data."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lifeboat.instances import InstanceInfo

Obj = Mapping[str, Any]


@dataclass(frozen=True)
class PoolState:
    """A NodePool and how many of its nodes exist and are already disrupting."""

    nodepool: Obj
    node_count: int
    disrupting: int
    # Who is disrupting and why, as (node, reason), when resolve counted them.
    disrupting_nodes: tuple[tuple[str, str], ...] = ()

    @property
    def name(self) -> str:
        return str(self.nodepool["metadata"]["name"])


@dataclass(frozen=True)
class Target:
    """Everything known about the instance a notice names.

    ``pool`` and ``pods`` are loaded only when the decision needs them (voluntary kinds, or a
    drain), so a Spot warning costs no list request.
    """

    instance_id: str
    info: InstanceInfo | None = None
    node: Obj | None = None
    nodeclaim: str | None = None
    nodeclaim_uid: str | None = None
    nodepool_name: str | None = None
    # The NodePool object, read once per pool per batch: the template of a replacement.
    nodepool: Obj | None = None
    pool: PoolState | None = None
    pods: tuple[Obj, ...] | None = None

    @property
    def node_name(self) -> str | None:
        return str(self.node["metadata"]["name"]) if self.node else None
