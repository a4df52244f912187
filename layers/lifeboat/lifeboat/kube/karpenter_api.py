"""The calls about Karpenter's custom resources (``karpenter.sh/v1``): NodePools (get, list)
and NodeClaims (get, list by label, create, JSON patch, delete with a uid precondition)."""

from __future__ import annotations

from lifeboat.kube.errors import NotFound
from lifeboat.kube.transport import JSON_PATCH, KubeTransport, segment
from lifeboat.model.objects import MutableObj

KARPENTER = "/apis/karpenter.sh/v1"


class KarpenterApi(KubeTransport):
    """NodePools and NodeClaims."""

    def get_nodepool(self, name: str) -> MutableObj | None:
        return self._get_or_none(f"{KARPENTER}/nodepools/{segment(name)}")

    def list_nodepools(self) -> list[MutableObj]:
        return list(self._list(f"{KARPENTER}/nodepools", []))

    def get_nodeclaim(self, name: str) -> MutableObj | None:
        return self._get_or_none(f"{KARPENTER}/nodeclaims/{segment(name)}")

    def list_nodeclaims(self, label_selector: str) -> list[MutableObj]:
        return list(self._list(f"{KARPENTER}/nodeclaims", [("labelSelector", label_selector)]))

    def create_nodeclaim(self, body: MutableObj) -> MutableObj:
        """Create a claim. With ``generateName`` every accepted POST makes a new claim, so a
        maybe-done one is never resent; a named claim is (a repeat is 409 AlreadyExists)."""
        named = bool(body.get("metadata", {}).get("name"))
        return self.request("POST", f"{KARPENTER}/nodeclaims", body=body, idempotent=named)

    def patch_nodeclaim(self, name: str, operations: list[MutableObj]) -> MutableObj:
        """RFC 6902 JSON patch of a claim (the when-ready hand-over's annotations)."""
        path = f"{KARPENTER}/nodeclaims/{segment(name)}"
        return self.request("PATCH", path, body=operations, content_type=JSON_PATCH)

    def delete_nodeclaim(self, name: str, uid: str | None) -> bool:
        """Delete (Karpenter then drains and terminates). False if it was already gone."""
        body: MutableObj = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if uid:
            # Never delete a namesake created after we looked.
            body["preconditions"] = {"uid": uid}
        try:
            self.request("DELETE", f"{KARPENTER}/nodeclaims/{segment(name)}", body=body)
        except NotFound:
            return False
        return True
