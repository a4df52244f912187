"""What a node group is, whichever form it was read from, and what converting it can refuse."""

from __future__ import annotations

from dataclasses import dataclass, field


class ConversionError(Exception):
    """A setting that cannot be converted: the message names it and proposes the fix (exit 2)."""


@dataclass(frozen=True)
class SelectorTerm:
    """A subnet or security group: selected by ``tags`` where one tag picks exactly it (or the
    whole set), by ``id`` otherwise."""

    id: str | None = None
    tags: tuple[tuple[str, str], ...] = ()

    def as_term(self) -> dict[str, object]:
        return {"tags": dict(self.tags)} if self.tags else {"id": self.id}


@dataclass(frozen=True)
class RootVolume:
    size_gib: int
    volume_type: str = "gp3"
    iops: int | None = None
    throughput: int | None = None
    device_name: str = "/dev/xvda"
    encrypted: bool | None = None  # None: the group did not say (Karpenter's default: true)
    kms_key_id: str | None = None


@dataclass(frozen=True)
class Taint:
    key: str
    effect: str  # NoSchedule, PreferNoSchedule, NoExecute
    value: str | None = None


@dataclass
class NodeGroup:
    """A group to convert; ``source`` says where it was read (named in errors and notes)."""

    name: str  # the group's own name (kept in the pool's lifeboat.dev/node-group annotation)
    source: str
    instance_types: list[str]
    max_size: int
    min_size: int = 0
    capacity_type: str = "on-demand"  # karpenter.sh/capacity-type
    zones: list[str] = field(default_factory=list)  # empty: not constrained
    subnets: list[SelectorTerm] = field(default_factory=list)
    security_groups: list[SelectorTerm] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    taints: list[Taint] = field(default_factory=list)
    gpu: bool = False
    root_volume: RootVolume | None = None
    # The launch template's other EBS volumes (data volumes), carried as they are.
    more_volumes: list[RootVolume] = field(default_factory=list)
    ami_alias: str | None = None  # e.g. al2023@v20241121 (pinned); or:
    ami_id: str | None = None
    ami_family: str | None = None  # with ami_id: AL2, AL2023, Bottlerocket, ...
    alias_family: str = "al2023"  # the alias family ``--ami-alias latest`` follows
    # More AMI ids, one per architecture, when a mixed group's overrides have their own.
    more_ami_ids: list[str] = field(default_factory=list)
    # kubernetes.io/arch -> the AMI id for it, when the AMIs are known by id.
    ami_arches: dict[str, str] = field(default_factory=dict)
    # EC2NodeClass metadataOptions (Karpenter's names), from the launch template.
    metadata_options: dict[str, object] | None = None
    role: str | None = None  # IAM role name; or:
    instance_profile: str | None = None
    notes: list[str] = field(default_factory=list)
    # Said in the pool's lifeboat.dev/conversion annotation too (e.g. a Spot share not kept).
    choices: list[str] = field(default_factory=list)
    pool_name: str | None = None  # --name; else derived from ``name`` (convert.names)
