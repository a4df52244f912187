"""A CRD's CEL rules (``x-kubernetes-validations``), evaluated as the API server does.

The rules are the upstream CRD files' own text, compiled by cel-python (``celpy``) with the
functions Kubernetes adds (``celfunctions``); nothing is translated by hand, so a CRD update
is a file copy. Each rule is compiled once per process, its program shared by every schema
node carrying the same text; its outcome on given values is remembered (``_outcome``); a
subtree without rules is never walked.

What the server does, from k8s.io/apiextensions-apiserver ``pkg/apiserver/schema/cel/
validation.go`` (release 1.31, the version kubemu serves):

- ``validateExpressions`` runs a node's rules before its children's (``validate``); a null
  value is not validated; a rule that names ``oldSelf`` (a transition rule) runs only when
  the node has an old value to compare with: on an update, under a correlatable parent
  (object properties and maps by key, unless ``x-kubernetes-map-type`` says otherwise;
  list items only in a ``x-kubernetes-list-type: map`` list, by its keys: ``validateMap``,
  ``validateArray``, ``makeMapList``).
- A false rule is ``fieldErrorForReason(path[.fieldPath], sts.Type, detail, reason)``:
  ``Invalid value: "<schema type>": <detail>`` (Forbidden, Required or Duplicate when the rule
  names that ``reason``), the detail being ``messageExpression``'s value when it evaluates
  to a usable string, else ``message``, else ``failed rule: <rule>``
  (``ruleMessageOrDefault``).
- A rule that fails to evaluate is ``Invalid value: "<type>": <error> evaluating rule:
  <message or rule>``; one that does not compile is ``rule compile error: <why>`` on every
  write (kubemu names the CRD file, the path and the rule in it).

The server reports every broken rule at once; kubemu, as for its other checks, answers with
the first, in the server's order (a node's own rules, then its children's).

Differences kept on purpose (kubemu's objects all passed these rules when written):

- On an update kubemu runs the rules without ``oldSelf`` over the whole object, then the
  transition rules (two passes; the server mixes them node by node), and does not ratchet
  (CRDValidationRatcheting, on by default since 1.30, turns the error of a rule without
  ``oldSelf`` on a node equal to its old value into a warning).
- No cost budget (``PerCallLimit``, ``RuntimeCELCostBudget``): the CRDs' ``maxItems`` and
  ``maxLength`` bound the work: a NodePool of 100 distinct requirements (the most) of 300
  values each, 2 MB, takes 1 to 2 s the first time, 0.1 s once its outcomes are known.
- A request's integer beyond int64 is a float64, as the server decodes it (dispatch
  ``_go_number``); an EC2NodeClass integer field without bounds then takes a float
  beyond 2**53 with no fraction (draft-07 JSON schema, fastjsonschema) where kube-openapi
  refuses it as no integer. An int beyond int64 that still reaches the rules (a YAML
  cluster file) is ``integer overflow evaluating rule``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .resources import Obj

# (rule text, digests of self and oldSelf) -> outcome (``_outcome``); emptied when full.
_OUTCOMES: dict[tuple[str, bytes, bytes | None], bool | str] = {}
_MAX_OUTCOMES = 20_000
# k8s.io/apiserver/pkg/apis/cel MaxEvaluatedMessageExpressionSizeBytes
_MAX_MESSAGE_BYTES = 5 * 1024
_REASONS = {
    "FieldValueForbidden": "Forbidden",
    "FieldValueRequired": "Required value",
    "FieldValueDuplicate": "Duplicate value",
}


class CelRuleError(Exception):
    """A rule the library cannot compile: names the CRD file, the schema path and the rule."""

    def __init__(self, crd: str, path: str, rule: str, why: str) -> None:
        super().__init__(f"{crd}: {path or '<root>'}: rule {rule!r}: {why}")


@dataclass(frozen=True)
class Rule:
    text: str
    program: Any  # a celpy Runner, or None when the rule did not compile
    message: str  # as the CRD gives it, stripped ("" when none)
    message_program: Any  # messageExpression's Runner, or None
    uses_old_self: bool
    field_path: str  # the rule's fieldPath, normalised ("" when it has none)
    reason: str | None
    error: CelRuleError | None = None
    per_item: tuple[str, Any] | None = None  # celprograms.Compiled.per_item

    @property
    def detail(self) -> str:
        """``ruleMessageOrDefault``."""
        return self.message or f"failed rule: {self.text.strip()}"

    @property
    def error_string(self) -> str:
        """``ruleErrorString``: how an evaluation error names the rule."""
        return self.message or self.text.strip()


@dataclass
class Node:
    """A schema node holding rules, or leading to nodes that do (others are left out)."""

    type: str
    rules: tuple[Rule, ...] = ()
    properties: dict[str, Node] = field(default_factory=dict)
    items: Node | None = None
    additional: Node | None = None
    list_keys: tuple[str, ...] = ()  # x-kubernetes-list-map-keys of a list-type map
    correlatable: bool = True  # MapIsCorrelatable (granular/atomic maps)
    transitions: bool = False  # a transition rule here or beneath


@dataclass(frozen=True)
class Violation:
    path: str
    detail: str  # e.g. 'Invalid value: "object": <message>'


def _program(crd: str, path: str, text: str) -> Any:
    """celprograms.Compiled of a rule text, or CelRuleError."""
    from . import celprograms  # celpy, imported on the first rule compiled (about 0.1 s)

    parsed = celprograms.compiled(text)
    if isinstance(parsed, str):
        raise CelRuleError(crd, path, text, parsed)
    if parsed.unknown:
        names = ", ".join(sorted(parsed.unknown))
        raise CelRuleError(crd, path, text, f"calls {names}, which kubemu's CEL does not provide")
    return parsed


def _rule(crd: str, path: str, spec: Obj) -> Rule:
    text = str(spec.get("rule", ""))
    message = str(spec.get("message") or "").strip()
    field_path = str(spec.get("fieldPath") or "").lstrip(".")
    try:
        if spec.get("optionalOldSelf"):
            raise CelRuleError(crd, path, text, "optionalOldSelf is not supported by kubemu")
        compiled = _program(crd, path, text)
        message_program = None
        if spec.get("messageExpression"):
            message_program = _program(crd, path, str(spec["messageExpression"])).program
    except CelRuleError as error:
        return Rule(text, None, message, None, False, field_path, None, error)
    return Rule(
        text,
        compiled.program,
        message,
        message_program,
        compiled.uses_old_self,
        field_path,
        spec.get("reason"),
        per_item=compiled.per_item,
    )


def compile_schema(crd: str, schema: Obj, path: str = "") -> Node | None:
    """The rules of ``schema`` (an openAPIV3Schema) compiled, or None when it has none.
    ``crd`` names the file in errors; ``path`` is the schema path (``[]`` list items, ``{}``
    map values)."""
    node = Node(
        type=str(schema.get("type", "")),
        rules=tuple(_rule(crd, path, r) for r in schema.get("x-kubernetes-validations") or []),
        list_keys=tuple(schema.get("x-kubernetes-list-map-keys") or ())
        if schema.get("x-kubernetes-list-type") == "map"
        else (),
        correlatable=schema.get("x-kubernetes-map-type") in (None, "granular", "atomic"),
    )
    for key, child in (schema.get("properties") or {}).items():
        compiled = compile_schema(crd, child, f"{path}.{key}" if path else key)
        if compiled is not None:
            node.properties[key] = compiled
    if isinstance(schema.get("items"), dict):
        node.items = compile_schema(crd, schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        node.additional = compile_schema(crd, schema["additionalProperties"], f"{path}{{}}")
    children = [*node.properties.values(), node.items, node.additional]
    node.transitions = any(r.uses_old_self for r in node.rules) or any(
        c.transitions for c in children if c is not None
    )
    if node.rules or node.properties or node.items or node.additional:
        return node
    return None


def rules(node: Node | None) -> Iterator[Rule]:
    """Every rule under ``node``."""
    if node is None:
        return
    yield from node.rules
    for child in node.properties.values():
        yield from rules(child)
    yield from rules(node.items)
    yield from rules(node.additional)


def first_violation(node: Node | None, obj: Any) -> Violation | None:
    """The first rule ``obj`` (JSON-like) breaks, as on a create (transition rules do not
    run)."""
    if node is None:
        return None
    return _validate(node, obj, None, "", transitions=False)


def first_transition_violation(node: Node | None, obj: Any, old: Any) -> Violation | None:
    """The first transition rule (one naming ``oldSelf``) the update of ``old`` to ``obj``
    breaks; the other rules are ``first_violation``'s."""
    if node is None or not node.transitions:
        return None
    return _validate(node, obj, old, "", transitions=True)


def _validate(node: Node, value: Any, old: Any, path: str, transitions: bool) -> Violation | None:
    """The rules but transition rules; or, with ``transitions``, only transition rules, on
    the nodes that have an old value to compare with (``old`` not None)."""
    if value is None or (transitions and (old is None or not node.transitions)):
        return None
    for rule in node.rules:
        if rule.uses_old_self == transitions:
            found = _evaluate(node, rule, value, old, path)
            if found is not None:
                return found
    if isinstance(value, dict):
        old_map = old if isinstance(old, dict) and node.correlatable else None
        return _validate_map(node, value, old_map, path, transitions)
    if isinstance(value, list) and node.items is not None:
        return _validate_list(node, node.items, value, old, path, transitions)
    return None


def _validate_map(
    node: Node, value: Any, old: Any, path: str, transitions: bool
) -> Violation | None:
    for key, child in node.properties.items():
        if key in value:
            previous = None if old is None else old.get(key)
            found = _validate(child, value[key], previous, _child(path, key), transitions)
            if found is not None:
                return found
    if node.additional is not None:
        for key, item in value.items():
            previous = None if old is None else old.get(key)
            found = _validate(node.additional, item, previous, f"{path}[{key}]", transitions)
            if found is not None:
                return found
    return None


def _validate_list(
    node: Node, items: Node, value: Any, old: Any, path: str, transitions: bool
) -> Violation | None:
    olds: dict[tuple[Any, ...], Any] = {}
    if node.list_keys and isinstance(old, list):  # makeMapList: by the map keys
        olds = {_list_key(node, item): item for item in old if isinstance(item, dict)}
    for index, item in enumerate(value):
        previous = olds.get(_list_key(node, item)) if olds else None
        found = _validate(items, item, previous, f"{path}[{index}]", transitions)
        if found is not None:
            return found
    return None


def _list_key(node: Node, item: Any) -> tuple[Any, ...]:
    return tuple(item.get(key) for key in node.list_keys) if isinstance(item, dict) else ()


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _outcome(rule: Rule, value: Any, old: Any) -> bool | str:
    """True, False, or the evaluation error's text: celpy's answer, remembered. A rule's
    outcome depends on nothing but its text and its values (the Kubernetes CEL libraries
    have no clock or randomness), and celpy's interpreter takes milliseconds a rule, so the
    same rule on the same values (a storm's NodeClaims share their requirements) is
    evaluated once. A rule ``self.all(x, body)`` is remembered item by item (pools share
    most requirements; ``celprograms._per_item`` says why that is the same answer)."""
    from . import celprograms

    if rule.per_item is not None and isinstance(value, list):
        per_item = rule.per_item
        outcomes = [
            _remembered((rule.text, _key(item), b"item"), celprograms.item_outcome, per_item, item)
            for item in value
        ]
        if False in outcomes:
            return False
        return next((o for o in outcomes if o is not True), True)
    key = (rule.text, _key(value), _key(old) if rule.uses_old_self else None)
    return _remembered(key, celprograms.outcome, rule.program, value, old, rule.uses_old_self)


def _remembered(key: tuple[str, bytes, bytes | None], compute: Any, *args: Any) -> bool | str:
    found = _OUTCOMES.get(key)
    if found is None:
        found = compute(*args)
        if len(_OUTCOMES) >= _MAX_OUTCOMES:
            _OUTCOMES.clear()
        _OUTCOMES[key] = found
    return found


def _key(value: Any) -> bytes:
    """A 128-bit digest of the value's canonical JSON: a few bytes a remembered outcome,
    however large the value."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.blake2b(text.encode(), digest_size=16).digest()


def _evaluate(node: Node, rule: Rule, value: Any, old: Any, path: str) -> Violation | None:
    if rule.error is not None:
        return Violation(path, f'Invalid value: "{node.type}": rule compile error: {rule.error}')
    outcome = _outcome(rule, value, old)
    if outcome is True:
        return None
    where = _child(path, rule.field_path) if rule.field_path else path
    if outcome is not False:
        return Violation(path, f'Invalid value: "{node.type}": {_error_detail(rule, outcome)}')
    detail = _message(rule, value, old)
    reason = _REASONS.get(rule.reason or "")
    if reason == "Duplicate value":
        return Violation(where, f'{reason}: "{node.type}"')
    if reason:
        return Violation(where, f"{reason}: {detail}")
    return Violation(where, f'Invalid value: "{node.type}": {detail}')


def _error_detail(rule: Rule, error: str) -> str:
    """``validateExpressions`` on an evaluation error: an overload error (a value of a type
    the rule does not take) has its own sentence, every other error is ``<error> evaluating
    rule: <rule>``."""
    if error.startswith("no such overload"):
        return (
            f"'{error}': call arguments did not match a supported operator, function or macro"
            f" signature for rule: {rule.error_string}"
        )
    return f"{error} evaluating rule: {rule.error_string}"


def _message(rule: Rule, value: Any, old: Any) -> str:
    """messageExpression's value when it gives a one-line, non-empty string of at most
    ``MaxEvaluatedMessageExpressionSizeBytes`` (5 KiB, trimmed, in UTF-8 bytes as Go's
    len); else the message (``evalMessageExpression``; its failures are logged by the
    server, not shown)."""
    if rule.message_program is not None:
        from . import celprograms

        text = (
            celprograms.text(rule.message_program, value, old, rule.uses_old_self) or ""
        ).strip()
        if text and "\n" not in text and len(text.encode()) <= _MAX_MESSAGE_BYTES:
            return text
    return rule.detail
