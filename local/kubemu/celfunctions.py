"""The CEL functions Kubernetes adds to the language that cel-python lacks.

The API server compiles CRD rules with cel-go's standard library plus Kubernetes' libraries
(k8s.io/apiserver/pkg/cel/library) and cel-go's extensions (k8s.io/apiserver/pkg/cel/environment
``base.go``: ``ext.Strings``, ``library.Regex``...). cel-python implements the standard
library and the comprehension macros; what the vendored Karpenter CRDs call beyond it is here,
each function written after the Go one it mirrors. A rule calling a function neither
provides is refused when its CRD loads (``celrules.CelRuleError``), never evaluated wrong.
"""

from __future__ import annotations

import re
from typing import Any

import re2
from celpy import celtypes
from celpy.evaluation import CELEvalError, base_functions

# cel-go's string-to-int conversion (common/types/string.go, ``String.ConvertToType``) is
# Go's strconv.ParseInt(s, 10, 64): an optional sign and decimal digits, nothing else.
# Python's int() also takes spaces and underscores ("1_0", " 5"), which the server refuses.
_GO_INT = re.compile(r"[+-]?[0-9]+")
_INT64 = (-(2**63), 2**63 - 1)


def cel_int(value: Any) -> Any:
    """``int(x)``: cel-python's conversion, but strings parsed as cel-go parses them."""
    if isinstance(value, celtypes.StringType):
        if not _GO_INT.fullmatch(value) or not _INT64[0] <= int(value) <= _INT64[1]:
            # cel-go's words: String.ConvertToType ends ``NewErr("type conversion error
            # from '%s' to '%s'", StringType, typeVal)`` whatever ParseInt said.
            return CELEvalError(
                "type conversion error from 'string' to 'int'", ValueError, (str(value),)
            )
        return celtypes.IntType(int(value))
    return celtypes.IntType(value)


def find(text: celtypes.StringType, pattern: celtypes.StringType) -> Any:
    """``<string>.find(<regex>)``: the first match, or "" (k8s.io/apiserver/pkg/cel/library
    regex.go ``find``: ``regexp.FindString``). RE2, as Go's regexp, as cel-python's matches."""
    try:
        found = re2.search(pattern, text)
    except re2.error as error:
        # regex.go find: ``types.NewErr("Illegal regex: %v", err.Error())`` (RE2's own
        # words for why differ from Go regexp's).
        return CELEvalError(f"Illegal regex: {error}", type(error), error.args)
    return celtypes.StringType(found.group(0) if found else "")


def split(text: celtypes.StringType, separator: celtypes.StringType, limit: Any = None) -> Any:
    """``<string>.split(<sep>)`` and ``.split(<sep>, <n>)`` (cel-go ext/strings.go
    ``stringSplit``/``stringSplitN``: Go's strings.Split and SplitN). An empty separator
    splits between characters; ``n`` < 0 means no limit, 0 an empty list, else at most n parts."""
    count = -1 if limit is None else int(limit)
    if count == 0:
        return celtypes.ListType()
    if separator:
        parts = text.split(separator) if count < 0 else text.split(separator, count - 1)
    else:
        chars = list(text)
        parts = (
            chars if count < 0 or count >= len(chars) else [*chars[: count - 1], text[count - 1 :]]
        )
    return celtypes.ListType(celtypes.StringType(part) for part in parts)


# Bound into every rule's program (a name here shadows cel-python's own, as ``int`` does).
FUNCTIONS: dict[str, Any] = {"int": cel_int, "find": find, "split": split}

# The comprehension macros and ``has``/``dyn``, which cel-python expands itself.
MACROS = frozenset({"has", "dyn", "all", "exists", "exists_one", "map", "filter"})

# Every function name a rule may call: a rule calling another is refused when it loads.
KNOWN = frozenset(base_functions) | frozenset(FUNCTIONS) | MACROS
