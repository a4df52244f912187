"""``lifeboat audit``: the risks to look at before enabling Lifeboat or rotating nodes.

Reads a cluster file or a live cluster (list requests only), runs every check of
``registry.CHECKS`` and prints the findings by severity, or as one JSON document.

Exit status: 0 no error (warnings and infos allowed); 3 at least one error, or at least one
warning with ``--strict``; 1 the audit could not run (bad arguments, unreadable file, a list
the API server refused).
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from typing import Any, TextIO

from lifeboat_local.audit import karpenter_access
from lifeboat_local.audit.findings import Finding, Severity
from lifeboat_local.audit.inventory import Inventory
from lifeboat_local.audit.registry import CHECK_NAMES, run_checks
from lifeboat_local.audit.render import Report, write_human, write_json
from lifeboat_local.audit.sources import read_cluster_file, read_live
from lifeboat_local.audit.view import ClusterView
from lifeboat_local.common import (
    EXIT_FINDINGS,
    EXIT_OK,
    UsageError,
    add_at_flag,
    add_cluster_flags,
    add_command,
)
from lifeboat_local.source import open_cluster

EXAMPLES = """
    lifeboat audit --cluster events/cluster.yaml
    lifeboat audit --kubeconfig ~/.kube/config --json > audit.json
    lifeboat audit --kubeconfig ~/.kube/config --strict --skip nodepool-default-budget
"""


def add_parser(commands: Any) -> None:
    parser = add_command(
        commands,
        "audit",
        summary="the risks before enabling Lifeboat or rotating nodes",
        description="The risks to look at before enabling Lifeboat or rotating nodes: PDBs, "
        "single replicas, do-not-disrupt, NodePool budgets, labels, node ownership. "
        "Exit status: 0 no error; 3 errors found (or warnings, with --strict); "
        "1 the audit could not run.",
        examples=EXAMPLES,
    )
    add_cluster_flags(
        parser,
        cluster_help="a cluster file: kubectl get ... -o yaml/json output or multi-document "
        "YAML (kinds the audit does not read are skipped)",
        kubeconfig_help="a live cluster (read only: list requests)",
    )
    add_at_flag(parser, "judge budget windows and do-not-disrupt durations at this instant")
    parser.add_argument("--json", action="store_true", help="one JSON document")
    parser.add_argument("--strict", action="store_true", help="warnings fail too (exit 3)")
    parser.add_argument(
        "--skip",
        action="append",
        default=[],
        metavar="CHECK",
        help="leave a check out (repeatable)",
    )
    parser.add_argument(
        "--karpenter-role-arn",
        metavar="ARN",
        help="Karpenter's controller role: asks IAM's policy simulator "
        "(iam:SimulatePrincipalPolicy) whether it is denied ec2:DescribeInstanceStatus",
    )
    parser.add_argument(
        "--node-group-label",
        action="append",
        default=[],
        metavar="KEY",
        help="a node label naming its group, beyond karpenter.sh/nodepool, "
        "eks.amazonaws.com/nodegroup, alpha.eksctl.io/nodegroup-name, kops.k8s.io/instancegroup",
    )


def check_args(args: argparse.Namespace) -> None:
    unknown = sorted(set(args.skip) - CHECK_NAMES)
    if unknown:
        raise UsageError(
            f"--skip: unknown check {', '.join(unknown)} (checks: {', '.join(sorted(CHECK_NAMES))})"
        )
    if args.cluster is not None and args.context is not None:
        raise UsageError("--context goes with --kubeconfig, not with --cluster")


def read_inventory(args: argparse.Namespace) -> tuple[Inventory, str]:
    """The cluster's objects, and a description of where they came from."""
    if args.cluster is not None:
        return read_cluster_file(args.cluster), f"cluster file {args.cluster}"
    with open_cluster(None, args.kubeconfig, args.context) as source:
        return read_live(source.kube), source.description


def exit_status(findings: list[Finding], strict: bool) -> int:
    failing = {Severity.ERROR, Severity.WARNING} if strict else {Severity.ERROR}
    return EXIT_FINDINGS if any(f.severity in failing for f in findings) else EXIT_OK


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    check_args(args)
    at = args.at or datetime.now(UTC)
    inventory, source = read_inventory(args)
    view = ClusterView(inventory, at, args.node_group_label)
    role = getattr(args, "karpenter_role_arn", None)
    if role:
        view.karpenter_access = karpenter_access.simulate(role)
    findings = run_checks(view, args.skip)
    status = exit_status(findings, args.strict)
    report = Report(source, at, tuple(findings), status, inventory.notes, tuple(sorted(args.skip)))
    (write_json if args.json else write_human)(report, out or sys.stdout)
    return status
