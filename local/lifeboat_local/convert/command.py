"""``lifeboat convert``: a NodePool and an EC2NodeClass per node group, one YAML ``kind: List``.

Sources: ``--settings FILE`` (the settings ConfigMaps, one or many), ``--node-group NAME
--cluster-name C`` (an EKS managed node group, else an Auto Scaling group, read from AWS), or
``--cluster FILE`` (the node groups of a cluster file's nodes). Every object is checked as an
API server with Karpenter's CRDs would check it before it is printed. Notes (what has no
NodePool equivalent, the choices made) go to stderr.

Exit status: 0 converted; 2 some group could not be converted (each named with the fix; the
others are still printed); 1 usage error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, TextIO

import yaml

from lifeboat_local.common import (
    EXIT_OK,
    EXIT_REJECTED,
    UsageError,
    add_command,
    check_output_file,
    note,
    write_output,
    zone_name,
)
from lifeboat_local.convert import nodes, settings
from lifeboat_local.convert.capacity import Capacities, Capacity, read_file, shipped
from lifeboat_local.convert.model import ConversionError, NodeGroup
from lifeboat_local.convert.render import CHOICE, convert

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
        "schemas and CEL rules. " + CHOICE + ". Exit status: 0 converted; 2 a group could "
        "not be converted (named, with the fix); 1 usage error.",
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
    parser.add_argument(
        "--ami-alias",
        default="al2023@latest",
        metavar="FAMILY@VERSION",
        help="the AMI alias (settings form; default al2023@latest)",
    )


def check_args(args: argparse.Namespace) -> None:
    if args.node_group is not None and not args.cluster_name:
        raise UsageError("convert: --node-group needs --cluster-name")
    if args.region is not None and args.node_group is None:
        raise UsageError("convert: --region goes with --node-group")
    if args.out is not None:
        check_output_file("--out", args.out)


def _groups(args: argparse.Namespace, errors: list[str]) -> tuple[list[NodeGroup], Capacities]:
    """The groups to convert and the capacities to size their limits with."""
    extra: list[dict[str, Capacity]] = []
    if args.instance_types is not None:
        try:
            extra.append(read_file(args.instance_types))
        except ConversionError as error:
            raise UsageError(f"--instance-types {error}") from None
    context = settings.SettingsContext(
        cluster_name=args.cluster_name,
        role=args.node_role,
        zone=args.zone,
        ami_alias=args.ami_alias,
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


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    check_args(args)
    errors: list[str] = []
    try:
        groups, capacities = _groups(args, errors)
    except ConversionError as error:
        groups, capacities = [], Capacities()
        errors.append(str(error))
    items: list[dict[str, Any]] = []
    for group in groups:
        try:
            items += convert(group, capacities)
        except ConversionError as error:
            errors.append(str(error))
            continue
        for text in group.notes:
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
    return EXIT_REJECTED if errors else EXIT_OK
