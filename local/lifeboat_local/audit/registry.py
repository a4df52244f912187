"""Every audit check: its stable name, its severity, what it looks for, and the function that
finds it. The order here is the order of the documentation; findings are sorted on output.

A check is a pure function from a ``ClusterView`` to ``Issue``s; this table alone gives them
their name and severity, so the two never drift apart between checks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from lifeboat_local.audit import (
    do_not_disrupt,
    karpenter_version,
    labels,
    migration,
    nodepools,
    ownership,
    pdbs,
    workloads,
)
from lifeboat_local.audit.findings import Finding, Issue, Severity
from lifeboat_local.audit.view import ClusterView

ERROR, WARNING, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO


@dataclass(frozen=True)
class Check:
    name: str
    severity: Severity
    summary: str
    find: Callable[[ClusterView], Iterable[Issue]]


CHECKS: tuple[Check, ...] = (
    # PodDisruptionBudgets
    Check(
        "pdb-never-allows-eviction",
        ERROR,
        "a PDB that allows no eviction even at full health",
        pdbs.never_allows_eviction,
    ),
    Check(
        "pod-in-several-pdbs",
        ERROR,
        "pods selected by more than one PDB (the Eviction API answers 500)",
        pdbs.pods_in_several_pdbs,
    ),
    Check(
        "pdb-expected-pods-unknown",
        WARNING,
        "a PDB over custom controllers whose scale subresource decides",
        pdbs.expected_pods_unknown,
    ),
    Check(
        "pdb-allows-no-eviction-now",
        WARNING,
        "a PDB that allows no eviction now (pods not healthy)",
        pdbs.allows_no_eviction_now,
    ),
    Check(
        "pdb-unhealthy-pods-held",
        WARNING,
        "not-Ready pods a PDB without AlwaysAllow may hold",
        pdbs.unhealthy_pods_held,
    ),
    Check("pdb-matches-no-pod", WARNING, "a PDB that selects no pod", pdbs.matches_no_pod),
    # Workloads
    Check(
        "single-replica-without-pdb",
        WARNING,
        "a workload with one replica and no PDB",
        workloads.single_replica_without_pdb,
    ),
    Check(
        "unmanaged-pod",
        WARNING,
        "a pod without a controller (a drain loses it for good)",
        workloads.unmanaged_pods,
    ),
    # do-not-disrupt
    Check(
        "do-not-disrupt-on-spot",
        WARNING,
        "karpenter.sh/do-not-disrupt on Spot capacity",
        do_not_disrupt.on_spot,
    ),
    Check(
        "do-not-disrupt-invalid",
        WARNING,
        "a do-not-disrupt value Karpenter ignores",
        do_not_disrupt.invalid_values,
    ),
    Check(
        "do-not-disrupt-blocks-rotation",
        INFO,
        "nodes do-not-disrupt holds out of voluntary replacement",
        do_not_disrupt.blocks_rotation,
    ),
    # NodePools
    Check(
        "nodepool-budgets-invalid",
        ERROR,
        "disruption budgets Karpenter refuses (the pool is blocked)",
        nodepools.invalid_budgets,
    ),
    Check(
        "nodepool-budget-never-allows",
        WARNING,
        "budgets that allow no Drifted disruption for a year",
        nodepools.never_allows,
    ),
    Check(
        "nodepool-budget-unlimited",
        WARNING,
        "times when no budget limits disruption",
        nodepools.unlimited_budget,
    ),
    Check(
        "nodepool-default-budget",
        INFO,
        "a pool on the CRD default budget (10%)",
        nodepools.default_budget,
    ),
    Check(
        "nodepool-lifeboat-disabled",
        INFO,
        "a pool Lifeboat is told to leave alone",
        nodepools.lifeboat_disabled,
    ),
    # Labels
    Check(
        "invalid-label", ERROR, "label keys or values the API server refuses", labels.invalid_labels
    ),
    Check(
        "karpenter-invalid-label",
        ERROR,
        "NodePool labels or requirements Karpenter refuses (restricted domains, unknown values)",
        labels.karpenter_invalid_labels,
    ),
    # Nodes
    Check(
        "node-without-owner",
        WARNING,
        "a node no NodePool or node group owns",
        ownership.without_owner,
    ),
    Check(
        "node-nodepool-missing",
        WARNING,
        "a node whose NodePool does not exist",
        ownership.nodepool_missing,
    ),
    # Karpenter itself
    Check(
        "karpenter-instance-status",
        WARNING,
        "a Karpenter controller (v1.12+) whose instance status poller drains maintenance at once",
        karpenter_version.instance_status_poller,
    ),
    # Migration from node groups to NodePools
    Check(
        "migration-pinned-to-node-group",
        WARNING,
        "a pod that requires a label only its node group's nodes carry",
        migration.pinned_to_node_group,
    ),
    Check(
        "migration-no-nodepool-fits",
        WARNING,
        "a node-group pod no NodePool would take (selector or taints)",
        migration.no_nodepool_fits,
    ),
)

CHECK_NAMES: frozenset[str] = frozenset(check.name for check in CHECKS)


def run_checks(view: ClusterView, skip: Sequence[str] = ()) -> list[Finding]:
    """Every finding of every check not skipped, errors first, then by check and object."""
    findings = [
        Finding(check.name, check.severity, issue.object, issue.message, issue.fix)
        for check in CHECKS
        if check.name not in skip
        for issue in check.find(view)
    ]
    return sorted(findings, key=Finding.sort_key)
