"""How many values a block-style YAML text may hold once its aliases are expanded, read from
the text alone: what lets rapidyaml (which copies what an alias names) read a file with
aliases without an alias bomb expanding to gigabytes first.

An alias copies its anchor's node. The node an anchor names, in block style, is the run of
lines after it indented deeper than the key or the ``-`` that holds it (and, after a key, a
sequence written at the key's own indentation, as PyYAML's dumper writes one). So the
expanded size of an anchor is bounded by the values its lines can hold plus, for each alias
among them, the expanded size of what that alias names; the document's, by the values of the
whole text plus each alias's. Values are counted high (every ``:``, ``-`` and line break may
start one): the bound is never below the truth, and a text whose bound is within the limit is
one whose exact count (``clusterfile._check_expansion`` on PyYAML's reading) is too.

Anything this reading could get wrong returns None, and the caller leaves the text to PyYAML's
loader, which reads it and counts exactly (refusing the bomb, as today): a flow collection
anywhere (a ``[`` or ``{`` opening a non-empty one: its lines need not follow indentation),
an anchor on a line with more than a scalar after it, an alias used before its anchor or
inside the node its anchor names (a recursive one), an alias naming no anchor, an anchor or
alias name beyond letters, digits, ``-`` and ``_``.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right

# An anchor's or alias's name: YAML allows more, this reading no more than this.
_NAME = re.compile(r"[0-9A-Za-z_-]+")
# What may stand before a token ("&a", "*a") and after its name.
_BEFORE = frozenset(" \t\r\n[{,")
_AFTER = frozenset(" \t\r\n]},")
_NAME_CHARACTERS = frozenset("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_-")
# Where a collection is empty: "[" or "{" closed at once.
_CLOSED = re.compile(r"[ \t]*[\]}]")


def expansion_bound(text: str) -> int | None:
    """An upper bound of the values ``text`` holds with every alias expanded, or None when
    the text is not one this bound can be trusted on (see the module's docstring)."""
    if _flow_collection(text):
        return None
    anchors, aliases = _tokens(text, "&"), _tokens(text, "*")
    if anchors is None or aliases is None:
        return None  # a name this reading does not understand
    defined: dict[str, tuple[int, int]] = {}
    for start, name in anchors:
        if name in defined:
            return None  # defined twice: PyYAML decides
        end = _node_end(text, start, len(name))
        if end is None:
            return None
        defined[name] = (start, end)
    bound = _Bound(text, defined, [p for p, _ in aliases], [n for _, n in aliases])
    try:
        return bound.of_range(0, len(text))
    except RecursionError:  # anchors nested deeper than Python recurses: PyYAML decides
        return None


def has_alias(text: str) -> bool:
    """Whether ``text`` may hold an alias: a "*" starting a token and followed by a name's
    character (PyYAML's scanner reads no alias without one; errs towards yes: a quoted
    " *a" counts). str.find, not a regular expression: it runs on every YAML file read,
    and on 18 MB a pattern that starts with a look-behind or an alternation costs half a
    second."""
    length = len(text)
    position = text.find("*")
    while position != -1:
        starts = position == 0 or text[position - 1] in _BEFORE
        if starts and position + 1 < length and text[position + 1] in _NAME_CHARACTERS:
            return True
        position = text.find("*", position + 1)
    return False


def _flow_collection(text: str) -> bool:
    """Whether a "[" or "{" starting a token opens a collection that holds something."""
    for bracket in "[{":
        position = text.find(bracket)
        while position != -1:
            if (position == 0 or text[position - 1] in _BEFORE) and not _CLOSED.match(
                text, position + 1
            ):
                return True
            position = text.find(bracket, position + 1)
    return False


def _tokens(text: str, sigil: str) -> list[tuple[int, str]] | None:
    """(position, name) of each anchor ("&") or alias ("*") starting a token; None when one
    may be a token this reading does not understand (a name beyond letters, digits, "-" and
    "_"). A lone sigil (a cron's "* * *") is no token."""
    found: list[tuple[int, str]] = []
    length = len(text)
    position = text.find(sigil)
    while position != -1:
        if position == 0 or text[position - 1] in _BEFORE:
            name = _NAME.match(text, position + 1)
            end = name.end() if name is not None else position + 1
            if end < length and text[end] not in _AFTER:
                return None
            if name is not None:
                found.append((position, name.group()))
        position = text.find(sigil, position + 1)
    return found


class _Bound:
    def __init__(
        self, text: str, defined: dict[str, tuple[int, int]], at: list[int], names: list[str]
    ) -> None:
        self._text = text
        self._defined = defined
        self._at = at  # alias positions, ascending
        self._names = names
        self._sizes: dict[str, int] = {}
        self._open: set[str] = set()

    def of_range(self, start: int, end: int) -> int | None:
        """Values the text in [start, end) may hold, its aliases expanded."""
        text = self._text
        total = 1 + sum(text.count(c, start, end) for c in ":-\n")
        for index in range(bisect_left(self._at, start), bisect_right(self._at, end - 1)):
            size = self.of_anchor(self._names[index], self._at[index])
            if size is None:
                return None
            total += size
        return total

    def of_anchor(self, name: str, used_at: int) -> int | None:
        span = self._defined.get(name)
        if span is None or span[0] > used_at or span[0] <= used_at < span[1]:
            return None  # undefined, used before its anchor, or recursive
        if name in self._sizes:
            return self._sizes[name]
        if name in self._open:
            return None  # a cycle (cannot happen without a recursive alias; kept safe)
        self._open.add(name)
        size = self.of_range(*span)
        self._open.discard(name)
        if size is not None:
            self._sizes[name] = size
        return size


def _node_end(text: str, anchor: int, name_length: int) -> int | None:
    """Where the node the anchor at ``anchor`` names ends (exclusive), or None when its line
    is not one this reading understands."""
    line_start = text.rfind("\n", 0, anchor) + 1
    line_end = text.find("\n", anchor)
    line_end = len(text) if line_end == -1 else line_end
    after = text[anchor + 1 + name_length : line_end].strip()
    before = text[line_start:anchor]
    if after and not after.startswith("#"):
        # A scalar on the anchor's line is the node: one value. More (a key) is not read here.
        return None if _holds_a_key(after) else line_end
    column, after_key = _holder(before)
    if column is None:
        return None
    return _block_end(text, line_end, column, after_key)


def _holds_a_key(rest: str) -> bool:
    return ": " in rest or rest.endswith(":") or rest.startswith(("-", "?", "|", ">"))


def _holder(before: str) -> tuple[int | None, bool]:
    """The column of what holds the anchored node (the key of ``key: &a``, the dash of
    ``- &a``) and whether it is a key; None when the line is neither."""
    stripped = before.rstrip()
    indent = len(before) - len(before.lstrip(" "))
    content = stripped[indent:]
    if content.endswith(":"):
        # "key:", "- key:", "- - key:": the key's column, after any dashes before it.
        prefix = re.match(r"(?:- +)*", content)
        offset = prefix.end() if prefix else 0
        return indent + offset, True
    if content and set(content) <= {"-", " "} and content.endswith("-"):
        return indent + len(content) - 1, False  # the last dash's column
    return None, False


def _block_end(text: str, position: int, column: int, after_key: bool) -> int:
    """The end of the lines after ``position`` that belong to a block node held at
    ``column``: deeper lines, blank lines and comments, and (after a key) a sequence at the
    key's own column."""
    end = position
    length = len(text)
    while end < length:
        start = end + 1
        stop = text.find("\n", start)
        stop = length if stop == -1 else stop
        line = text[start:stop]
        content = line.lstrip(" ")
        indent = len(line) - len(content)
        inside = (
            not content.strip()
            or content.startswith("#")
            or indent > column
            or (after_key and indent == column and (content == "-" or content.startswith("- ")))
        )
        if not inside:
            return end
        end = stop
    return length
