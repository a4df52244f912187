"""Discovery: ``/api``, ``/apis`` and the resource list of each group version.

kubectl asks first for aggregated discovery (apidiscovery.k8s.io/v2); answered with plain
JSON it falls back to these legacy documents, as it does against any server. ``kubectl
drain`` finds the Eviction API here: ``pods/eviction`` with kind Eviction in group policy.
"""

from __future__ import annotations

from .resources import ALL_RESOURCES, Obj, ResourceType

_VERBS = ["create", "delete", "get", "list", "patch", "update", "watch"]
_SHORT_NAMES = {
    "nodes": ["no"],
    "pods": ["po"],
    "namespaces": ["ns"],
    "events": ["ev"],
    "poddisruptionbudgets": ["pdb"],
    "daemonsets": ["ds"],
    "replicasets": ["rs"],
    "deployments": ["deploy"],
    "statefulsets": ["sts"],
    "ec2nodeclasses": ["ec2nc", "ec2ncs"],
    "replicationcontrollers": ["rc"],
}
_CATEGORIES = {
    "pods": ["all"],
    "daemonsets": ["all"],
    "replicasets": ["all"],
    "deployments": ["all"],
    "statefulsets": ["all"],
    "replicationcontrollers": ["all"],
    "nodepools": ["karpenter"],
    "nodeclaims": ["karpenter"],
    "ec2nodeclasses": ["karpenter"],
}
# Served without being stored: SelfSubjectAccessReview answers `kubectl auth can-i`.
ACCESS_REVIEW_GROUP = "authorization.k8s.io"
ACCESS_REVIEWS = "selfsubjectaccessreviews"


def _group_versions() -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for resource in ALL_RESOURCES:
        if resource.group and resource.version not in groups.setdefault(resource.group, []):
            groups[resource.group].append(resource.version)
    groups[ACCESS_REVIEW_GROUP] = ["v1"]
    return groups


def api_versions(address: str) -> Obj:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}],
    }


def api_group_list() -> Obj:
    groups = []
    for group, versions in _group_versions().items():
        listed = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        groups.append({"name": group, "versions": listed, "preferredVersion": listed[0]})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def _entry(resource: ResourceType) -> Obj:
    entry: Obj = {
        "name": resource.plural,
        "singularName": resource.kind.lower(),
        "namespaced": resource.namespaced,
        "kind": resource.kind,
        "verbs": _VERBS,
    }
    if resource.plural in _SHORT_NAMES:
        entry["shortNames"] = _SHORT_NAMES[resource.plural]
    if resource.plural in _CATEGORIES:
        entry["categories"] = _CATEGORIES[resource.plural]
    return entry


def _status_entry(resource: ResourceType) -> Obj:
    return {
        "name": f"{resource.plural}/status",
        "singularName": "",
        "namespaced": resource.namespaced,
        "kind": resource.kind,
        "verbs": ["get", "patch", "update"],
    }


def api_resource_list(group: str, version: str) -> Obj | None:
    """The APIResourceList of ``group/version``; None when it is not served."""
    group_version = f"{group}/{version}" if group else version
    if group == ACCESS_REVIEW_GROUP and version == "v1":
        resources: list[Obj] = [
            {
                "name": ACCESS_REVIEWS,
                "singularName": "selfsubjectaccessreview",
                "namespaced": False,
                "kind": "SelfSubjectAccessReview",
                "verbs": ["create"],
            }
        ]
    else:
        served = [r for r in ALL_RESOURCES if (r.group, r.version) == (group, version)]
        if not served:
            return None
        resources = []
        for resource in served:
            resources.append(_entry(resource))
            if resource.has_status:
                resources.append(_status_entry(resource))
            if resource.plural == "pods" and not group:
                resources.append(
                    {
                        "name": "pods/eviction",
                        "singularName": "",
                        "namespaced": True,
                        "group": "policy",
                        "version": "v1",
                        "kind": "Eviction",
                        "verbs": ["create"],
                    }
                )
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }
