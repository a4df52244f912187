"""API errors and the metav1.Status bodies the API server answers with."""

from __future__ import annotations

from typing import Any

from .resources import Obj, ResourceType

# The reason the API server puts in a Status for each HTTP code (k8s.io/apimachinery errors).
REASONS: dict[int, str] = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Expired",
    413: "RequestEntityTooLarge",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


class ApiError(Exception):
    """An error the emulator answers with a Failure Status."""

    def __init__(
        self,
        code: int,
        message: str,
        reason: str | None = None,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason if reason is not None else REASONS.get(code, "Unknown")
        self.details = details
        self.headers = headers or {}

    def status(self) -> Obj:
        body: Obj = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None:
            body["details"] = self.details
        return body


def success_status(code: int) -> Obj:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code}


def _details(resource: ResourceType, name: str) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name, "kind": resource.plural}
    if resource.group:
        details["group"] = resource.group
    return details


def not_found(resource: ResourceType, name: str) -> ApiError:
    return ApiError(
        404, f'{resource.describe()} "{name}" not found', details=_details(resource, name)
    )


def already_exists(resource: ResourceType, name: str) -> ApiError:
    return ApiError(
        409,
        f'{resource.describe()} "{name}" already exists',
        reason="AlreadyExists",
        details=_details(resource, name),
    )


def conflict(resource: ResourceType, name: str, why: str) -> ApiError:
    return ApiError(
        409,
        f'Operation cannot be fulfilled on {resource.describe()} "{name}": {why}',
        details=_details(resource, name),
    )


def stale_version(resource: ResourceType, name: str) -> ApiError:
    return conflict(
        resource,
        name,
        "the object has been modified; please apply your changes to the latest version"
        " and try again",
    )


def invalid(resource: ResourceType, name: str, field: str, why: str) -> ApiError:
    details = _details(resource, name) | {"kind": resource.kind}
    details["causes"] = [{"field": field, "message": why}]
    return ApiError(422, f'{resource.kind} "{name}" is invalid: {field}: {why}', details=details)


def bad_request(message: str) -> ApiError:
    return ApiError(400, message)


def entity_too_large(why: str) -> ApiError:
    """apimachinery's NewRequestEntityTooLargeError: 413, "Request entity too large: ..."."""
    return ApiError(413, f"Request entity too large: {why}")
