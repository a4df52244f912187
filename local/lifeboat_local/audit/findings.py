"""What an audit check reports: one finding about one named object, with a one-line fix."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Severity(StrEnum):
    """How bad a finding is. Errors fail ``lifeboat audit``; warnings fail it with ``--strict``."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        """Sort key: errors first."""
        return (Severity.ERROR, Severity.WARNING, Severity.INFO).index(self)


@dataclass(frozen=True, order=True)
class ObjectRef:
    """The object a finding is about: ``Kind namespace/name`` (no namespace for cluster scope)."""

    kind: str
    namespace: str | None
    name: str

    def __str__(self) -> str:
        return (
            f"{self.kind} {self.namespace}/{self.name}"
            if self.namespace
            else f"{self.kind} {self.name}"
        )

    def to_json(self) -> dict[str, str | None]:
        return {"kind": self.kind, "namespace": self.namespace, "name": self.name}


@dataclass(frozen=True)
class Finding:
    """One problem: which check found it, about what, why it matters and how to fix it."""

    check: str
    severity: Severity
    object: ObjectRef
    message: str
    fix: str

    def sort_key(self) -> tuple[int, str, ObjectRef, str]:
        return (self.severity.rank, self.check, self.object, self.message)

    def to_json(self) -> dict[str, Any]:
        """The stable JSON form of ``lifeboat audit --json`` (field names are a contract)."""
        return {
            "check": self.check,
            "severity": self.severity.value,
            "object": self.object.to_json(),
            "message": self.message,
            "fix": self.fix,
        }


@dataclass(frozen=True)
class Issue:
    """What a check function yields; the registry adds the check's name and severity."""

    object: ObjectRef
    message: str
    fix: str
