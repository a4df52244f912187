"""cel-python (``celpy``) bound for kubemu: rule texts compiled to programs, programs run on
JSON-like values. ``celrules`` imports this module on the first rule it compiles: celpy and
lark take about 0.1 s to import, which a process writing no custom resource does not pay.
"""

from __future__ import annotations

import functools
import threading
from functools import cache
from typing import Any

import celpy
import lark
from celpy import celparser, celtypes
from celpy.adapter import json_to_cel
from celpy.celparser import CELParseError
from celpy.evaluation import CELEvalError

from .celfunctions import FUNCTIONS, KNOWN

# Transition rules: the variable the server binds to the value before the update.
OLD_SELF = "oldSelf"
_PARSER_LOCK = threading.Lock()


@cache
def _environment() -> celpy.Environment:
    """cel-python's environment. Its parser is lark's LALR parser of celpy's grammar, about
    0.7 s to build; built with lark's ``cache`` option (the tables kept in a file in the
    temporary directory, keyed by the grammar, the options and lark's version) it loads in
    about 0.04 s. celpy builds it once (``CELParser.CEL_PARSER``, its singleton) with its
    own options; only ``cache`` is added, for that one call."""
    with _PARSER_LOCK:
        if celparser.CELParser.CEL_PARSER is None:
            build = lark.Lark  # what celparser calls, by its name there
            setattr(celparser, "Lark", functools.partial(build, cache=True))  # noqa: B010
            try:
                celparser.CELParser()
            finally:
                setattr(celparser, "Lark", build)  # noqa: B010
        return celpy.Environment()


@cache
def compiled(text: str) -> tuple[Any, frozenset[str], bool] | str:
    """(program, the functions it calls that kubemu's CEL lacks, whether it names
    ``oldSelf``) of a rule text, or the parser's error in one line."""
    try:
        tree = _environment().compile(text)
    except (CELParseError, lark.exceptions.LarkError) as error:
        return " ".join(str(error).split())
    called, uses_old_self = set(), False
    for node in tree.iter_subtrees():
        if node.data == "member_dot_arg":
            called.add(str(node.children[1]))
        elif node.data == "ident_arg":
            called.add(str(node.children[0]))
        elif node.data == "ident" and str(node.children[0]) == OLD_SELF:
            uses_old_self = True
    program = _environment().program(tree, functions=FUNCTIONS)
    return program, frozenset(called - KNOWN), uses_old_self


def _activation(value: Any, old: Any, with_old: bool) -> dict[str, Any]:
    """``self`` (and ``oldSelf``) as CEL values."""
    if with_old:
        return {"self": json_to_cel(value), OLD_SELF: json_to_cel(old)}
    return {"self": json_to_cel(value)}


def outcome(program: Any, value: Any, old: Any, with_old: bool) -> bool | str:
    """True, False, or the evaluation error's text."""
    try:
        result = program.evaluate(_activation(value, old, with_old))
    except CELEvalError as error:
        result = error
    if isinstance(result, celtypes.BoolType):
        return bool(result)
    if isinstance(result, CELEvalError) and result.args:
        return str(result.args[0])
    return f"rule gave {result!r}, not a bool"


def text(program: Any, value: Any, old: Any, with_old: bool) -> str | None:
    """A messageExpression's value when it is a string, else None (it failed)."""
    try:
        result = program.evaluate(_activation(value, old, with_old))
    except CELEvalError:
        return None
    return str(result) if isinstance(result, str) else None
