"""Large YAML cluster files through rapidyaml (ryml, C++), when that cannot change their meaning.

libyaml's event stream alone costs about five times ``json.load`` of the same data, so no
loader built on PyYAML reads a 5,000-node dump in a replay's budget. rapidyaml parses it into
its own tree and emits that tree as JSON, which ``json.loads`` turns into objects in C: the
whole costs about as much as ``json.load``. (yaml-rs, the other maintained fast parser with
wheels, is half as fast and reads YAML 1.2 only, with no way to tell where that differs.)

rapidyaml reads YAML 1.2, and its JSON emitter decides scalar types on its own rules; Lifeboat
reads YAML as Kubernetes and PyYAML's safe loader do, YAML 1.1 (``yes`` is true, ``010`` is 8,
an unquoted timestamp is a datetime). The two differ only on plain (unquoted) scalars that one
of them reads as something other than a string, on tags, and on a few characters. So before
rapidyaml is asked, :func:`_plain_data_only` looks for any of those, cheaply (the whitespace-
separated words of the file, each distinct word checked once; the few suspects then looked up
in place); a plain integer, decimal, ``true``, ``false`` or ``null`` as a value reads the same
in both and is allowed. A file with any suspect, or anything rapidyaml refuses, returns None:
the caller reads it with PyYAML's loader, whose answer (or error, with its line) is the one
given. The check errs towards None: that costs speed, never meaning.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .yamlaliases import expansion_bound
from .yamlaliases import has_alias as has_alias  # re-exported: clusterfile's import

# A plain scalar either reader may take for something other than a string (YAML 1.1's bool,
# null, int, float, timestamp, merge and value patterns; rapidyaml's numbers, true/false/null
# and the inf/nan spellings it rewrites), or more: a superset errs towards PyYAML.
_SUSPECT = re.compile(
    r"(?i:yes|no|true|false|on|off|null)|~|<<|="
    r"|[-+]?\.?(?i:inf|infinity|nan)"
    r"|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])*(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?\.[0-9_]+(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?0[xXbBoO][0-9a-fA-F_]*(?:\.[0-9a-fA-F_]*)?(?:[pP][-+]?[0-9a-fA-F]+)?"
)
# A date, alone or starting a timestamp: YAML 1.1 allows spaces before the time.
_DATE = re.compile(r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt].*)?")
# Values that both read alike: an int, a decimal with digits on both sides of the point
# (YAML 1.1 floats need the point; rapidyaml writes these as they are), and JSON's words.
_SAME_AS_VALUE = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?|true|false|null")
# rapidyaml rewrites inf and nan in keys (even quoted ones) as ".inf" and ".nan".
_NANINF_KEY = re.compile(r"""['"]?[-+]?\.?(?i:inf|infinity|nan)['"]?""")
_FLOW = re.compile(r"[\[\]{},]")
# The words (one a line) worth a closer look: with a flow indicator or a tag, "?" or ":" alone,
# starting with an odd indicator, a suspect (as a key too), a nan or inf key quoted.
_WORD_OF_NOTE = re.compile(
    rf"^(?:[^\n\[\]{{}},!]*[\[\]{{}},!].*|[?:]|[@`%].*|[&*](?![0-9A-Za-z_-]+$).*"
    rf"|['\"][^\n]*['\"]:|(?:{_SUSPECT.pattern}|{_DATE.pattern}):?)$".encode(),
    re.M,
)
# Where a plain scalar ends: the end of a line or a comment, a flow indicator, a colon.
_VALUE_END = r"(?=[ \t\r]*(?:#|$|[,\]}:]))"
_KEY_END = r"(?=[ \t\r,\]}]|$)"
# Characters the readers treat differently: tabs (indentation rules), line breaks PyYAML
# knows and rapidyaml does not, a byte order mark past the start, lone carriage returns,
# and what PyYAML's reader refuses (control characters, surrogates).
_ODD_ASCII = bytes([*range(0x09), 0x09, 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F])
_ODD_TEXT = re.compile(
    "[\t\x85\u2028\u2029\ufeff]|[^\x0a\x0d\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
)
# Where rapidyaml (YAML 1.2) is more lenient than PyYAML: indicators that may not start a
# plain scalar ("@", "`", "%", a flow collection's end), anchor and alias names other than
# letters, digits, "-" and "_".
_ODD_START = "@`&*%]},"
_NAMED_ANCHOR = re.compile(r"[&*][0-9A-Za-z_-]+")
_ANCHOR = re.compile(r"&(?<=[\s\[{,]&)[0-9A-Za-z_-]+")
_SCALAR_START = re.compile(r"(?:^|[-?:,\[{]|&\S+)$")


def plain_data_documents(text: str) -> list[Any] | None:
    """Every document of ``text`` as PyYAML's safe loader gives them (equal, not identical:
    an alias is a copy), or None when rapidyaml is absent, refuses the text, or the text holds
    anything whose meaning it could read differently."""
    ryml = _rapidyaml()
    if ryml is None:
        return None
    body = text[1:] if text.startswith("\ufeff") else text
    data = body.encode()
    if not _plain_data_only(body, data):
        return None
    aliased = has_alias(body)
    if aliased and not _expands_within_limit(body):
        # rapidyaml's resolve() copies what an alias names, so ~1 KB of nested aliases
        # would expand to gigabytes before any check: such a text (or one whose expansion
        # the text alone cannot bound) is left to PyYAML's loader, which shares what an
        # alias names, and read_documents counts its expansion exactly.
        return None
    try:
        with _stderr_silenced():  # rapidyaml prints its parse errors itself; PyYAML reports
            tree = ryml.parse_in_arena(data)
            if aliased:
                tree.resolve()  # bounded above: every alias a copy of its anchor's node
            root = tree.root_id()
            emitted = _json_text(ryml, tree, root, len(data))
        if not emitted:  # nothing but comments
            return []
        parsed = json.loads(emitted)
    except Exception:  # ryml's own exception types, or JSON it should not have written
        return None
    return parsed if tree.is_stream(root) else [parsed]


def _json_text(ryml: Any, tree: Any, root: int, size: int) -> str:
    """The tree from ``root`` as JSON text ("" for nothing but comments), emitted into a buffer
    of about the size it needs: ``emit_json_malloc`` measures the output in a pass of its own
    first and copies it once more (0.19 s against 0.09 s for a 5,000-node dump). A buffer
    too small (expanded aliases) is told the size needed, and the text emitted again."""
    buffer = bytearray(2 * size + 4096)  # JSON's quotes and indentation: 1.7 times the YAML
    try:
        view = ryml.emit_json_in_place(tree, buffer, root)
    except IndexError:
        buffer = bytearray(ryml.compute_json_length(tree, root))
        view = ryml.emit_json_in_place(tree, buffer, root)
    return str(view, "utf-8")


# The most values the documents may hold once every alias is expanded. A 5,000-node dump
# holds about 1.8 million; an alias bomb of ~1 KB holds billions. (Kubernetes' own reader,
# go-yaml, refuses "excessive aliasing" likewise.)
MAX_EXPANDED_NODES = 20_000_000


def _expands_within_limit(text: str) -> bool:
    bound = expansion_bound(text)
    return bound is not None and bound <= MAX_EXPANDED_NODES


def _rapidyaml() -> Any:
    """The ryml module, imported when first needed (not by every command that imports kubemu),
    or None without it (a runtime dependency of the local tools; then PyYAML reads it all)."""
    try:
        import ryml
    except ImportError:  # pragma: no cover - rapidyaml has wheels for every platform we use
        return None
    return ryml


def _plain_data_only(text: str, data: bytes) -> bool:
    if not _characters_agree(text, data):
        return False
    suspects = _suspects(data)
    return suspects is not None and not any(
        _plain_in_place(text, word, key) for word, key in suspects
    )


def _characters_agree(text: str, data: bytes) -> bool:
    if data and not data.endswith(b"\n"):
        return False  # a block scalar ending the file: PyYAML keeps no final line break
    if (text.startswith("---") or "\n---" in text or "\n..." in text) and has_alias(text):
        return False  # several documents: rapidyaml resolves an alias across them, PyYAML not
    if _long_simple_key(text):
        return False
    if text.isascii():
        odd = len(data.translate(None, _ODD_ASCII)) != len(data)
    else:
        odd = _ODD_TEXT.search(text) is not None
    if odd or ("\r" in text and text.count("\r") != text.count("\r\n")):
        return False  # odd characters, lone carriage returns (counted only if any)
    if text.startswith("%") or "\n%" in text:
        return False  # directives (%YAML 1.2, %TAG)
    if "&" in text:  # PyYAML refuses an anchor defined twice (in one document), rapidyaml not
        anchors = _ANCHOR.findall(text)
        return len(anchors) == len(set(anchors))
    return True


# PyYAML's scanner refuses a simple key longer than this; rapidyaml has no such limit.
_SIMPLE_KEY_LIMIT = 1024
_KEY_INDICATOR = re.compile(r":(?:[ \t]|$)")


def _long_simple_key(text: str) -> bool:
    """Whether a line may hold a key longer than PyYAML accepts: one whose first ``: `` comes
    past the limit, or one that starts with a quote or a flow collection (where a ``:``
    within the quotes would hide where the key ends). Only lines past the limit are looked
    at; a long block scalar line that starts so sends the file to PyYAML, harmlessly."""
    for line in _long_lines(text):
        content = line.lstrip(" -")
        if content[:1] in ("'", '"', "{", "[", "?"):
            return True
        indicator = _KEY_INDICATOR.search(content)
        if indicator is not None and indicator.start() > _SIMPLE_KEY_LIMIT:
            return True
    return False


# Probes for long lines: a stretch of _PROBE characters every _STEP; any line longer than
# the limit holds a whole stretch (_PROBE + _STEP - 1 == the limit + 1).
_STEP = 256
_PROBE = _SIMPLE_KEY_LIMIT + 2 - _STEP


def _long_lines(text: str) -> Iterator[str]:
    """The lines of ``text`` longer than the limit, without splitting all of it (a fifth of a
    second for 19 MB): a stretch with no line break is looked at, the others skipped."""
    end, position = len(text), 0
    while position + _PROBE <= end:
        if text.find("\n", position, position + _PROBE) != -1:
            position += _STEP
            continue
        start = text.rfind("\n", 0, position) + 1
        stop = text.find("\n", position)
        stop = end if stop == -1 else stop
        if stop - start > _SIMPLE_KEY_LIMIT:
            yield text[start:stop]
        position = stop + 1


def _suspects(data: bytes) -> set[tuple[str, bool]] | None:
    """The words that may be plain scalars read otherwise by rapidyaml (with whether each is
    a key), to be looked up in place; None when a word alone settles it."""
    suspects: set[tuple[str, bool]] = set()
    # Each distinct word once (split as YAML separates them: at ASCII white space, in bytes,
    # faster); the regular expression picks, in C, the few worth a look.
    words = [noted.decode() for noted in _WORD_OF_NOTE.findall(b"\n".join(set(data.split())))]
    # A flow collection starts a word; without one ("[]" and "{}" aside), brackets and braces
    # are characters of plain scalars (managedFields' k:{"type":"Ready"}: keys).
    flow = any(word[0] in "[{" and word.rstrip(",]}") not in ("[", "{") for word in words)
    for word in words:
        if flow and ("]:" in word or "}:" in word):
            return None  # a collection as a key
        if flow and (":," in word or ":]" in word or ":}" in word):
            return None  # a flow key with no value: PyYAML refuses some, rapidyaml none
        parts = _FLOW.split(word) if flow else [word]
        for part in (word, *parts) if len(parts) > 1 else parts:
            if not part:
                continue
            if part[0] == "!":
                return None  # a tag: rapidyaml's JSON drops them
            if part in ("?", ":"):
                return None  # a complex or an empty key, or (rarely) prose
            if part[0] in _ODD_START or (part is not word and part[0] in "?:"):
                if not _NAMED_ANCHOR.fullmatch(part):
                    suspects.add((part, False))  # ("?" and ":" start a key in a flow)
                continue
            key = part.endswith(":")
            core = part[:-1] if key else part
            if key and _NANINF_KEY.fullmatch(core):
                return None
            suspect = _SUSPECT.fullmatch(core) or _DATE.fullmatch(core)
            if suspect and (key or not _SAME_AS_VALUE.fullmatch(core)):
                suspects.add((core, key))
    return suspects


def _plain_in_place(text: str, word: str, key: bool) -> bool:
    """Whether ``word`` stands somewhere in ``text`` where a plain scalar (a key if ``key``)
    starts and ends, as far as a look at its line can tell; when unsure, True."""
    odd = word[0] in _ODD_START or word[0] in "?:"
    date = not odd and _DATE.fullmatch(word) is not None
    # Whatever follows an indicator or a date (a timestamp may go on after a space).
    end = "" if odd or date else ":" + _KEY_END if key else _VALUE_END
    escaped = re.escape(word)
    pattern = re.compile(rf"{escaped}(?<=[\s\[{{,]{escaped}){end}", re.M)
    found = [match.start() for match in pattern.finditer(text)]
    if text.startswith(word):
        found.append(0)
    for start in found:
        line = text[text.rfind("\n", 0, start) + 1 : start].rstrip(" \t")
        if date or _SCALAR_START.search(line):
            return True  # where a scalar starts (a date: or where one may go on)
    return False


@contextmanager
def _stderr_silenced() -> Iterator[None]:
    """rapidyaml writes a message to the process's standard error before it raises; the
    fallback reports the problem properly, so that message is discarded."""
    try:
        saved = os.dup(2)
    except OSError:
        yield
        return
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
