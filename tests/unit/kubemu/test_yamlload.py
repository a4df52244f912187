"""kubemu.yamlload builds YAML documents from libyaml's events: it must give exactly what
PyYAML's safe loader gives (YAML 1.1 as Kubernetes reads it), and leave to that loader, with
its errors and positions, everything that is not plain data."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kubemu import yamlload
from tests.support import cyaml

SAMPLE = Path(__file__).resolve().parents[3] / "events" / "cluster.yaml"


def _pyyaml(text: str) -> list[Any]:
    return list(yaml.load_all(text, Loader=yamlload.LOADER))


def _built(text: str) -> list[Any]:
    """The event builder alone (no fallback): it must not need PyYAML's loader for this."""
    return yamlload._Builder(text).documents()


def test_the_sample_cluster_loads_as_pyyaml_loads_it() -> None:
    text = SAMPLE.read_text()
    assert _built(text) == _pyyaml(text)


YAML_1_1 = """
plain: [yes, No, on, OFF, y, "yes", '010', 010, 0x1F, 0o17, 1_000, 1.5e3, .inf, -.Inf, .nan]
nulls: [~, null, Null, '', ""]
when: 2026-12-01T14:00:00Z
day: 2026-12-01
quantity: 500m
version: 1.10
colon: "a: b"
12: twelve
? 1.5
: one and a half
empty:
folded: >
  two
  lines
literal: |
  kept
anchored: &a {k: v, list: &l [1, 2]}
again: *a
list again: *l
explicit: !!str 12
explicit int: !!int "12"
---
second: document
--- 3
"""


def test_yaml_1_1_scalars_anchors_and_documents_load_as_pyyaml_loads_them() -> None:
    built = _built(YAML_1_1)
    assert repr(built) == repr(_pyyaml(YAML_1_1))  # repr: nan != nan
    first = built[0]
    assert first["plain"][:8] == [True, False, True, False, "y", "yes", "010", 8]
    assert first["when"] == datetime(2026, 12, 1, 14, 0, tzinfo=UTC)
    assert first["day"] == date(2026, 12, 1)
    assert first["version"] == 1.1 and first[12] == "twelve"
    assert first["again"] is first["anchored"]  # an alias is the same object, as in PyYAML


@pytest.mark.parametrize(
    "text",
    [
        "base: &b {k: 1}\nmerged:\n  <<: *b\n  j: 2\n",  # merge key
        "s: !!set {a, b}\n",
        "o: !!omap [{a: 1}, {b: 2}]\n",
        "b: !!binary aGVsbG8=\n",
    ],
)
def test_what_is_not_plain_data_is_left_to_pyyaml(text: str) -> None:
    assert repr(yamlload.load_documents(text)) == repr(_pyyaml(text))


@pytest.mark.parametrize(
    ("text", "error", "line"),
    [
        ("a: 1\nb: [c\n", yaml.parser.ParserError, 3),
        ("a: 1\nb: *nowhere\n", yaml.composer.ComposerError, 2),
        ("a: !!python/name:os.system x\n", yaml.constructor.ConstructorError, 1),
        ("a: 1\n\tb: 2\n", yaml.scanner.ScannerError, 2),
        ("? [a, b]\n: a sequence as a key\n", yaml.constructor.ConstructorError, 1),
        ("a: &x 1\nb: &x 2\n", yaml.composer.ComposerError, 2),  # an anchor defined twice
    ],
)
def test_errors_are_pyyaml_s_with_their_line(text: str, error: type, line: int) -> None:
    with pytest.raises(error) as raised:
        yamlload.load_documents(text)
    mark = raised.value.problem_mark  # type: ignore[attr-defined]
    assert mark is not None and mark.line + 1 == line


_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=12)
    | st.sampled_from(["yes", "off", "010", "0x10", "1e3", "2026-12-01", "~", "<<", "=", ""])
)
_data = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=8) | st.integers(), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(data=_data, flow=st.sampled_from([None, True, False]))
def test_any_dumped_data_loads_as_pyyaml_loads_it(data: Any, flow: bool | None) -> None:
    text = cyaml.safe_dump(data, default_flow_style=flow)
    assert yamlload.load_documents(text) == _pyyaml(text)


@settings(max_examples=150, deadline=None)
@given(words=st.lists(st.text(max_size=10), min_size=1, max_size=6))
def test_any_plain_scalar_resolves_as_pyyaml_resolves_it(words: list[str]) -> None:
    """Unquoted, as a hand-written file has them: the resolver's patterns decide the type."""
    text = "\n".join(f"k{i}: {w}" for i, w in enumerate(words)) + "\n"
    try:
        expected = repr(_pyyaml(text))
    except yaml.YAMLError as error:
        with pytest.raises(type(error)):
            yamlload.load_documents(text)
        return
    assert repr(yamlload.load_documents(text)) == expected
