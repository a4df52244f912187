"""Where the operator tools read a cluster from: a cluster file (served by the local emulator)
or a live cluster through a kubeconfig. Either way, the tools talk to it through ``KubeApi``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubemu import Emulator, load_cluster_file
from lifeboat.eks_auth import api_client_from_kubeconfig
from lifeboat.instances import StaticInstanceDirectory
from lifeboat.kube import KubeApi, KubeError, RetryPolicy
from lifeboat.objects import MutableObj
from lifeboat_local.common import UsageError
from lifeboat_local.directory import directory_from_objects

# The emulator answers at once; a short retry keeps a tool snappy if it ever does not.
EMULATOR_RETRY = RetryPolicy(attempts=2, base_delay=0.01)


@dataclass(frozen=True)
class ClusterSource:
    """An open cluster: its API, and the emulator behind it (None for a live cluster)."""

    kube: KubeApi
    emulator: Emulator | None = None
    objects: tuple[Mapping[str, Any], ...] | None = None  # the cluster file's objects
    description: str = ""


def load_objects(path: Path) -> list[MutableObj]:
    """The objects of a cluster file; a usage error (exit 1) when it cannot be read."""
    try:
        return load_cluster_file(path)
    except (OSError, ValueError) as error:
        raise UsageError(f"--cluster {path}: {error}") from None


@contextmanager
def open_cluster(
    cluster: Path | None, kubeconfig: Path | None, context: str | None = None
) -> Iterator[ClusterSource]:
    """Serve ``cluster`` on the emulator for the block, or connect with ``kubeconfig``."""
    if kubeconfig is not None:
        try:
            api_client = api_client_from_kubeconfig(str(kubeconfig), context)
        except Exception as error:  # the kubernetes client raises several unrelated types
            raise UsageError(f"--kubeconfig {kubeconfig}: {error}") from None
        yield ClusterSource(KubeApi(api_client), description=f"kubeconfig {kubeconfig}")
        return
    if cluster is None:
        raise UsageError("one of --cluster or --kubeconfig is required")
    if context is not None:
        raise UsageError("--context goes with --kubeconfig, not with --cluster")
    objects = load_objects(cluster)
    with Emulator(objects) as emulator:
        yield ClusterSource(
            KubeApi(emulator.api_client(), EMULATOR_RETRY),
            emulator,
            tuple(objects),
            description=f"cluster file {cluster}",
        )


def live_directory(kube: KubeApi, cluster: str | None = None) -> StaticInstanceDirectory:
    """What EC2 would say about the cluster's instances, from one list of its Nodes (and one of
    its NodeClaims, when Karpenter is installed). Fine for an operator tool run by hand; the
    Lambda asks EC2 instead and never lists the cluster."""
    objects: list[MutableObj] = [
        {**node, "apiVersion": "v1", "kind": "Node"} for node in kube.list_nodes("")
    ]
    try:
        claims = kube.list_nodeclaims("")
    except KubeError as error:
        if error.status != 404:  # 404: no Karpenter CRDs in this cluster
            raise
        claims = []
    objects += [{**claim, "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim"} for claim in claims]
    return directory_from_objects(objects, cluster)
