"""kubemu.celfunctions: the functions Kubernetes' CEL has and cel-python lacks, checked
against what the Go functions they mirror return, through the CEL the rules are written in."""

from __future__ import annotations

from typing import Any

import pytest
from celpy import celtypes
from celpy.adapter import json_to_cel
from celpy.evaluation import CELEvalError

from kubemu import celrules


def _eval(expression: str, value: Any = None) -> Any:
    """``expression`` compiled as a rule is, evaluated with ``self`` bound to ``value``."""
    program = celrules._program("test.yaml", "", expression).program
    try:
        return program.evaluate({"self": json_to_cel(value)})
    except CELEvalError as error:
        return error


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        # cel-go ext/strings.go stringSplit: strings.Split.
        ("'al2023@latest'.split('@')", ["al2023", "latest"]),
        ("'windows2025'.split('@')", ["windows2025"]),
        ("'a@b@c'.split('@')", ["a", "b", "c"]),
        ("''.split('@')", [""]),
        ("'abc'.split('')", ["a", "b", "c"]),
        # stringSplitN: strings.SplitN (n < 0 all, 0 none, else at most n parts).
        ("'a@b@c'.split('@', 2)", ["a", "b@c"]),
        ("'a@b@c'.split('@', 0)", []),
        ("'a@b@c'.split('@', -1)", ["a", "b", "c"]),
        ("'abc'.split('', 2)", ["a", "bc"]),
        # strings.SplitN edge cases: n == 1 the whole string, n < -1 as -1, explode("", n).
        ("'a@b'.split('@', 1)", ["a@b"]),
        ("'abc'.split('', 1)", ["abc"]),
        ("'a@b'.split('@', -5)", ["a", "b"]),
        ("''.split('')", []),
        ("''.split('', 3)", []),
        ("'a@b'.split('@', 9)", ["a", "b"]),
    ],
)
def test_split_as_go_strings_split(expression: str, expected: list[str]) -> None:
    assert _eval(expression) == celtypes.ListType(celtypes.StringType(s) for s in expected)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("karpenter.sh/nodepool", "karpenter.sh"),
        ("karpenter.sh", "karpenter.sh"),  # no '/': the whole key is its domain
        ("/x", ""),  # no match: "" (regexp.FindString)
    ],
)
def test_find_returns_the_first_match_or_empty(text: str, expected: str) -> None:
    """k8s.io/apiserver/pkg/cel/library/regex.go ``find``, as the Karpenter CRDs use it."""
    assert _eval("self.find('^([^/]+)')", text) == celtypes.StringType(expected)


def test_find_with_a_bad_regex_is_an_evaluation_error() -> None:
    """regex.go ``find``: ``types.NewErr("Illegal regex: %v", err.Error())``."""
    found = _eval("self.find(self)", "(")
    assert isinstance(found, CELEvalError)
    assert str(found.args[0]).startswith("Illegal regex: ")


@pytest.mark.parametrize(("text", "expected"), [("10", 10), ("+7", 7), ("-3", -3)])
def test_int_of_a_string_parses_as_go_strconv(text: str, expected: int) -> None:
    assert _eval("int(self)", text) == celtypes.IntType(expected)


@pytest.mark.parametrize("text", [" 5", "1_0", "5.0", "", "9223372036854775808"])
def test_int_of_what_go_does_not_parse_is_an_evaluation_error(text: str) -> None:
    """cel-go String.ConvertToType(IntType): strconv.ParseInt(s, 10, 64), no spaces, no
    underscores, within int64 (Python's int() takes the first two); the error in cel-go's
    words, ``type conversion error from 'string' to 'int'``."""
    found = _eval("int(self)", text)
    assert isinstance(found, CELEvalError)
    assert found.args[0] == "type conversion error from 'string' to 'int'"


def test_int_of_other_types_is_celpys_own() -> None:
    assert _eval("int(self)", 2.7) == celtypes.IntType(2)
