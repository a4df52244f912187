"""``lifeboat convert``: a NodePool and an EC2NodeClass per node group, one YAML ``kind: List``.

Sources: ``--settings FILE`` (the settings ConfigMaps, one or many), ``--node-group NAME
--cluster-name C`` (an EKS managed node group, else an Auto Scaling group, read from AWS), or
``--cluster FILE`` (the node groups of a cluster file's nodes). Every object is checked as an
API server with Karpenter's CRDs would check it before it is printed. Notes (what has no
NodePool equivalent, the choices made) go to stderr.

Exit status: 0 converted; 2 some group could not be converted (each named with the fix; the
others are still printed); 1 usage error; 3 with --strict, a warning was said.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any, TextIO

import yaml

from lifeboat_local.common import (
    EXIT_OK,
    EXIT_REJECTED,
    UsageError,
    add_command,
    add_strict_flag,
    check_output_file,
    note,
    strict_status,
    warn,
    warnings_said,
    write_output,
    zone_name,
)
from lifeboat_local.convert import nodes, settings
from lifeboat_local.convert.capacity import Capacities, Capacity, read_file, shipped
from lifeboat_local.convert.model import ConversionError, NodeGroup
from lifeboat_local.convert.render import CHOICE, NEVER, convert

# spec.expireAfter's pattern in Karpenter's NodePool CRD.
EXPIRE_AFTER = re.compile(r"^(([0-9]+(s|m|h))+|Never)$")
LATEST = "latest"
# The alias families of the EC2NodeClass CRD (amiSelectorTerms[].alias).
ALIAS_FAMILIES = ("al2", "al2023", "bottlerocket", "windows2019", "windows2022", "windows2025")

EXAMPLES = """
    lifeboat convert --settings node-groups.yaml --cluster-name prod-a --zone eu-west-1a
    lifeboat convert --node-group legacy --cluster-name prod-a --region eu-west-1 --out pools.yaml
    lifeboat convert --cluster cluster.yaml --cluster-name prod-a
"""


def add_parser(commands: Any) -> None:
    parser = add_command(
        commands,
        "convert",
        summary="node groups to Karpenter NodePools and EC2NodeClasses",
        description="Write a NodePool (karpenter.sh/v1) and an EC2NodeClass "
        "(karpenter.k8s.aws/v1) per node group, as one YAML List, checked against the CRDs' "
        "schemas and CEL rules. " + CHOICE + "; expireAfter: Never unless --expire-after. "
        "The AMI is pinned (the group's AMI id or release) unless --ami-alias latest. "
        "Exit status: 0 converted; 2 a group could not be converted (named, with the fix); "
        "1 usage error; 3 with --strict, a warning was said.",
        examples=EXAMPLES,
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--settings", type=Path, metavar="FILE", help="node-group settings ConfigMaps"
    )
    source.add_argument(
        "--node-group", metavar="NAME", help="an EKS managed node group or an Auto Scaling group"
    )
    source.add_argument(
        "--cluster", type=Path, metavar="CLUSTER.yaml", help="the node groups of a cluster file"
    )
    parser.add_argument(
        "--cluster-name",
        metavar="C",
        help="the EKS cluster (needed with --node-group; elsewhere it names the "
        "karpenter.sh/discovery tag that selects subnets and security groups)",
    )
    parser.add_argument("--region", help="with --node-group: the AWS region")
    parser.add_argument("--out", type=Path, metavar="FILE", help="write the List to FILE")
    parser.add_argument(
        "--instance-types",
        type=Path,
        metavar="FILE",
        help="instance capacities: `aws ec2 describe-instance-types --output json` output "
        "(offline sources; default: the table shipped with Lifeboat)",
    )
    parser.add_argument(
        "--zone", type=zone_name, help="the zone of single-zone groups (settings form)"
    )
    parser.add_argument(
        "--node-role",
        metavar="ROLE",
        help="the nodes' IAM role (settings and cluster file; default "
        "KarpenterNodeRole-CLUSTER_NAME)",
    )
    _add_choices(parser)


def _add_choices(parser: argparse.ArgumentParser) -> None:
    """The options that choose what the pools get where the group does not say."""
    parser.add_argument(
        "--ami-alias",
        metavar="FAMILY@VERSION",
        help="the AMI, as an alias pinned to a release (e.g. al2023@v20241121), for groups "
        "that do not name theirs (the settings form; nodes without "
        "eks.amazonaws.com/nodegroup-image); 'latest' follows every release of the group's "
        "family, which drifts (replaces) every node at each release: a warning",
    )
    parser.add_argument(
        "--expire-after",
        default=NEVER,
        metavar="DURATION",
        help="the pools' expireAfter (default Never, as a node group: Karpenter's expiry is "
        "forceful, past budgets and do-not-disrupt), e.g. 720h",
    )
    parser.add_argument(
        "--name",
        metavar="POOL",
        help="the NodePool and EC2NodeClass name (one group only; default: the group's name, "
        "made valid: lower case, '-' for other characters, a hash when changed)",
    )
    add_strict_flag(parser)  # a settings key convert does not know, an AMI on latest: exit 3


def check_args(args: argparse.Namespace) -> None:
    if args.node_group is not None and not args.cluster_name:
        raise UsageError("convert: --node-group needs --cluster-name")
    if not EXPIRE_AFTER.match(args.expire_after):
        raise UsageError(
            f"convert: --expire-after {args.expire_after!r}: a duration such as 720h or 90m, "
            "or Never"
        )
    if args.ami_alias is not None:
        check_alias(args.ami_alias)
    if args.region is not None and args.node_group is None:
        raise UsageError("convert: --region goes with --node-group")
    if args.out is not None:
        check_output_file("--out", args.out)


def check_alias(alias: str) -> None:
    """``latest``, or FAMILY@VERSION with a family Karpenter knows (its CRD's list)."""
    family, at, version = alias.partition("@")
    if family.startswith("windows") and version not in ("", LATEST):
        raise UsageError(
            f"convert: --ami-alias {alias!r}: Windows aliases take no version (the "
            f"EC2NodeClass CRD): {family}@latest, or --ami-alias latest"
        )
    if alias == LATEST or (at and family in ALIAS_FAMILIES and version):
        return
    raise UsageError(
        f"convert: --ami-alias {alias!r}: FAMILY@VERSION (FAMILY one of "
        f"{', '.join(ALIAS_FAMILIES)}; e.g. al2023@v20241121), or latest"
    )


def choose_ami(group: NodeGroup, alias: str | None) -> None:
    """Apply ``--ami-alias`` to a group: it names the AMI of a group that does not, and
    replaces the one a group names (said in a note); ``latest`` is warned about (Karpenter's
    docs advise against it in production: every release drifts every node)."""
    if alias is None:
        return
    if alias == LATEST or alias.endswith("@latest"):
        alias = f"{group.alias_family}@latest" if alias == LATEST else alias
        warn(
            f"convert: {group.source}: AMI alias {alias}: every new AMI release will replace "
            "every node of the pool (drift); pin a version (FAMILY@vYYYYMMDD) in production"
        )
    if group.ami_id or group.ami_alias:
        group.notes.append(
            f"{group.source}: --ami-alias {alias} replaces the group's own AMI "
            f"({group.ami_id or group.ami_alias})"
        )
    group.ami_alias, group.ami_id, group.ami_family = alias, None, None
    group.more_ami_ids, group.ami_arches = [], {}  # an alias resolves every architecture


def _groups(args: argparse.Namespace, errors: list[str]) -> tuple[list[NodeGroup], Capacities]:
    """The groups to convert and the capacities to size their limits with."""
    extra: list[dict[str, Capacity]] = []
    if args.instance_types is not None:
        try:
            extra.append(read_file(args.instance_types))
        except ConversionError as error:
            raise UsageError(f"--instance-types {error}") from None
    context = settings.SettingsContext(
        cluster_name=args.cluster_name, role=args.node_role, zone=args.zone
    )
    if args.node_group is not None:
        import boto3

        from lifeboat_local.convert.aws import AwsReader

        reader = AwsReader(boto3.Session(region_name=args.region))
        group = reader.read(args.cluster_name, args.node_group)
        extra.insert(0, reader.capacities(group.instance_types))
        return [group], Capacities(*extra, shipped())
    if args.settings is not None:
        groups = []
        for where, config_map in settings.documents(args.settings):
            try:
                groups.append(settings.node_group(where, config_map, context))
            except ConversionError as error:
                errors.append(str(error))
        if not groups and not errors:
            raise UsageError(f"--settings {args.settings}: no settings ConfigMap in the file")
        return groups, Capacities(*extra, shipped())
    return nodes.read(args.cluster, context), Capacities(*extra, shipped())


def _claim(taken: dict[str, str], name: str, source: str) -> None:
    """Refuse a second group whose pool has the name of an earlier one's (two ConfigMaps of
    one name, or a group named as another's mapping): applied, the second NodePool and
    EC2NodeClass would silently replace the first."""
    if name in taken:
        raise ConversionError(
            f"{source}: its NodePool would be named {name!r}, as {taken[name]}'s: applying "
            "both would replace one with the other; rename one (or convert it alone with --name)"
        )
    taken[name] = source


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    check_args(args)
    said_before = warnings_said()
    errors: list[str] = []
    try:
        groups, capacities = _groups(args, errors)
    except ConversionError as error:
        groups, capacities = [], Capacities()
        errors.append(str(error))
    if args.name is not None and len(groups) > 1:
        raise UsageError(f"convert: --name names one pool, and there are {len(groups)} groups")
    items: list[dict[str, Any]] = []
    taken: dict[str, str] = {}  # pool name -> the group that has it
    for group in groups:
        group.pool_name = args.name
        choose_ami(group, args.ami_alias)
        try:
            converted = convert(group, capacities, args.expire_after)
            _claim(taken, converted[0]["metadata"]["name"], group.source)
            items += converted
        except ConversionError as error:
            errors.append(str(error))
        for text in group.notes:  # also for a refused group: they may say why
            note(f"convert: {text}")
    for text in errors:
        print(f"lifeboat: convert: cannot convert: {text}", file=sys.stderr)
    document = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}, sort_keys=False)
    if args.out is not None:
        write_output("--out", args.out, lambda path: path.write_text(document))
        if items:
            note(f"convert: wrote {len(items) // 2} NodePool(s) and EC2NodeClass(es) to {args.out}")
    else:
        (out or sys.stdout).write(document)
    return strict_status(args, EXIT_REJECTED if errors else EXIT_OK, said_before)
