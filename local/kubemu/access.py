"""SelfSubjectAccessReview (authorization.k8s.io/v1): what ``kubectl auth can-i`` asks.

Answered by the same authorizer that guards the emulator's requests, for the requesting
(or impersonated) user.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .errors import bad_request
from .rbac import Request
from .resources import Obj


def review(body: Any, allows: Callable[[Request], bool]) -> Obj:
    if not isinstance(body, dict) or not isinstance(body.get("spec"), dict):
        raise bad_request("the body must be a SelfSubjectAccessReview with a spec")
    spec = body["spec"]
    attributes = spec.get("resourceAttributes")
    if isinstance(attributes, dict):
        resource = attributes.get("resource", "")
        if attributes.get("subresource"):
            resource = f"{resource}/{attributes['subresource']}"
        request = Request(
            attributes.get("verb", ""),
            attributes.get("group", ""),
            resource,
            attributes.get("namespace", ""),
            attributes.get("name", ""),
        )
        allowed = allows(request)
    else:
        # Non-resource URLs (/healthz, /metrics): the emulator serves none behind RBAC.
        allowed = True
    status: Obj = {"allowed": allowed}
    if not allowed:
        status["reason"] = "no RBAC rule of the emulator allows it"
    return {
        "kind": "SelfSubjectAccessReview",
        "apiVersion": "authorization.k8s.io/v1",
        "metadata": {},
        "spec": spec,
        "status": status,
    }
