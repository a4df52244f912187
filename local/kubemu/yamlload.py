"""YAML cluster files, read fast and exactly as PyYAML's safe loader reads them.

A 5,000-node ``kubectl get -o yaml`` dump is 18 MB and 1.8 million parser events. PyYAML's
safe loader, even on libyaml (``CSafeLoader``), spends most of its time after the parser:
it composes a node object per value, then its constructors walk them (generators, merge
checks, a resolver call per scalar). Kubernetes dumps are plain data: mappings, sequences
and scalars. So the documents are built straight from the parser's events, with PyYAML's
own resolver (YAML 1.1: ``yes`` is true, ``010`` is 8, as Kubernetes reads them) and its own
constructors for every scalar that is not a string.

Anything beyond plain data (an explicit tag on a collection, a merge key ``<<``, an alias
to an unknown anchor, a key that is not a scalar) or any error is handed to PyYAML's own
loader, which reads the file from the start: its result, or its error with line and column,
is the answer, so nothing here changes what a file means.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import yaml
from yaml.events import (
    AliasEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)
from yaml.nodes import ScalarNode

# libyaml's parser where PyYAML was built with it (the wheels are).
LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_STR = "tag:yaml.org,2002:str"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"


class _NotPlainData(Exception):
    """Something the event builder leaves to PyYAML's loader."""


def load_documents(text: str) -> list[Any]:
    """Every document of ``text``, as ``list(yaml.load_all(text, Loader=LOADER))`` gives
    them; a ``yaml.YAMLError`` (with its position) when the text is not valid YAML."""
    try:
        return _Builder(text).documents()
    except (_NotPlainData, yaml.YAMLError, TypeError, ValueError):
        return list(yaml.load_all(text, Loader=LOADER))


class _Builder:
    def __init__(self, text: str) -> None:
        self._loader = LOADER(text)
        self._anchors: dict[str, Any] = {}
        if self._loader.yaml_path_resolvers:
            raise _NotPlainData  # resolved by where a value sits: left to PyYAML
        resolvers = self._loader.yaml_implicit_resolvers
        anywhere = list(resolvers.get(None, ()))  # patterns for any first character
        self._implicit = {first: [*found, *anywhere] for first, found in resolvers.items()}
        self._anywhere = anywhere
        self._constructors = self._loader.yaml_constructors
        self._get: Callable[[], Any] = self._loader.get_event  # the next parser event

    def documents(self) -> list[Any]:
        get = self._get
        try:
            get()  # StreamStartEvent
            found: list[Any] = []
            while type(get()) is not StreamEndEvent:  # DocumentStartEvent, or the end
                self._anchors = {}
                found.append(self._value(get()))
                get()  # DocumentEndEvent
            return found
        finally:
            self._loader.dispose()

    def _value(self, event: Any) -> Any:
        kind = type(event)
        if kind is ScalarEvent:
            value = self._scalar(event)
            if event.anchor is not None:
                self._anchor(event.anchor, value)
            return value
        if kind is MappingStartEvent:
            return self._mapping(event)
        if kind is SequenceStartEvent:
            return self._sequence(event)
        if kind is AliasEvent and event.anchor in self._anchors:
            return self._anchors[event.anchor]
        raise _NotPlainData  # e.g. an undefined alias: PyYAML says so, with its line

    def _anchor(self, name: str, value: Any) -> None:
        if name in self._anchors:
            raise _NotPlainData  # defined twice in a document: PyYAML's composer refuses it
        self._anchors[name] = value

    def _scalar(self, event: Any) -> Any:
        value: str = event.value
        tag = event.tag
        if tag is None or tag == "!":
            if not event.implicit[0]:
                return value  # quoted: a string
            tag = self._resolve(value)
        if tag == _STR:
            return value
        construct = self._constructors.get(tag)
        if construct is None:
            raise _NotPlainData  # a merge key ("<<"), a tag the safe loader refuses
        return construct(self._loader, ScalarNode(tag, value, event.start_mark, event.end_mark))

    def _resolve(self, value: str) -> str:
        """BaseResolver.resolve for a plain scalar: by its first character's patterns."""
        for tag, pattern in self._implicit.get(value[:1], self._anywhere):
            if pattern.match(value):
                return str(tag)
        return _STR

    def _mapping(self, event: Any) -> dict[Any, Any]:
        if event.tag not in (None, "!", _MAP):
            raise _NotPlainData  # !!omap, !!set, a custom tag
        mapping: dict[Any, Any] = {}
        if event.anchor is not None:
            self._anchor(event.anchor, mapping)
        get, value_of, scalar = self._get, self._value, self._scalar
        while True:
            key_event = get()
            kind = type(key_event)
            if kind is MappingEndEvent:
                return mapping
            if kind is not ScalarEvent or key_event.anchor is not None:
                raise _NotPlainData  # a collection, an alias or an anchor as a key
            item = get()
            if type(item) is ScalarEvent and item.anchor is None:
                mapping[scalar(key_event)] = scalar(item)  # most values
            else:
                mapping[scalar(key_event)] = value_of(item)

    def _sequence(self, event: Any) -> list[Any]:
        if event.tag not in (None, "!", _SEQ):
            raise _NotPlainData
        sequence: list[Any] = []
        if event.anchor is not None:
            self._anchor(event.anchor, sequence)
        get, value_of = self._get, self._value
        while type(item := get()) is not SequenceEndEvent:
            sequence.append(value_of(item))
        return sequence
