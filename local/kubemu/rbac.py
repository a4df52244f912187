"""A ClusterRole check in front of every resource request, with the authorizer's 403 text."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .errors import ApiError


@dataclass(frozen=True)
class Request:
    """What RBAC sees of a request; `resource` includes any subresource ("pods/eviction")."""

    verb: str
    group: str
    resource: str
    namespace: str
    name: str


def _allows_resource(rule_resources: Sequence[str], resource: str) -> bool:
    if "*" in rule_resources or resource in rule_resources:
        return True
    _, slash, subresource = resource.partition("/")
    return bool(slash) and f"*/{subresource}" in rule_resources


def rule_allows(rule: dict[str, Any], request: Request) -> bool:
    groups = rule.get("apiGroups") or []
    verbs = rule.get("verbs") or []
    names = rule.get("resourceNames") or []
    return (
        ("*" in groups or request.group in groups)
        and _allows_resource(rule.get("resources") or [], request.resource)
        and ("*" in verbs or request.verb in verbs)
        and (not names or request.name in names)
    )


def forbidden(user: str, request: Request) -> ApiError:
    base = request.resource.split("/")[0]
    qualified = f"{base}.{request.group}" if request.group else base
    subject = f'{qualified} "{request.name}"' if request.name else qualified
    scope = (
        f'in the namespace "{request.namespace}"' if request.namespace else "at the cluster scope"
    )
    details: dict[str, Any] = {"kind": base}
    if request.name:
        details["name"] = request.name
    if request.group:
        details["group"] = request.group
    return ApiError(
        403,
        f'{subject} is forbidden: User "{user}" cannot {request.verb} resource'
        f' "{request.resource}" in API group "{request.group}" {scope}',
        details=details,
    )


class Authorizer:
    def __init__(self, rules: Sequence[dict[str, Any]], user: str) -> None:
        self.rules = list(rules)
        self.user = user

    def check(self, request: Request) -> None:
        if not any(rule_allows(rule, request) for rule in self.rules):
            raise forbidden(self.user, request)


@dataclass(frozen=True)
class _Grant:
    rules: tuple[dict[str, Any], ...]
    namespace: str  # "" for a ClusterRoleBinding: everywhere


class RbacPolicy:
    """RBAC objects (ClusterRole, ClusterRoleBinding, Role, RoleBinding) scoped as the
    RBAC authorizer scopes them: a RoleBinding grants only in its own namespace."""

    def __init__(self, objects: Sequence[dict[str, Any]]) -> None:
        roles = {
            (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o
            for o in objects
            if o.get("kind") in ("ClusterRole", "Role")
        }
        self._grants: dict[tuple[str, str], list[_Grant]] = {}
        for binding in objects:
            kind = binding.get("kind")
            if kind not in ("ClusterRoleBinding", "RoleBinding"):
                continue
            namespace = binding["metadata"].get("namespace", "") if kind == "RoleBinding" else ""
            ref = binding.get("roleRef") or {}
            role_namespace = namespace if ref.get("kind") == "Role" else ""
            role = roles.get((ref.get("kind", ""), role_namespace, ref.get("name", "")))
            if role is None:
                continue
            grant = _Grant(tuple(role.get("rules") or ()), namespace)
            for subject in binding.get("subjects") or []:
                key = (subject.get("kind", ""), subject.get("name", ""))
                self._grants.setdefault(key, []).append(grant)

    def allows(self, user: str, groups: Sequence[str], request: Request) -> bool:
        subjects = [("User", user), *(("Group", group) for group in groups)]
        return any(
            grant.namespace in ("", request.namespace)
            and any(rule_allows(rule, request) for rule in grant.rules)
            for subject in subjects
            for grant in self._grants.get(subject, ())
        )
