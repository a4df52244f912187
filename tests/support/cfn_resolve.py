"""template.yaml as CloudFormation would have it for one set of parameter values.

The template's conditions are evaluated (``Fn::Equals``, ``Fn::Not``, ``Fn::And``,
``Fn::Or``, ``Condition``, over ``Ref``, ``Fn::Join``, ``Fn::Split`` and ``Fn::Select`` of
parameters: what its Conditions section uses), ``Fn::If`` picks its branch, ``!Ref
AWS::NoValue`` drops out of lists and mappings, and resources and outputs whose condition is
false go, as CloudFormation documents for each of these
(https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/conditions-section-structure.html).
Everything else (``!GetAtt``, ``!Sub``, ``Fn::ForEach``) is left for cfn-lint and the tests.
An intrinsic a condition uses that this does not know fails loudly: teach it.
"""

from __future__ import annotations

import copy
from typing import Any

NO_VALUE = {"Ref": "AWS::NoValue"}
_DROP = object()

Value = str | list[str]


def parameter_values(template: dict[str, Any], overrides: dict[str, str]) -> dict[str, Value]:
    """Each parameter's value (its default unless overridden); lists split on commas."""
    unknown = set(overrides) - set(template["Parameters"])
    assert not unknown, f"not parameters of the template: {sorted(unknown)}"
    values: dict[str, Value] = {}
    for name, parameter in template["Parameters"].items():
        raw = overrides.get(name, parameter.get("Default"))
        if raw is None:
            raw = "cluster-a" if name == "ClusterNames" else ""
        raw = str(raw)
        values[name] = raw.split(",") if "List" in parameter["Type"] else raw
    return values


def _value(node: Any, values: dict[str, Value]) -> Any:
    if isinstance(node, str):
        return node
    if isinstance(node, list):
        return [_value(item, values) for item in node]
    assert isinstance(node, dict) and len(node) == 1, f"not a value: {node!r}"
    [(function, argument)] = node.items()
    if function == "Ref":
        return values[argument]
    if function == "Fn::Join":
        delimiter, items = argument
        resolved = _value(items, values)
        return str(delimiter).join(resolved)
    if function == "Fn::Split":
        delimiter, text = argument
        return str(_value(text, values)).split(str(delimiter))
    if function == "Fn::Select":
        index, items = argument
        return _value(items, values)[int(index)]
    raise AssertionError(f"the resolver does not know {function} in a condition: teach it")


def _holds(node: Any, values: dict[str, Value], conditions: dict[str, Any], seen: set[str]) -> bool:
    assert isinstance(node, dict) and len(node) == 1, f"not a condition: {node!r}"
    [(function, argument)] = node.items()
    if function == "Condition":
        return _condition(argument, values, conditions, seen)
    if function == "Fn::Equals":
        left, right = argument
        return bool(_value(left, values) == _value(right, values))
    if function == "Fn::Not":
        [inner] = argument
        return not _holds(inner, values, conditions, seen)
    if function == "Fn::And":
        return all(_holds(inner, values, conditions, seen) for inner in argument)
    if function == "Fn::Or":
        return any(_holds(inner, values, conditions, seen) for inner in argument)
    raise AssertionError(f"the resolver does not know {function} as a condition: teach it")


def _condition(
    name: str, values: dict[str, Value], conditions: dict[str, Any], seen: set[str]
) -> bool:
    assert name not in seen, f"condition {name} refers to itself"
    return _holds(conditions[name], values, conditions, seen | {name})


def evaluate_conditions(template: dict[str, Any], overrides: dict[str, str]) -> dict[str, bool]:
    values = parameter_values(template, overrides)
    conditions = template.get("Conditions", {})
    return {name: _condition(name, values, conditions, set()) for name in conditions}


def _pick(node: Any, truth: dict[str, bool]) -> Any:
    if isinstance(node, list):
        items = [_pick(item, truth) for item in node]
        return [item for item in items if item is not _DROP]
    if isinstance(node, dict):
        if node == NO_VALUE:
            return _DROP
        if set(node) == {"Fn::If"}:
            condition, then, otherwise = node["Fn::If"]
            return _pick(then if truth[condition] else otherwise, truth)
        picked = {key: _pick(value, truth) for key, value in node.items()}
        return {key: value for key, value in picked.items() if value is not _DROP}
    return node


def _kept(section: dict[str, Any], truth: dict[str, bool]) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    for logical_id, entry in section.items():
        if logical_id.startswith("Fn::ForEach::"):
            name, collection, fragment = entry
            kept[logical_id] = [name, collection, _kept(fragment, truth)]
        elif truth.get(entry.get("Condition", ""), True):
            # Kept: its condition holds, so it no longer needs one.
            kept[logical_id] = {key: value for key, value in entry.items() if key != "Condition"}
    return kept


def resolve(template: dict[str, Any], overrides: dict[str, str]) -> dict[str, Any]:
    """The template with ``overrides`` as parameter values (the others at their defaults),
    with no condition left: what is there is there."""
    truth = evaluate_conditions(template, overrides)
    resolved = copy.deepcopy(template)
    resolved["Resources"] = _pick(_kept(resolved["Resources"], truth), truth)
    if "Outputs" in resolved:
        resolved["Outputs"] = _pick(_kept(resolved["Outputs"], truth), truth)
    # Every condition has been applied; the parameters' values are the deployment's (so a
    # linter resolving a Ref sees them).
    resolved.pop("Conditions", None)
    for name, value in overrides.items():
        resolved["Parameters"][name]["Default"] = value
    return resolved


def resources(template: dict[str, Any]) -> dict[str, Any]:
    """Top-level resources plus those inside Fn::ForEach loops (by their templated ids)."""
    found: dict[str, Any] = {}
    for logical_id, resource in template["Resources"].items():
        if logical_id.startswith("Fn::ForEach::"):
            found.update(resource[2])
        else:
            found[logical_id] = resource
    return found
