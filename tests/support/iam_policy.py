"""A small evaluator of the resource and identity policies template.yaml writes, following
IAM's documented logic for the operators the template uses
(https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html,
``reference_policies_elements_condition_operators.html``): an explicit Deny wins; keys of one
operator are ANDed and the values of one key ORed; a key missing from the request satisfies
a negated operator (``ArnNotEquals``) and fails a positive one; within one account an Allow
in either the resource's policy or the caller's identity policy suffices.

Statements come from the template with their intrinsic functions resolved by
:func:`resolve` in a model of the stack (account, region, the ARNs ``!GetAtt`` gives).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

ACCOUNT = "123456789012"
REGION = "us-east-1"
PARTITION = "aws"

NO_VALUE = object()


def resolve(
    value: Any,
    parameters: Mapping[str, str | list[str]],
    conditions: Mapping[str, bool],
    arn: Callable[[str], str],
) -> Any:
    """Intrinsic functions a policy uses, resolved; ``!Ref AWS::NoValue`` drops out.

    ``arn(logical_id)`` is what ``!GetAtt X.Arn`` gives; ``!Ref X`` of a resource is its
    logical id unless ``parameters`` names it."""
    if isinstance(value, list):
        resolved = [resolve(v, parameters, conditions, arn) for v in value]
        return [v for v in resolved if v is not NO_VALUE]
    if isinstance(value, dict):
        if "Fn::GetAtt" in value:
            logical_id, attribute = value["Fn::GetAtt"]
            assert attribute == "Arn"
            return arn(logical_id)
        if "Ref" in value:
            name = value["Ref"]
            if name == "AWS::NoValue":
                return NO_VALUE
            return _pseudo(name, parameters)
        if "Fn::If" in value:
            condition, then, otherwise = value["Fn::If"]
            chosen = then if conditions[condition] else otherwise
            return resolve(chosen, parameters, conditions, arn)
        if "Fn::Sub" in value:
            text = value["Fn::Sub"]
            assert isinstance(text, str), "only the one-argument form of Fn::Sub"
            return re.sub(r"\$\{([^}]+)\}", lambda m: str(_pseudo(m[1], parameters)), text)
        return {k: resolve(v, parameters, conditions, arn) for k, v in value.items()}
    return value


def _pseudo(name: str, parameters: Mapping[str, str | list[str]]) -> str | list[str]:
    pseudo = {"AWS::AccountId": ACCOUNT, "AWS::Region": REGION, "AWS::Partition": PARTITION}
    if name in pseudo:
        return pseudo[name]
    return parameters.get(name, name)


@dataclass(frozen=True)
class Request:
    """One API call on one resource, as IAM sees it."""

    action: str
    resource: str
    # {"Service": ...} or {"AWS": arn}
    principal: dict[str, str]
    context: dict[str, str] = field(default_factory=dict)
    # Whether the caller's own IAM policy allows the call (same account).
    identity_allows: bool = False


def values(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


_NEGATED = ("ArnNotEquals", "ArnNotLike", "StringNotEquals", "StringNotLike")


def operator_holds(operator: str, keys: dict[str, Any], context: Mapping[str, str]) -> bool:
    negated = operator in _NEGATED
    for key, wanted in keys.items():
        present = context.get(key)
        if present is None:
            holds = negated
        elif operator in ("ArnEquals", "ArnLike", "ArnNotEquals", "ArnNotLike"):
            matched = any(fnmatch.fnmatchcase(present, v) for v in values(wanted))
            holds = not matched if negated else matched
        elif operator in ("StringEquals", "StringNotEquals", "Bool"):
            matched = present in values(wanted)
            holds = not matched if negated else matched
        else:
            raise AssertionError(f"the evaluator does not know {operator}: teach it")
        if not holds:
            return False
    return True


def applies(statement: dict[str, Any], request: Request) -> bool:
    if not any(fnmatch.fnmatchcase(request.action, a) for a in values(statement["Action"])):
        return False
    if "Resource" in statement and not any(
        fnmatch.fnmatchcase(request.resource, r) for r in values(statement["Resource"])
    ):
        return False
    principal = statement.get("Principal")
    if (
        principal is not None
        and principal != "*"
        and not any(
            who in values(principal.get(kind, [])) for kind, who in request.principal.items()
        )
    ):
        return False
    conditions = statement.get("Condition", {})
    return all(operator_holds(op, keys, request.context) for op, keys in conditions.items())


def allowed(request: Request, statements: list[dict[str, Any]]) -> bool:
    """Whether ``request`` is allowed, ``statements`` being every policy that applies (the
    resource's, or an identity's when ``identity_allows`` is not modelled separately)."""
    applying = [s for s in statements if applies(s, request)]
    if any(s["Effect"] == "Deny" for s in applying):
        return False
    return request.identity_allows or any(s["Effect"] == "Allow" for s in applying)
