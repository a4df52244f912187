"""``lifeboat patching``: every node's AMI against the latest recommended EKS-optimized AMI for
its Kubernetes version, OS, architecture and GPU variant (AWS's public SSM parameters), its
age, a summary per node group and NodePool, and the ``lifeboat rotate`` line that replaces
the outdated nodes.

Exit status: 0 no node is behind by more than ``--max-age-days``; 3 some node runs an AMI
that is not the recommended one and older than that (a CI gate); 1 usage error.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from lifeboat.rotation.request import NAME_MAX
from lifeboat_local.audit.sources import read_cluster_file, read_live
from lifeboat_local.common import (
    EXIT_FINDINGS,
    EXIT_OK,
    UsageError,
    add_at_flag,
    add_cluster_flags,
    add_command,
)
from lifeboat_local.patching.judge import Verdict, facts, judge, recommended_parameter
from lifeboat_local.rotate import NODEGROUP_LABEL
from lifeboat_local.source import open_cluster

DEFAULT_MAX_AGE_DAYS = 30
EXAMPLES = """
    lifeboat patching --kubeconfig ~/.kube/config --region eu-west-1
    lifeboat patching --cluster cluster.yaml --json --max-age-days 14
    lifeboat patching --cluster events/cluster.yaml --from events/patching  # saved answers
"""


def add_parser(commands: Any) -> None:
    parser = add_command(
        commands,
        "patching",
        summary="nodes whose AMI is behind the recommended EKS-optimized AMI",
        description="Each node's AMI (EC2 DescribeInstances of its providerID) against the "
        "latest recommended EKS-optimized or Bottlerocket AMI for its Kubernetes version "
        "(AWS's public SSM parameters), with its age; a summary per node group and NodePool, "
        "and the lifeboat rotate line for the outdated ones. Exit status: 0 none behind by "
        "more than --max-age-days; 3 some are (CI gate); 1 usage error.",
        examples=EXAMPLES,
    )
    add_cluster_flags(
        parser,
        cluster_help="a cluster file (its nodes are read)",
        kubeconfig_help="a live cluster (list nodes only)",
    )
    add_at_flag(parser, "judge ages at this instant (default: now)")
    parser.add_argument("--json", action="store_true", help="one JSON document")
    parser.add_argument(
        "--max-age-days",
        type=int,
        default=DEFAULT_MAX_AGE_DAYS,
        metavar="N",
        help=f"an outdated AMI older than N days fails (exit 3; default {DEFAULT_MAX_AGE_DAYS})",
    )
    parser.add_argument("--region", help="the AWS region of the instances and parameters")
    parser.add_argument(
        "--from",
        dest="saved",
        type=Path,
        metavar="DIR",
        help="read AWS's answers from the JSON files in DIR (the AWS CLI's output of "
        "ec2 describe-instances, ssm get-parameters[-by-path], ec2 describe-images) "
        "instead of asking AWS: no account needed",
    )
    parser.add_argument(
        "--cluster-name", metavar="C", help="the EKS cluster, for the printed rotate lines"
    )


def check_args(args: argparse.Namespace) -> None:
    if args.max_age_days < 0:
        raise UsageError("--max-age-days must be 0 or more")
    if args.cluster is not None and args.context is not None:
        raise UsageError("--context goes with --kubeconfig, not with --cluster")
    if args.saved is not None and args.region is not None:
        raise UsageError("--region is for asking AWS; --from reads saved answers")


def _nodes(args: argparse.Namespace) -> list[dict[str, Any]]:
    if args.cluster is not None:
        # Only the Nodes are read: a file without the other kinds is fine here.
        return [dict(n) for n in read_cluster_file(args.cluster, depends_on=("Node",)).nodes]
    with open_cluster(None, args.kubeconfig, args.context) as source:
        return [dict(n) for n in read_live(source.kube).nodes]


def verdicts(
    nodes: list[dict[str, Any]], aws: Any, now: datetime, max_age_days: int
) -> list[Verdict]:
    """Each node judged with ``aws``'s answers (PatchingAws: live; SavedAws: from files)."""
    node_facts = [facts(n) for n in nodes]
    images = aws.instance_images([f.instance_id for f in node_facts if f.instance_id])
    parameters = [p for p in (recommended_parameter(f) for f in node_facts) if p]
    recommended = aws.parameters(parameters)
    amis: list[tuple[str | None, str]] = []
    for node in node_facts:
        if node.instance_id in images:
            amis.append((images[node.instance_id], "ec2"))
        elif node.label_image:
            amis.append((node.label_image, "label"))
        else:
            amis.append((None, "unknown"))
    created = aws.creation_dates([a for a, _ in amis if a] + list(recommended.values()))
    return [
        judge(node, ami, source, recommended, created, now, max_age_days)
        for node, (ami, source) in zip(node_facts, amis, strict=True)
    ]


def _selector(verdict: Verdict) -> list[str]:
    """lifeboat rotate's flags selecting the group's nodes."""
    found = verdict.node.group_label
    if found is None:
        return []
    key, value = found
    if key == NODEGROUP_LABEL:
        return ["--node-group", value]
    return ["--label", f"{key}={value}"]


def summary(found: list[Verdict], cluster_name: str | None) -> list[dict[str, Any]]:
    by_group: dict[str, list[Verdict]] = defaultdict(list)
    for verdict in found:
        by_group[verdict.node.group].append(verdict)
    groups = []
    for group, members in sorted(by_group.items()):
        outdated = sorted({v.ami for v in members if v.status == "outdated" and v.ami})
        entry: dict[str, Any] = {
            "group": group,
            "nodes": len(members),
            "current": sum(v.status == "current" for v in members),
            "outdated": sum(v.status == "outdated" for v in members),
            "unknown": sum(v.status == "unknown" for v in members),
            "over_max_age": sum(v.gating for v in members),
            "outdated_amis": outdated,
            "rotate": None,
        }
        selector = _selector(members[0])
        if outdated:
            # A rotation name: lowercase, digits and '-', at most NAME_MAX with "patch-".
            raw = re.sub(r"[^a-z0-9-]+", "-", group.split(" ")[-1].lower())
            slug = raw[: NAME_MAX - len("patch-")].strip("-") or "nodes"
            parts = ["lifeboat", "rotate", f"patch-{slug}"]
            if cluster_name:
                parts += ["--cluster-name", cluster_name]
            parts += selector
            for ami in outdated:
                parts += ["--ami", ami]
            entry["rotate"] = " ".join(parts)
        groups.append(entry)
    return groups


def write_text(found: list[Verdict], groups: list[dict[str, Any]], out: TextIO) -> None:
    for v in found:
        age = f"{v.age_days}d" if v.age_days is not None else "age ?"
        if v.status == "current":
            out.write(f"current   {v.node.name}  {v.ami} ({age})\n")
        elif v.status == "outdated":
            flag = "  over max age" if v.gating else ""
            out.write(f"outdated  {v.node.name}  {v.ami} ({age}) -> {v.recommended}{flag}\n")
        else:
            why = (
                "AMI not found (no instance in EC2, no nodegroup-image label)" if v.ami is None
                else f"no recommended AMI known for {v.parameter or 'its OS/version'}"
            )  # fmt: skip
            out.write(f"unknown   {v.node.name}  {why}\n")
    out.write("\n")
    for g in groups:
        out.write(
            f"{g['group']}: {g['nodes']} node(s), {g['current']} current, {g['outdated']} "
            f"outdated ({g['over_max_age']} over max age), {g['unknown']} unknown\n"
        )
        if g["rotate"]:
            out.write(f"  {g['rotate']}\n")


def _aws(args: argparse.Namespace) -> Any:
    """Where AWS's answers come from: saved files (--from), or AWS itself."""
    if args.saved is not None:
        from lifeboat_local.patching.saved import SavedAws

        return SavedAws(args.saved)
    import boto3

    from lifeboat_local.patching.aws import PatchingAws

    return PatchingAws(boto3.Session(region_name=args.region))


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    check_args(args)
    out = out or sys.stdout
    now = args.at or datetime.now(UTC)
    aws = _aws(args)  # before the nodes: a bad --from folder is said first
    found = verdicts(_nodes(args), aws, now, args.max_age_days)
    groups = summary(found, args.cluster_name)
    status = EXIT_FINDINGS if any(v.gating for v in found) else EXIT_OK
    if args.json:
        document = {
            "at": now.isoformat().replace("+00:00", "Z"),
            "max_age_days": args.max_age_days,
            "status": status,
            "nodes": [v.to_json() for v in found],
            "groups": groups,
            "outdated_amis": sorted({v.ami for v in found if v.status == "outdated" and v.ami}),
        }
        out.write(json.dumps(document, indent=2) + "\n")
    else:
        write_text(found, groups, out)
    return status
