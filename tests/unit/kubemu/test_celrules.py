"""kubemu.celrules: the CRDs' CEL rules through cel-python, answered as
k8s.io/apiextensions-apiserver ``pkg/apiserver/schema/cel/validation.go`` (1.31) answers."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest

from kubemu import celprograms, celrules, ec2nodeclass, karpenter
from kubemu.builders import nodeclaim
from kubemu.resources import NODECLAIMS, NODEPOOLS, ResourceType
from tests.support import cyaml

ROOT = Path(__file__).resolve().parents[3]


def _nodes() -> dict[str, celrules.Node | None]:
    return {
        "nodeclaims": karpenter.rules(NODECLAIMS),
        "nodepools": karpenter.rules(NODEPOOLS),
        "ec2nodeclasses": ec2nodeclass.rules(),
    }


def test_every_rule_of_the_upstream_crds_compiles() -> None:
    """74 rules (10 NodeClaim, 20 NodePool, 44 EC2NodeClass), none with a compile error:
    ``split`` and ``find``, which celpy lacks, included."""
    counts = {name: len(list(celrules.rules(node))) for name, node in _nodes().items()}
    assert counts == {"nodeclaims": 10, "nodepools": 20, "ec2nodeclasses": 44}
    for node in _nodes().values():
        assert [r.text for r in celrules.rules(node) if r.error is not None] == []


def ec2_node_classes() -> list[dict[str, Any]]:
    """Two valid EC2NodeClasses between them carrying every field a rule sits on."""
    every_field = {
        "role": "KarpenterNodeRole-fleet",
        "amiFamily": "Windows2022",
        "amiSelectorTerms": [{"alias": "windows2022@latest"}],
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "fleet"}}],
        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "fleet"}}],
        "capacityReservationSelectorTerms": [{"tags": {"team": "a"}}],
        "tags": {"team": "a"},
        "blockDeviceMappings": [
            {"deviceName": "/dev/xvda", "rootVolume": True, "ebs": {"volumeSize": "20Gi"}}
        ],
        "connectionTracking": {"tcpEstablishedTimeout": 60},
        "networkInterfaces": [
            {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"}
        ],
        "placementGroupSelector": {"name": "pg"},
    }
    the_others = {
        "instanceProfile": "KarpenterNodeInstanceProfile",
        "amiFamily": "AL2023",
        "amiSelectorTerms": [{"tags": {"team": "a"}}],
        "subnetSelectorTerms": [{"id": "subnet-0123456789abcdef0"}],
        "securityGroupSelectorTerms": [{"id": "sg-0123456789abcdef0"}],
    }
    return [
        {
            "apiVersion": "karpenter.k8s.aws/v1",
            "kind": "EC2NodeClass",
            "metadata": {"name": n},
            "spec": s,
        }
        for n, s in (("every-field", every_field), ("the-others", the_others))
    ]


def _karpenter_objects() -> list[tuple[ResourceType, dict[str, Any]]]:
    """The sample cluster's NodePools and NodeClaims, and the builders' NodeClaim."""
    found: list[tuple[ResourceType, dict[str, Any]]] = [(NODECLAIMS, nodeclaim("c1"))]
    for document in cyaml.safe_load_all((ROOT / "events/cluster.yaml").read_text()):
        for item in (document or {}).get("items", [document]):
            if isinstance(item, dict) and item.get("kind") in ("NodePool", "NodeClaim"):
                found.append((NODEPOOLS if item["kind"] == "NodePool" else NODECLAIMS, item))
    return found


def test_every_rule_runs_through_celpy_on_valid_objects_without_an_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every rule of the three CRDs evaluated at least once over valid objects (created, then
    updated to themselves for the transition rules), each evaluation true: no evaluation
    error (the issue's harness had 2 errors on ``split``), no false refusal."""
    evaluated: dict[int, int] = {}
    evaluate = celrules._evaluate

    def counting(node: Any, rule: Any, value: Any, old: Any, path: str) -> Any:
        evaluated[id(rule)] = evaluated.get(id(rule), 0) + 1
        found = evaluate(node, rule, value, old, path)
        assert found is None, (rule.text, found)
        return found

    monkeypatch.setattr(celrules, "_evaluate", counting)
    for body in ec2_node_classes():
        ec2nodeclass.check(copy.deepcopy(body), "Strict")
    for resource, obj in _karpenter_objects():
        body = copy.deepcopy(obj)
        karpenter.check(resource, body, "Ignore")
        karpenter.check_update(resource, obj, body)
    every_rule = [r for node in _nodes().values() for r in celrules.rules(node)]
    assert [r.text for r in every_rule if id(r) not in evaluated] == []
    assert sum(evaluated.values()) > len(every_rule)


def _claim_node() -> celrules.Node | None:
    return karpenter.rules(NODECLAIMS)


def test_a_transition_rule_runs_on_update_only() -> None:
    """NodeClaim ``spec``: ``self == oldSelf`` (message "spec is immutable"). On a create
    there is no old value and the rule does not run (validateExpressions: ``compiled.
    UsesOldSelf && oldObj == nil`` -> continue)."""
    claim = {"spec": nodeclaim("c1")["spec"]}
    changed = copy.deepcopy(claim)
    changed["spec"]["requirements"][0]["values"] = ["spot"]
    assert celrules.first_violation(_claim_node(), changed) is None
    assert celrules.first_transition_violation(_claim_node(), claim, claim) is None
    found = celrules.first_transition_violation(_claim_node(), changed, claim)
    assert found == celrules.Violation("spec", 'Invalid value: "object": spec is immutable')


def _schema(rules: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {"a": {"type": "string"}, "n": {"type": "integer"}},
                "x-kubernetes-validations": rules,
                **extra,
            }
        },
    }


def _first(rules: list[dict[str, Any]], spec: dict[str, Any]) -> celrules.Violation | None:
    return celrules.first_violation(
        celrules.compile_schema("test.yaml", _schema(rules)), {"spec": spec}
    )


def test_message_message_expression_reason_and_field_path_as_the_server_reports_them() -> None:
    """``ruleMessageOrDefault``, ``evalMessageExpression`` (its value when a one-line
    string, else the message), ``fieldErrorForReason``, the rule's ``fieldPath``."""
    assert _first([{"rule": "self.n > 1"}], {"n": 1}) == celrules.Violation(
        "spec", 'Invalid value: "object": failed rule: self.n > 1'
    )
    assert _first(
        [{"rule": "self.n > 1", "message": "m", "messageExpression": "'n is ' + string(self.n)"}],
        {"n": 1},
    ) == celrules.Violation("spec", 'Invalid value: "object": n is 1')
    assert _first(
        [{"rule": "self.n > 1", "message": "m", "messageExpression": "self.missing"}], {"n": 1}
    ) == celrules.Violation("spec", 'Invalid value: "object": m')
    assert _first(
        [
            {
                "rule": "self.n > 1",
                "message": "m",
                "reason": "FieldValueForbidden",
                "fieldPath": ".n",
            }
        ],
        {"n": 1},
    ) == celrules.Violation("spec.n", "Forbidden: m")
    assert _first(
        [{"rule": "self.n > 1", "message": "m", "reason": "FieldValueRequired"}], {"n": 1}
    ) == celrules.Violation("spec", "Required value: m")


def test_an_evaluation_error_is_reported_as_the_server_reports_it() -> None:
    """``<error> evaluating rule: <message or rule>``: here the NodeClaim CRD's
    ``int(x.values[0])`` on a value that is no integer."""
    claim = {"spec": nodeclaim("c1")["spec"]}
    claim["spec"]["requirements"] = [{"key": "k", "operator": "Gt", "values": ["ten"]}]
    found = celrules.first_violation(_claim_node(), claim)
    assert found is not None
    assert found.path == "spec.requirements"
    assert found.detail.startswith('Invalid value: "array": ')
    assert found.detail.endswith(
        " evaluating rule: requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a"
        " single positive integer value"
    )


@pytest.mark.parametrize(
    ("rule", "why"),
    [
        ("self.n > ", "rule 'self.n > ': "),
        ("self.a.lowerAscii() == 'a'", "calls lowerAscii, which kubemu's CEL does not provide"),
    ],
)
def test_a_rule_the_library_cannot_compile_is_a_clear_error_naming_crd_path_and_rule(
    rule: str, why: str
) -> None:
    """As the server's ``rule compile error: ...`` on every write (validation.go), with the
    CRD file and the schema path named; never a traceback, the other rules still run."""
    node = celrules.compile_schema("test.yaml", _schema([{"rule": rule}]))
    found = celrules.first_violation(node, {"spec": {"a": "x"}})
    assert found is not None
    assert found.path == "spec"
    assert found.detail.startswith(
        f'Invalid value: "object": rule compile error: test.yaml: spec: rule {rule!r}'
    )
    assert why in found.detail
    assert "Traceback" not in found.detail


def test_optional_old_self_is_refused_clearly() -> None:
    node = celrules.compile_schema(
        "test.yaml", _schema([{"rule": "oldSelf.hasValue()", "optionalOldSelf": True}])
    )
    found = celrules.first_violation(node, {"spec": {}})
    assert found is not None
    assert "optionalOldSelf is not supported by kubemu" in found.detail


def _listed(list_type: str) -> celrules.Node | None:
    item = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "size": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "self.size >= oldSelf.size", "message": "shrunk"}],
    }
    schema = {
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "items": item,
                "x-kubernetes-list-type": list_type,
                "x-kubernetes-list-map-keys": ["name"],
            }
        },
    }
    return celrules.compile_schema("test.yaml", schema)


def test_list_items_correlate_by_their_map_keys_only_in_a_map_list() -> None:
    """``validateArray``/``makeMapList``: an item's old value is the old item with the same
    keys, in a ``x-kubernetes-list-type: map`` list only; other lists' items have none."""
    old = {"items": [{"name": "a", "size": 2}, {"name": "b", "size": 2}]}
    new = {"items": [{"name": "b", "size": 1}, {"name": "c", "size": 0}]}
    found = celrules.first_transition_violation(_listed("map"), new, old)
    assert found == celrules.Violation("items[0]", 'Invalid value: "object": shrunk')
    assert celrules.first_transition_violation(_listed("atomic"), new, old) is None


def test_a_null_value_is_not_validated() -> None:
    """validateExpressions: "We only validate non-null values"."""
    assert _first([{"rule": "self.n > 1"}], None) is None  # type: ignore[arg-type]


def test_an_outcome_is_remembered_per_rule_and_values(monkeypatch: pytest.MonkeyPatch) -> None:
    """celpy runs a rule once per distinct (rule, self, oldSelf); the remembered answer is
    the same answer (a refusal stays a refusal), and the memory is bounded."""
    runs: list[str] = []
    outcome = celprograms.outcome

    def counting(program: Any, value: Any, old: Any, with_old: bool) -> bool | str:
        runs.append(json.dumps(value))
        return outcome(program, value, old, with_old)

    monkeypatch.setattr(celprograms, "outcome", counting)
    monkeypatch.setattr(celrules, "_OUTCOMES", {})
    rules = [{"rule": "self.n > 1", "message": "small"}]
    assert _first(rules, {"n": 1}) == _first(rules, {"n": 1})
    assert _first(rules, {"n": 1}) is not None
    assert runs == ['{"n": 1}']
    assert _first(rules, {"n": 2}) is None
    assert runs == ['{"n": 1}', '{"n": 2}']
    monkeypatch.setattr(celrules, "_MAX_OUTCOMES", 2)
    _first(rules, {"n": 3})
    assert len(celrules._OUTCOMES) == 1  # full: emptied before the third was kept


_ITEMS: list[Any] = [
    {"key": "k", "operator": "In", "values": ["a"]},
    {"key": "k", "operator": "In"},  # no values: x.values errs
    {"key": "k", "operator": "In", "values": []},
    {"key": "k", "operator": "Gt", "values": ["5"]},
    {"key": "k", "operator": "Gt", "values": ["five"]},  # int() errs
    {"key": "k", "operator": "In", "values": ["a"], "minValues": 2},
    {"key": "k", "operator": "Exists"},
    {"nodes": "1", "schedule": "@daily", "duration": "1h"},
    {"nodes": "1", "schedule": "@daily"},
    {"tags": {"a": "b"}},
    {"id": "x", "tags": {"a": "b"}},
    {"alias": "al2023@latest"},
    {"name": "n"},
]


def _kind(outcome: bool | str) -> bool | str:
    return outcome if isinstance(outcome, bool) else "error"


def test_an_all_rule_remembered_item_by_item_answers_as_the_whole_rule(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``self.all(x, body)`` answered item by item (``celprograms._per_item``): for every
    such rule of the three CRDs and lists mixing passing, failing and erring items, the
    answer (false if one is false, else an error if one errs, else true) is celpy's answer
    for the whole rule, error for error."""
    chosen = random.Random(40)
    lists: list[list[Any]] = [[]]
    lists += [chosen.sample(_ITEMS, chosen.randint(1, 3)) for _ in range(15)]
    split = {r.text: r for node in _nodes().values() for r in celrules.rules(node) if r.per_item}
    assert len(split) >= 10
    for rule in split.values():
        for value in lists:
            monkeypatch.setattr(celrules, "_OUTCOMES", {})
            whole = celprograms.outcome(rule.program, value, None, False)
            assert _kind(celrules._outcome(rule, value, None)) == _kind(whole), (rule.text, value)


def test_an_integer_beyond_int64_is_an_evaluation_error_not_a_traceback() -> None:
    """JSON carries 2**70; celpy's IntType raises ValueError("overflow") on it (cel-go has
    no such int). validateExpressions reports an evaluation error as ``<error> evaluating
    rule: <message or rule>``; kubemu must too, not let the ValueError drop the connection."""
    found = _first([{"rule": "self.n >= 0", "message": "negative"}], {"n": 2**70})
    assert found == celrules.Violation(
        "spec", 'Invalid value: "object": integer overflow evaluating rule: negative'
    )


def test_a_macro_over_a_value_of_the_wrong_type_is_an_overload_error() -> None:
    """validateExpressions: an error starting "no such overload" is ``'<error>': call
    arguments did not match a supported operator, function or macro signature for rule:
    <rule>``. celpy raises TypeError for ``all`` over a number; it is that error."""
    node = celrules.compile_schema(
        "test.yaml",
        {"type": "object", "x-kubernetes-validations": [{"rule": "self.a.all(x, x > 0)"}]},
    )
    found = celrules.first_violation(node, {"a": 5})
    assert found == celrules.Violation(
        "",
        "Invalid value: \"object\": 'no such overload': call arguments did not match a"
        " supported operator, function or macro signature for rule: self.a.all(x, x > 0)",
    )


def test_a_transition_rule_is_remembered_by_both_values(monkeypatch: pytest.MonkeyPatch) -> None:
    """validateExpressions evaluates ``self == oldSelf`` on each (self, oldSelf): the same
    self with another old value is another outcome, never the remembered one; values that
    differ only in type (1, 1.0, true, "1") or key order are told apart or not as CEL does."""
    monkeypatch.setattr(celrules, "_OUTCOMES", {})
    node = celrules.compile_schema(
        "test.yaml",
        {"type": "object", "x-kubernetes-validations": [{"rule": "self == oldSelf"}]},
    )
    same, other = {"a": 1, "b": [1, 2]}, {"a": 1, "b": [2, 1]}
    for _ in range(2):
        assert celrules.first_transition_violation(node, same, dict(reversed(same.items()))) is None
        assert celrules.first_transition_violation(node, same, other) is not None
        assert celrules.first_transition_violation(node, other, other) is None
    for a, b in [(1, 1.5), (1, True), (1, "1"), ("", None), ([], {})]:
        assert celrules._key({"a": a}) != celrules._key({"a": b})


def test_rules_evaluated_from_many_threads_answer_as_one_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """kubemu serves each request on its own thread (ThreadingHTTPServer): celpy's runner
    makes a new Evaluator per call, the outcome memory is a dict emptied when full (here
    every few entries); eight threads over the same and different values give exactly the
    answers of one thread."""
    import threading

    rules = [{"rule": "self.n > 1 && self.a.startsWith('x')", "message": "m"}]
    node = celrules.compile_schema("test.yaml", _schema(rules))
    values = [{"spec": {"n": n % 4, "a": "x" if n % 3 else "y"}} for n in range(60)]
    expected = [celrules.first_violation(node, v) for v in values]
    monkeypatch.setattr(celrules, "_MAX_OUTCOMES", 5)
    monkeypatch.setattr(celrules, "_OUTCOMES", {})
    answers: dict[int, list[Any]] = {}

    def run(seed: int) -> None:
        order = random.Random(seed).sample(range(len(values)), len(values))
        found = {i: celrules.first_violation(node, values[i]) for i in order}
        answers[seed] = [found[i] for i in range(len(values))]

    threads = [threading.Thread(target=run, args=(seed,)) for seed in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert list(answers.values()) == [expected] * 8


def test_a_message_expression_beyond_5_kib_gives_the_message() -> None:
    """evalMessageExpression: a trimmed value longer than MaxEvaluatedMessageExpressionSizeBytes
    (5 * 1024, Go's len: UTF-8 bytes) is an error ("messageExpression beyond allowable
    length"), logged; the detail falls back to ``message``."""
    rules = [{"rule": "self.n > 1", "message": "m", "messageExpression": "self.a"}]
    at_limit, beyond = "x" * 5 * 1024, "é" * (5 * 1024 // 2 + 1)  # 5122 bytes, 2561 chars
    assert _first(rules, {"n": 1, "a": f" {at_limit} "}) == celrules.Violation(
        "spec", f'Invalid value: "object": {at_limit}'
    )
    assert _first(rules, {"n": 1, "a": beyond}) == celrules.Violation(
        "spec", 'Invalid value: "object": m'
    )


def test_a_transition_rule_does_not_run_where_the_old_object_lacks_the_field() -> None:
    """validateExpressions: ``compiled.UsesOldSelf && oldObj == nil`` -> continue. An old
    object without the field, or with a value of another type above it (validate:
    ``oldMap, _ := oldObj.(map[string]interface{})`` is nil), gives no old value."""
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "n": {
                        "type": "integer",
                        "x-kubernetes-validations": [
                            {"rule": "self >= oldSelf", "message": "lower"}
                        ],
                    }
                },
            }
        },
    }
    node = celrules.compile_schema("test.yaml", schema)
    new = {"spec": {"n": 1}}
    olds: list[dict[str, Any]] = [
        {"spec": {}},
        {},
        {"spec": None},
        {"spec": "x"},
        {"spec": [{"n": 5}]},
    ]
    for old in olds:
        assert celrules.first_transition_violation(node, new, old) is None, old
    assert celrules.first_transition_violation(node, new, {"spec": {"n": 2}}) == (
        celrules.Violation("spec.n", 'Invalid value: "integer": lower')
    )
