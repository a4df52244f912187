"""The calls for Lifeboat's own records in the cluster: Events (what it did, on the object),
the per-NodePool Lease (:mod:`lifeboat.kube.pool_lock`) and the ConfigMaps that hold a
rotation's state."""

from __future__ import annotations

from lifeboat.kube.transport import KubeTransport, segment
from lifeboat.model.objects import MutableObj


class BookkeepingApi(KubeTransport):
    """Events, Leases and ConfigMaps."""

    def create_event(self, namespace: str, body: MutableObj) -> MutableObj:
        return self.request("POST", f"/api/v1/namespaces/{segment(namespace)}/events", body=body)

    def get_lease(self, namespace: str, name: str) -> MutableObj | None:
        return self._get_or_none(_lease_path(namespace, name))

    def create_lease(self, namespace: str, body: MutableObj) -> MutableObj:
        path = f"/apis/coordination.k8s.io/v1/namespaces/{segment(namespace)}/leases"
        return self.request("POST", path, body=body)

    def update_lease(self, namespace: str, body: MutableObj) -> MutableObj:
        """PUT with the read ``resourceVersion``: 409 when another worker got there first."""
        name = body["metadata"]["name"]
        return self.request("PUT", _lease_path(namespace, name), body=body)

    def get_configmap(self, namespace: str, name: str) -> MutableObj | None:
        return self._get_or_none(_configmap_path(namespace, name))

    def list_configmaps(self, namespace: str, label_selector: str) -> list[MutableObj]:
        """For the operator tools (``lifeboat status``); the Lambda reads them by name."""
        path = f"/api/v1/namespaces/{segment(namespace)}/configmaps"
        return list(self._list(path, [("labelSelector", label_selector)]))

    def create_configmap(self, namespace: str, body: MutableObj) -> MutableObj:
        """409 (:class:`~lifeboat.kube.errors.Conflict`) when one of that name exists already."""
        path = f"/api/v1/namespaces/{segment(namespace)}/configmaps"
        return self.request("POST", path, body=body)

    def update_configmap(self, namespace: str, body: MutableObj) -> MutableObj:
        """PUT with the read ``resourceVersion``: 409 when another writer got there first."""
        name = body["metadata"]["name"]
        return self.request("PUT", _configmap_path(namespace, name), body=body)


def _lease_path(namespace: str, name: str) -> str:
    return f"/apis/coordination.k8s.io/v1/namespaces/{segment(namespace)}/leases/{segment(name)}"


def _configmap_path(namespace: str, name: str) -> str:
    return f"/api/v1/namespaces/{segment(namespace)}/configmaps/{segment(name)}"
