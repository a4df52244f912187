"""Where the operator tools read a cluster from: a cluster file (served by the local emulator)
or a live cluster through a kubeconfig. Either way, the tools talk to it through ``KubeApi``.

A cluster file is usually what ``kubectl get ... -o yaml`` printed, so it may hold kinds the
emulator does not serve (Services, Secrets, ...): those are skipped and counted,
never fatal. What cannot be a cluster file (nothing at all, a kubeconfig, Karpenter's older
API, broken YAML) is a usage error that says what to do instead. The emulator is asked which
kinds it serves, so a kind it learns to serve is read from then on.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

from kubemu import Emulator, cluster_objects
from kubemu.clusterfile import read_documents
from kubemu.emulator import PdbAssumption
from kubemu.gcpause import collector_paused, heap_frozen
from kubemu.resources import resource_for_object
from kubemu.yamlload import LOADER
from lifeboat.kube.client import KubeApi, KubeError, RetryPolicy
from lifeboat.kube.eks_auth import api_client_from_kubeconfig
from lifeboat.model.instances import StaticInstanceDirectory
from lifeboat.model.objects import MutableObj
from lifeboat_local.common import UsageError, note, read_text, warn
from lifeboat_local.directory import directory_from_objects
from lifeboat_local.load_checks import hash_mismatches
from lifeboat_local.partial import MissingKind, missing_kinds, missing_text
from lifeboat_local.typos import field_typos, kind_typo

# The emulator answers at once; a short retry keeps a tool snappy if it ever does not.
EMULATOR_RETRY = RetryPolicy(attempts=2, base_delay=0.01)

# Everything the tools read: the workload controllers too, as a PDB's expected pods (with
# maxUnavailable or a percentage) come from their scale.
EXPORT_KINDS = (
    "nodes,pods,pdb,nodepools,nodeclaims,deployments,replicasets,statefulsets,daemonsets,"
    "replicationcontrollers"
)
EXPORT_COMMAND = f"kubectl get {EXPORT_KINDS} -A -o yaml > cluster.yaml"
DUMP_HINT = f"write one with: {EXPORT_COMMAND}"
KARPENTER_GROUP = "karpenter.sh"
KARPENTER_API = "karpenter.sh/v1"

_Loader = LOADER  # libyaml when present: 10x faster


@dataclass(frozen=True)
class ClusterFile:
    """The objects of a cluster file the emulator serves, and what was skipped, by kind."""

    path: Path
    objects: list[MutableObj]
    skipped: Counter[tuple[str, str]] = field(default_factory=Counter)  # (apiVersion, kind)
    # Kinds a typed empty list (``kind: PodDisruptionBudgetList``, no items) says are none.
    declared: frozenset[str] = frozenset()

    @cached_property
    def missing(self) -> tuple[MissingKind, ...]:
        """The kinds the tools' answers depend on that the file does not hold."""
        return missing_kinds(self.objects, self.declared)

    def skipped_text(self) -> str | None:
        if not self.skipped:
            return None
        counts: Counter[str] = Counter()
        for (api_version, kind), count in self.skipped.items():
            counts[kind if api_version == "v1" else f"{kind} ({api_version})"] += count
        kinds = ", ".join(f"{count} {kind}" for kind, count in sorted(counts.items()))
        total = sum(self.skipped.values())
        return f"--cluster {self.path}: skipped {total} object(s) Lifeboat does not read: {kinds}"


def read_cluster_file(path: Path) -> ClusterFile:
    """The cluster file's objects; a :class:`UsageError` (exit 1) naming the file, and the line
    or the document, when it cannot be one."""
    where = f"--cluster {path}"
    text = read_text(path, where)
    # JSON as JSON, YAML through rapidyaml where it can: an order of magnitude faster.
    with collector_paused():  # millions of containers at once, none in a cycle
        try:
            documents, from_yaml = read_documents(text)
        except yaml.YAMLError as error:
            raise UsageError(f"{where}: not valid YAML{_yaml_position(error)}") from None
    if all(document is None for document in documents):
        raise UsageError(f"{where}: the file holds no Kubernetes objects; {DUMP_HINT}")
    skipped: Counter[tuple[str, str]] = Counter()
    kept: list[Any] = []
    declared: set[str] = set()
    for index, document in enumerate(documents):
        if _is_kubeconfig(document):
            raise UsageError(
                f"{where} is a kubeconfig, not a cluster file: to read the cluster it points "
                f"to, pass --kubeconfig {path}; to replay on a copy of it, {DUMP_HINT}"
            )
        is_list_kind = isinstance(document, dict) and document.get("kind") == "List"
        if is_list_kind and not isinstance(document.get("items") or [], list):
            raise UsageError(f"{where}: document {index}: List items must be a sequence")
        if _is_list(document):
            if document["kind"] != "List" and not document["items"]:
                declared.add(str(document["kind"]).removesuffix("List"))
            items = [item for item in document["items"] if _served(item, index, where, skipped)]
            kept.append({**document, "items": items})
        elif _served(document, index, where, skipped):
            kept.append(document)
    try:
        with collector_paused():
            objects = cluster_objects(kept, path, from_yaml=from_yaml)
    except ValueError as error:
        raise UsageError(f"--cluster {error}") from None
    for typo in field_typos(objects):
        warn(f"{where}: {typo}")
    return ClusterFile(path, objects, skipped, frozenset(declared))


def _yaml_position(error: yaml.YAMLError) -> str:
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or ""
    if mark is None:
        return f": {error}"
    return f" at line {mark.line + 1}, column {mark.column + 1}: {problem}".rstrip(": ")


def _is_kubeconfig(document: Any) -> bool:
    if not isinstance(document, dict):
        return False
    return document.get("kind") == "Config" or {"clusters", "contexts"} <= document.keys()


def _is_list(document: Any) -> bool:
    """``kind: List`` as kubectl prints it, or a typed list (``NodeList``) as the API does."""
    return (
        isinstance(document, dict)
        and str(document.get("kind", "")).endswith("List")
        and isinstance(document.get("items"), list)
    )


def _served(obj: Any, index: int, where: str, skipped: Counter[tuple[str, str]]) -> bool:
    """Whether to load ``obj``: yes if the emulator serves its kind (or if it is too broken
    to tell: the loader then says what is missing); else it is counted as skipped."""
    if not isinstance(obj, dict) or not obj.get("apiVersion") or not obj.get("kind"):
        return True
    api_version, kind = str(obj["apiVersion"]), str(obj["kind"])
    # EC2NodeClasses are loaded too: the replay's simulated Karpenter finds a NodePool's node
    # class there (a pool whose class is missing is not Ready, and provisions nothing).
    if resource_for_object(api_version, kind) is not None:
        return True
    if api_version.startswith(f"{KARPENTER_GROUP}/") and api_version != KARPENTER_API:
        name = (obj.get("metadata") or {}).get("name", "?")
        raise UsageError(
            f"{where}: document {index}: {kind} {name} is {api_version}; Lifeboat needs "
            f"Karpenter >= 1.0, whose API is {KARPENTER_API} (upgrade Karpenter, then dump the "
            "cluster again)"
        )
    meant = kind_typo(kind)
    if meant is not None:
        name = (obj.get("metadata") or {}).get("name", "?")
        warn(
            f"{where}: document {index}: kind {kind} ({name}) is not a kind Lifeboat reads; "
            f"did you mean {meant}? (skipped)"
        )
    skipped[api_version, kind] += 1
    return False


# ---------------------------------------------------------------------------------------------
# Opening a cluster


@dataclass(frozen=True)
class ClusterSource:
    """An open cluster: its API, and the emulator behind it (None for a live cluster)."""

    kube: KubeApi
    emulator: Emulator | None = None
    objects: tuple[Mapping[str, Any], ...] | None = None  # the cluster file's objects
    description: str = ""
    # The kinds answers depend on that the cluster file lacks (partial.missing_kinds).
    missing: tuple[MissingKind, ...] = ()


def load_objects(path: Path) -> list[MutableObj]:
    """The objects of a cluster file; says on stderr what was skipped and what is missing."""
    return load_file(path).objects


def load_file(path: Path, depends_on: Collection[str] | None = None) -> ClusterFile:
    """A cluster file read as every tool reads it; says on stderr what was skipped and, as
    warnings (``--strict`` fails), the kinds it lacks that the tool's answers depend on
    (``depends_on``: those kinds only; None: every kind partial.missing_kinds knows)."""
    cluster = read_cluster_file(path)
    _say_skipped(cluster, depends_on)
    return cluster


def _say_skipped(cluster: ClusterFile, depends_on: Collection[str] | None = None) -> None:
    skipped = cluster.skipped_text()
    if skipped:
        note(skipped)
    missing = [m for m in cluster.missing if depends_on is None or m.kind in depends_on]
    for line in missing_text(f"--cluster {cluster.path}", missing, EXPORT_COMMAND):
        warn(line)


def load_cluster(path: Path, depends_on: Collection[str] | None = None) -> ClusterFile:
    """A cluster file read as every tool reads it, for a tool that reads the objects without
    serving them (``audit``): says on stderr all that ``open_cluster`` says at load (the kinds
    skipped, a NodePool's stale hash, each PDB whose pods' controllers are missing and what is
    assumed), checked on a copy of the objects, which are left as the file gave them."""
    cluster = read_cluster_file(path)
    _say_skipped(cluster, depends_on)
    warnings = hash_mismatches(cluster.objects)
    _say_load_findings(warnings, Emulator(cluster.objects))  # a copy, never started
    return cluster


def live_client(kubeconfig: Path, context: str | None) -> KubeApi:
    """A client for the cluster a kubeconfig points to; a usage error when it cannot be."""
    where = f"--kubeconfig {kubeconfig}"
    if not kubeconfig.is_file():
        why = "is a folder" if kubeconfig.is_dir() else "no such file"
        raise UsageError(f"{where}: {why}")
    document = _first_document(kubeconfig)
    if _is_kubeconfig(document):
        _check_context(where, document, context)
    try:
        api_client = api_client_from_kubeconfig(str(kubeconfig), context)
    except Exception as error:  # the kubernetes client raises several unrelated types
        hint = ""
        if not _is_kubeconfig(document) and _looks_like_cluster_file(document):
            hint = f" (this looks like a cluster file: pass it as --cluster {kubeconfig})"
        raise UsageError(f"{where}: {error}{hint}") from None
    return KubeApi(api_client)


def _check_context(where: str, kubeconfig: Mapping[str, Any], context: str | None) -> None:
    """A usage error naming the context asked for (or the current one) when the kubeconfig
    does not hold it, with the contexts it does hold."""
    entries = kubeconfig.get("contexts") or []
    names = [str(c.get("name")) for c in entries if isinstance(c, Mapping)]
    wanted = context or kubeconfig.get("current-context")
    if wanted is None or not names:
        return  # no current context, or none at all: the client's own words say it
    if str(wanted) not in names:
        flag = f"--context {wanted}" if context else f"its current-context {wanted}"
        raise UsageError(
            f"{where}: {flag} is not among its contexts: {', '.join(names)} "
            "(kubectl config get-contexts lists them)"
        )


def _first_document(path: Path) -> Any:
    try:
        return next(yaml.load_all(path.read_text(encoding="utf-8"), Loader=_Loader), None)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None


def _looks_like_cluster_file(document: Any) -> bool:
    return _is_list(document) or (isinstance(document, dict) and "apiVersion" in document)


@contextmanager
def open_cluster(
    cluster: Path | None,
    kubeconfig: Path | None,
    context: str | None = None,
    *,
    depends_on: Collection[str] | None = None,
) -> Iterator[ClusterSource]:
    """Serve ``cluster`` on the emulator for the block, or connect with ``kubeconfig``.
    ``depends_on``: the kinds the tool's answers depend on (None: all), for the warnings."""
    if kubeconfig is not None:
        yield ClusterSource(
            live_client(kubeconfig, context), description=f"kubeconfig {kubeconfig}"
        )
        return
    if cluster is None:
        raise UsageError("one of --cluster or --kubeconfig is required")
    if context is not None:
        raise UsageError("--context goes with --kubeconfig, not with --cluster")
    with ExitStack() as serving:
        # No cyclic collection from the first object parsed until the cluster is served and
        # frozen: a collection in between (the collector is re-enabled between the steps
        # otherwise) scans the millions of containers just made, to find no cycles.
        with collector_paused():
            read = load_file(cluster, depends_on)
            # Before serving (the emulator takes the objects over); only those the tool
            # depends on.
            missing = tuple(m for m in read.missing if depends_on is None or m.kind in depends_on)
            emulator, kube = serving.enter_context(serve(read.objects))
            serving.enter_context(heap_frozen())
        yield ClusterSource(kube, emulator, tuple(read.objects), f"cluster file {cluster}", missing)


@contextmanager
def serve(objects: list[MutableObj]) -> Iterator[tuple[Emulator, KubeApi]]:
    """``objects`` on a fresh emulator, and a client for it, for the block. The objects are
    handed over (not copied: a large cluster file would be copied for nothing); the caller
    may read them after, not change them."""
    warnings = hash_mismatches(objects)
    with Emulator(objects, take=True) as emulator:
        _say_load_findings(warnings, emulator)
        yield emulator, KubeApi(emulator.api_client(), EMULATOR_RETRY)


def _say_load_findings(warnings: list[str], emulator: Emulator) -> None:
    """What loading a cluster found, on stderr, in the same words for every tool."""
    for warning in warnings:
        warn(warning)
    for assumption in emulator.trust_exported_pdb_status():
        note(assumption_text(assumption))


def assumption_text(assumption: PdbAssumption) -> str:
    """What was missing for a PDB's status, and what the tools assume instead."""
    missing = ", ".join(assumption.missing)
    head = f"PDB {assumption.pdb}: its pods' controller(s) {missing} not among the objects read"
    if assumption.expected_pods is None:
        return (
            f"{head}, and the PDB has no exported status: no disruption is allowed (the "
            f"disruption controller's fail-safe); export them too: {EXPORT_COMMAND}"
        )
    allowed = assumption.disruptions_allowed
    said = f", disruptionsAllowed {allowed}" if allowed is not None else ""
    return (
        f"{head}; trusting the PDB's exported status (expectedPods "
        f"{assumption.expected_pods}{said}), health counted from the pods"
    )


def live_directory(
    kube: KubeApi, cluster: str | None = None, tags: Mapping[str, str] | None = None
) -> StaticInstanceDirectory:
    """What EC2 would say about the cluster's instances, from one list of its Nodes (and one of
    its NodeClaims, when Karpenter is installed). Fine for an operator tool run by hand; the
    Lambda asks EC2 instead and never lists the cluster."""
    objects: list[MutableObj] = [
        {**node, "apiVersion": "v1", "kind": "Node"} for node in kube.list_nodes("")
    ]
    objects += [{**c, "apiVersion": KARPENTER_API, "kind": "NodeClaim"} for c in _claims(kube)]
    return directory_from_objects(objects, cluster, tags)


def _claims(kube: KubeApi) -> list[MutableObj]:
    try:
        return kube.list_nodeclaims("")
    except KubeError as error:
        if error.status != 404:  # 404: no Karpenter CRDs in this cluster
            raise
        return []


# What a copy of a live cluster needs for the pipeline to run on it as on the original.
_SNAPSHOT = (
    ("/api/v1/nodes", "v1", "Node"),
    ("/api/v1/pods", "v1", "Pod"),
    ("/apis/policy/v1/poddisruptionbudgets", "policy/v1", "PodDisruptionBudget"),
    (f"/apis/{KARPENTER_API}/nodepools", KARPENTER_API, "NodePool"),
    (f"/apis/{KARPENTER_API}/nodeclaims", KARPENTER_API, "NodeClaim"),
    # The workload controllers: a PDB's expected pods come from their scale.
    ("/apis/apps/v1/deployments", "apps/v1", "Deployment"),
    ("/apis/apps/v1/replicasets", "apps/v1", "ReplicaSet"),
    ("/apis/apps/v1/statefulsets", "apps/v1", "StatefulSet"),
    ("/apis/apps/v1/daemonsets", "apps/v1", "DaemonSet"),
    ("/api/v1/replicationcontrollers", "v1", "ReplicationController"),
)


def snapshot(kube: KubeApi) -> list[MutableObj]:
    """A copy of what Lifeboat reads in a live cluster: Nodes, Pods, PDBs, NodePools,
    NodeClaims and the workload controllers, one paged list each (a read-only operator tool
    may list; the Lambda never does). Karpenter's kinds are absent where Karpenter is not
    installed; a kind the server does not serve (404) is left out, and a PDB that needs it
    then keeps its own exported status (``serve``)."""
    objects: list[MutableObj] = []
    for path, api_version, kind in _SNAPSHOT:
        try:
            items = _list_all(kube, path)
        except KubeError as error:
            if error.status == 404 and api_version != "v1" and kind != "PodDisruptionBudget":
                continue
            raise
        for item in items:
            metadata = {k: v for k, v in item.get("metadata", {}).items() if k != "managedFields"}
            objects.append({**item, "apiVersion": api_version, "kind": kind, "metadata": metadata})
    return objects


def _list_all(kube: KubeApi, path: str) -> list[MutableObj]:
    items: list[MutableObj] = []
    token = ""
    while True:
        query = [("limit", "500"), *([("continue", token)] if token else [])]
        page = kube.request("GET", path, query=query)
        items += page.get("items") or []
        token = (page.get("metadata") or {}).get("continue") or ""
        if not token:
            return items
