"""Label and field selectors: the query-string syntax and the LabelSelector object."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import bad_request
from .resources import Obj, ResourceType, field_value

_LABEL_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)
_SET_EXPRESSION = re.compile(r"^(?P<key>\S+)\s+(?P<op>in|notin)\s*\((?P<values>[^)]*)\)$")
_EQUALITY = re.compile(r"^(?P<key>[^=!]+?)\s*(?P<op>==|!=|=)\s*(?P<value>.*)$")


@dataclass(frozen=True)
class Requirement:
    """One clause of a selector; `op` is one of In, NotIn, Exists, DoesNotExist."""

    key: str
    op: str
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.op == "Exists":
            return self.key in labels
        if self.op == "DoesNotExist":
            return self.key not in labels
        if self.op == "In":
            return self.key in labels and labels[self.key] in self.values
        # NotIn matches objects without the label, as in labels.Selector.
        return self.key not in labels or labels[self.key] not in self.values

    def equality_value(self) -> str | None:
        """The single value this clause pins the key to, if it is an equality."""
        if self.op == "In" and len(self.values) == 1:
            return next(iter(self.values))
        return None


@dataclass(frozen=True)
class LabelSelector:
    """A conjunction of requirements; `nothing` is the selector that matches no object."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    def matches(self, labels: Mapping[str, str]) -> bool:
        return not self.nothing and all(r.matches(labels) for r in self.requirements)

    def pinned_value(self, key: str) -> str | None:
        for requirement in self.requirements:
            if requirement.key == key and (value := requirement.equality_value()) is not None:
                return value
        return None


def _split_top_level(text: str) -> list[str]:
    """Splits on commas outside parentheses: "a in (x,y),b" → ["a in (x,y)", "b"]."""
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return [part.strip() for part in parts]


def _checked_key(key: str, text: str) -> str:
    if not _LABEL_KEY.match(key):
        raise bad_request(f"unable to parse requirement: invalid label key {key!r} in {text!r}")
    return key


def parse_label_selector(text: str | None) -> LabelSelector:
    """Parses the `labelSelector` query parameter (k8s.io/apimachinery/pkg/labels syntax)."""
    if not text or not text.strip():
        return LabelSelector()
    requirements: list[Requirement] = []
    for clause in _split_top_level(text):
        if not clause:
            raise bad_request(f"unable to parse requirement: empty clause in {text!r}")
        if match := _SET_EXPRESSION.match(clause):
            values = frozenset(v.strip() for v in match["values"].split(",") if v.strip())
            if not values:
                # labels.Parse: "for 'in', 'notin' operators, values set can't be empty".
                raise bad_request(
                    f"unable to parse requirement: values set can't be empty in {text!r}"
                )
            op = "In" if match["op"] == "in" else "NotIn"
            requirements.append(Requirement(_checked_key(match["key"], text), op, values))
        elif match := _EQUALITY.match(clause):
            key = _checked_key(match["key"].strip(), text)
            value = frozenset({match["value"].strip()})
            requirements.append(Requirement(key, "NotIn" if match["op"] == "!=" else "In", value))
        elif clause.startswith("!"):
            requirements.append(Requirement(_checked_key(clause[1:].strip(), text), "DoesNotExist"))
        else:
            requirements.append(Requirement(_checked_key(clause, text), "Exists"))
    return LabelSelector(tuple(requirements))


def label_selector_from_object(selector: Mapping[str, Any] | None) -> LabelSelector:
    """Converts a metav1.LabelSelector as LabelSelectorAsSelector does.

    A missing selector matches nothing; an empty one ({}) matches everything.
    """
    if selector is None:
        return LabelSelector(nothing=True)
    requirements = [
        Requirement(key, "In", frozenset({str(value)}))
        for key, value in (selector.get("matchLabels") or {}).items()
    ]
    for expression in selector.get("matchExpressions") or []:
        requirements.append(
            Requirement(
                expression["key"],
                expression["operator"],
                frozenset(str(v) for v in expression.get("values") or []),
            )
        )
    return LabelSelector(tuple(requirements))


@dataclass(frozen=True)
class FieldRequirement:
    field: str
    value: str
    equal: bool

    def matches(self, obj: Obj) -> bool:
        return (field_value(obj, self.field) == self.value) == self.equal


def parse_field_selector(text: str | None, resource: ResourceType) -> tuple[FieldRequirement, ...]:
    """Parses `fieldSelector`; fields the resource does not index are a 400, as on a real server."""
    if not text or not text.strip():
        return ()
    requirements: list[FieldRequirement] = []
    for clause in text.split(","):
        match = _EQUALITY.match(clause.strip())
        if match is None:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{clause}'")
        field = match["key"].strip()
        if field not in resource.field_labels:
            raise bad_request(f'field label not supported: "{field}"')
        requirements.append(FieldRequirement(field, match["value"].strip(), match["op"] != "!="))
    return tuple(requirements)


def labels_of(obj: Obj) -> Mapping[str, str]:
    labels: Mapping[str, str] = obj.get("metadata", {}).get("labels") or {}
    return labels
