"""URL paths and HTTP methods → the resource, object and Kubernetes verb they address."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote

from .errors import ApiError
from .resources import NAMESPACES, PODS, ResourceType, resource_for_path


@dataclass(frozen=True)
class Route:
    resource: ResourceType
    namespace: str  # "" for cluster-scoped objects and all-namespaces lists
    name: str
    subresource: str
    verb: str

    @property
    def resource_name(self) -> str:
        """The resource as RBAC and the request counters name it, e.g. "pods/eviction"."""
        plural = self.resource.plural
        return f"{plural}/{self.subresource}" if self.subresource else plural


def _subresource_allowed(resource: ResourceType, subresource: str, method: str) -> bool:
    if subresource == "status":
        return resource.has_status and method in ("GET", "PUT", "PATCH")
    if subresource == "eviction":
        return resource is PODS and method == "POST"
    return subresource == ""


def _verb(method: str, name: str, subresource: str, watch: bool) -> str:
    if method == "GET":
        if watch:
            return "watch"
        return "get" if name else "list"
    if method == "POST" and (not name or subresource == "eviction"):
        return "create"
    if name and method in ("PUT", "PATCH", "DELETE"):
        return {"PUT": "update", "PATCH": "patch", "DELETE": "delete"}[method]
    raise ApiError(
        405, f"the server does not allow this method on the requested resource ({method})"
    )


def parse_route(method: str, path: str, watch: bool) -> Route | None:
    """The route of an API path, None when nothing is served there."""
    parts = [unquote(p) for p in path.split("/") if p]
    if parts[:2] == ["api", "v1"]:
        group, version, rest = "", "v1", parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    namespace = ""
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespaced = resource_for_path(group, version, rest[2])
        if namespaced is not None and namespaced is not NAMESPACES and namespaced.namespaced:
            namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3:
        return None
    resource = resource_for_path(group, version, rest[0])
    if resource is None:
        return None
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    # Namespaced objects live only under /namespaces/{ns}/; without it only the list is served.
    if resource.namespaced and not namespace and (name or method != "GET"):
        return None
    if not _subresource_allowed(resource, subresource, method):
        return None
    return Route(resource, namespace, name, subresource, _verb(method, name, subresource, watch))
