"""cel-python (``celpy``) bound for kubemu: rule texts compiled to programs, programs run on
JSON-like values. ``celrules`` imports this module on the first rule it compiles: celpy and
lark take about 0.1 s to import, which a process writing no custom resource does not pay.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from importlib.metadata import version
from pathlib import Path
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
# The Python errors celpy raises on values it cannot hold or calls it does not check
# (``_answer``): evaluation errors, as cel-go's.
_PYTHON_ERRORS = (TypeError, ValueError, ArithmeticError, RecursionError, LookupError)
_PARSER_LOCK = threading.Lock()


@cache
def _environment() -> celpy.Environment:
    """cel-python's environment. Its parser is lark's LALR parser of celpy's grammar, about
    0.7 s to build; kept by lark in a cache file it loads in about 0.04 s. celpy builds it
    once (``CELParser.CEL_PARSER``, its singleton) with its own options; only ``cache`` is
    added, for that one call, and only with a file in a private directory (``_cache_file``)."""
    with _PARSER_LOCK:
        if celparser.CELParser.CEL_PARSER is None:
            final = _cache_file()
            build = lark.Lark  # what celparser calls, by its name there
            cache = False if final is None else str(final)
            setattr(celparser, "Lark", functools.partial(build, cache=cache))  # noqa: B010
            try:
                with _exclusive(final):
                    celparser.CELParser()
            finally:
                setattr(celparser, "Lark", build)  # noqa: B010
        return celpy.Environment()


@contextlib.contextmanager
def _exclusive(final: Path | None) -> Iterator[None]:
    """Held by one process at a time while it builds or loads the parser: lark writes its
    cache file in place, so a process starting while another writes it would read half a
    file (and rebuild, and write it again). The second waits (0.7 s at most) and loads."""
    try:
        lock = None if final is None else open(final.with_name(final.name + ".lock"), "a")  # noqa: SIM115
    except OSError:  # e.g. a read-only cache directory; lark itself loads and saves softly
        lock = None
    if lock is None:
        yield
        return
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _cache_file() -> Path | None:
    """Where lark keeps the parser, or None (no cache). lark loads its cache file with
    pickle, which runs any code a file holds: its default place, a fixed name in the shared
    temporary directory, lets anyone who can write there run code as kubemu's user (and a
    file another process is writing is read half-written). The file is kept instead in the
    user's cache directory, in a ``kubemu`` directory only the user may write, named by
    the versions of lark, cel-python and Python that wrote it."""
    home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    directory = Path(home) / "kubemu"
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        status = directory.stat()
    except OSError:
        return None
    if status.st_uid != os.getuid() or status.st_mode & 0o022:
        return None  # another user's, or others may write in it: not trusted
    python = "{}.{}".format(*sys.version_info[:2])
    versions = f"lark-{lark.__version__}-celpy-{version('cel-python')}-py{python}"
    return directory / f"celpy-parser-{versions}.lark"


@dataclass(frozen=True)
class Compiled:
    program: Any  # celpy's Runner of the whole rule
    unknown: frozenset[str]  # the functions it calls that kubemu's CEL lacks
    uses_old_self: bool
    # For a rule ``self.all(<var>, <body>)`` whose body names neither self nor oldSelf:
    # (var, the body's Runner), so that each item's outcome can be remembered on its own.
    per_item: tuple[str, Any] | None


@cache
def compiled(text: str) -> Compiled | str:
    """A rule text compiled, or the parser's error in one line."""
    try:
        tree = _environment().compile(text)
    except (CELParseError, lark.exceptions.LarkError) as error:
        return " ".join(str(error).split())
    called, names = set(), _identifiers(tree)
    for node in tree.iter_subtrees():
        if node.data == "member_dot_arg":
            called.add(str(node.children[1]))
        elif node.data == "ident_arg":
            called.add(str(node.children[0]))
    program = _environment().program(tree, functions=FUNCTIONS)
    unknown = frozenset(called - KNOWN)
    return Compiled(program, unknown, OLD_SELF in names, _per_item(tree))


def _identifiers(tree: lark.Tree[Any]) -> set[str]:
    return {str(n.children[0]) for n in tree.iter_subtrees() if n.data == "ident"}


def _single(tree: Any, until: str) -> Any:
    """Down the chain of one-child nodes (expr -> conditionalor -> ... -> member) to the
    first ``until`` node, or None."""
    while isinstance(tree, lark.Tree) and tree.data != until:
        if len(tree.children) != 1:
            return None
        tree = tree.children[0]
    return tree


def _per_item(tree: lark.Tree[Any]) -> tuple[str, Any] | None:
    """(var, body Runner) when the rule is ``self.all(var, body)`` with a body that names
    neither ``self`` nor ``oldSelf``: then the rule is, by the CEL specification of ``all``,
    false when the body is false for an item, else an error when it errs for one, else true
    (``every``), the items' outcomes independent of one another."""
    call = _single(tree, "member_dot_arg")
    if call is None or str(call.children[1]) != "all" or len(call.children) < 3:
        return None
    target = _single(call.children[0], "ident")
    arguments = call.children[2].children
    var = _single(arguments[0], "ident") if len(arguments) == 2 else None
    if target is None or str(target.children[0]) != "self" or var is None:
        return None
    body = arguments[1]
    if _identifiers(body) & {"self", OLD_SELF}:
        return None
    return str(var.children[0]), _environment().program(body, functions=FUNCTIONS)


def _activation(value: Any, old: Any, with_old: bool) -> dict[str, Any]:
    """``self`` (and ``oldSelf``) as CEL values."""
    if with_old:
        return {"self": json_to_cel(value), OLD_SELF: json_to_cel(old)}
    return {"self": json_to_cel(value)}


def outcome(program: Any, value: Any, old: Any, with_old: bool) -> bool | str:
    """True, False, or the evaluation error's text."""
    return _answer(program, lambda: _activation(value, old, with_old))


def item_outcome(per_item: tuple[str, Any], item: Any) -> bool | str:
    """The outcome of a ``self.all(var, body)`` rule's body for one item."""
    var, program = per_item
    return _answer(program, lambda: {var: json_to_cel(item)})


def _answer(program: Any, activation: Callable[[], dict[str, Any]]) -> bool | str:
    """celpy's result as an outcome. celpy raises, besides CELEvalError, Python's own errors
    on values it cannot hold or calls it does not check: ValueError("overflow") for an
    integer beyond int64 (JSON allows it; cel-go has no such value), TypeError for a macro
    over a non-list. Each is an evaluation error, answered 422 as the server answers its
    evaluation errors, never a traceback that drops the client's connection."""
    try:
        result = program.evaluate(activation())
    except CELEvalError as error:
        result = error
    except _PYTHON_ERRORS as error:
        return _python_error(error)
    if isinstance(result, celtypes.BoolType):
        return bool(result)
    if isinstance(result, CELEvalError) and result.args:
        return str(result.args[0])
    return f"rule gave {result!r}, not a bool"


def _python_error(error: Exception) -> str:
    """A Python error raised inside celpy, in the words of cel-go's nearest error."""
    if isinstance(error, ValueError) and "overflow" in str(error):
        return "integer overflow"
    if isinstance(error, TypeError):
        return "no such overload"
    return f"{type(error).__name__}: {error}"


def text(program: Any, value: Any, old: Any, with_old: bool) -> str | None:
    """A messageExpression's value when it is a string, else None (it failed)."""
    try:
        result = program.evaluate(_activation(value, old, with_old))
    except (CELEvalError, *_PYTHON_ERRORS):
        return None
    return str(result) if isinstance(result, str) else None
