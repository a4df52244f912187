"""The calls about nodes and their pods: nodes (get, list by label, JSON patch), pods (of a
node, of a workload), and the ``policy/v1`` calls a drain makes about them (the Eviction
API, a namespace's PodDisruptionBudgets)."""

from __future__ import annotations

from enum import StrEnum

from lifeboat.kube.errors import KubeError, NotFound
from lifeboat.kube.transport import JSON, JSON_PATCH, KubeTransport, segment
from lifeboat.model.objects import MutableObj


class Eviction(StrEnum):
    """What the Eviction API said about one pod."""

    EVICTED = "evicted"
    BLOCKED = "blocked"  # 429: a PodDisruptionBudget does not allow it now
    GONE = "gone"  # 404: the pod is already gone


class CoreApi(KubeTransport):
    """Nodes, pods, evictions and PodDisruptionBudgets."""

    def get_node(self, name: str) -> MutableObj | None:
        return self._get_or_none(f"/api/v1/nodes/{segment(name)}")

    def list_nodes(self, label_selector: str) -> list[MutableObj]:
        return list(self._list("/api/v1/nodes", [("labelSelector", label_selector)]))

    def patch_node(self, name: str, operations: list[MutableObj]) -> MutableObj:
        """RFC 6902 JSON patch: its ``test`` operations make a stale read fail with 409."""
        return self.request(
            "PATCH", f"/api/v1/nodes/{segment(name)}", body=operations, content_type=JSON_PATCH
        )

    def list_pods_on_node(self, node_name: str) -> list[MutableObj]:
        selector = f"spec.nodeName={node_name}"
        return list(self._list("/api/v1/pods", [("fieldSelector", selector)]))

    def evict_pod(self, namespace: str, name: str) -> Eviction:
        body = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
        }
        path = f"/api/v1/namespaces/{segment(namespace)}/pods/{segment(name)}/eviction"
        try:
            # No retry here on 429: a PDB refusal is an answer, handled by the drain loop.
            self._request_once("POST", path, (), body, JSON)
        except NotFound:
            return Eviction.GONE
        except KubeError as error:
            if error.status == 429:
                return Eviction.BLOCKED
            raise
        return Eviction.EVICTED

    def list_pods(self, namespace: str, label_selector: str) -> list[MutableObj]:
        """Pods of one namespace by label: a workload's pods, never the whole cluster's."""
        path = f"/api/v1/namespaces/{segment(namespace)}/pods"
        return list(self._list(path, [("labelSelector", label_selector)]))

    def list_pdbs(self, namespace: str) -> list[MutableObj]:
        path = f"/apis/policy/v1/namespaces/{segment(namespace)}/poddisruptionbudgets"
        return list(self._list(path, []))
