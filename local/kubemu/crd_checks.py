"""Structural checks of a custom resource, answered as the API server answers a CRD's
OpenAPI schema: 422 Invalid naming the field, unknown fields collected for
``fieldValidation``."""

from __future__ import annotations

import json
import re
from typing import Any

from .errors import ApiError
from .resources import Obj, ResourceType


class StructuralChecker:
    def __init__(self, resource: ResourceType, obj: Obj, fields: dict[str, frozenset[str]]) -> None:
        self.resource = resource
        self.name = obj["metadata"].get("name", "")
        self.fields = fields  # the known fields of each part, by the part's name
        self.unknown: list[tuple[dict[str, Any], str, str]] = []  # (holder, key, path)

    def fail(self, path: str, why: str) -> ApiError:
        details = {
            "name": self.name,
            "group": self.resource.group,
            "kind": self.resource.kind,
            "causes": [{"field": path, "message": why}],
        }
        return ApiError(
            422,
            f'{self.resource.kind}.{self.resource.group} "{self.name}" is invalid: {path}: {why}',
            details=details,
        )

    def mapping(self, value: Any, path: str, known: str, required: tuple[str, ...] = ()) -> Obj:
        if value is None:
            value = {}
        if not isinstance(value, dict):
            raise self.fail(
                path,
                f'Invalid value: "{type(value).__name__}": {path} in body must be of type object',
            )
        for key in value:
            if key not in self.fields[known]:
                self.unknown.append((value, key, f"{path}.{key}"))
        for key in required:
            if key not in value:
                raise self.fail(f"{path}.{key}", "Required value")
        return value

    def string(self, value: Any, path: str, pattern: re.Pattern[str] | None = None) -> str:
        if not isinstance(value, str):
            raise self.fail(
                path, f"Invalid value: {json.dumps(value)}: {path} in body must be of type string"
            )
        if pattern is not None and not pattern.match(value):
            raise self.fail(
                path,
                f"Invalid value: {json.dumps(value)}: {path} in body should match"
                f" '{pattern.pattern}'",
            )
        return value

    def enum(self, value: Any, path: str, allowed: tuple[str, ...]) -> None:
        if value not in allowed:
            supported = ", ".join(f'"{a}"' for a in allowed)
            raise self.fail(
                path, f"Unsupported value: {json.dumps(value)}: supported values: {supported}"
            )

    def integer(self, value: Any, path: str, low: int, high: int | None) -> int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.fail(
                path, f"Invalid value: {json.dumps(value)}: {path} in body must be of type integer"
            )
        if value < low:
            raise self.fail(
                path,
                f"Invalid value: {value}: {path} in body should be greater than or equal to {low}",
            )
        if high is not None and value > high:
            raise self.fail(
                path,
                f"Invalid value: {value}: {path} in body should be less than or equal to {high}",
            )
        return value

    def array(self, value: Any, path: str, max_items: int | None = None) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.fail(
                path, f"Invalid value: {json.dumps(value)}: {path} in body must be of type array"
            )
        if max_items is not None and len(value) > max_items:
            raise self.fail(path, f"Too many: {len(value)}: must have at most {max_items} items")
        return value
