"""kubemu.yamlaliases: a YAML text with aliases is read by rapidyaml (which copies each alias)
only when the text alone bounds its expansion under the limit; the bound is never below the
exact count, and everything it cannot be sure of (flow collections, recursive, forward or
undefined aliases, odd names, an anchor on a key's line) is left to PyYAML, which counts
exactly and refuses a bomb as before (issue 36: a 5,000-node dump with aliases read at
rapidyaml's speed again, its replay within 2x its floor)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kubemu import yamlfast, yamlload
from kubemu.clusterfile import UnsafeYaml, read_documents
from kubemu.yamlaliases import expansion_bound, has_alias
from tests.support import cyaml


def _exact(value: Any) -> int:
    """Values once every alias is expanded, a shared object counted each time it is met;
    keys counted too (more than clusterfile._check_expansion counts: a stricter check)."""
    if isinstance(value, dict):
        return 1 + sum(_exact(v) for v in value.values()) + len(value)
    if isinstance(value, list):
        return 1 + sum(_exact(v) for v in value)
    return 1


def _pyyaml(text: str) -> list[Any]:
    return list(yaml.load_all(text, Loader=yamlload.LOADER))


SHARED = {"type": "Ready", "status": "True", "reason": "KubeletReady"}
CLUSTER = {
    "apiVersion": "v1",
    "kind": "List",
    "items": [
        {"kind": "Node", "metadata": {"name": "n1"}, "status": {"conditions": [SHARED]}},
        {"kind": "NodeClaim", "metadata": {"name": "c1"}, "status": {"conditions": [SHARED]}},
        {"kind": "Pod", "spec": {"tolerations": [SHARED, SHARED]}},
    ],
}


def test_a_dump_with_shared_objects_takes_the_fast_path_and_reads_as_pyyaml() -> None:
    """PyYAML's dumper writes a shared object once, with an anchor, then aliases to it (the
    bench's 5,000-node file holds ten thousand): read by rapidyaml, equal to PyYAML's."""
    text = cyaml.safe_dump(CLUSTER, sort_keys=False)
    assert "&id001" in text and "*id001" in text and has_alias(text)
    fast = yamlfast.plain_data_documents(text)
    assert fast is not None
    assert fast == _pyyaml(text)
    bound = expansion_bound(text)
    assert bound is not None and bound >= _exact(CLUSTER)


def _block_bomb(levels: int = 9) -> str:
    """The billion laughs in block style (no flow collection to send it away)."""
    lines = ["a0: &a0", *["- lol"] * 10]
    for level in range(1, levels + 1):
        lines += [f"a{level}: &a{level}", *[f"- *a{level - 1}"] * 10]
    return "\n".join(lines) + "\n"


def test_a_block_style_alias_bomb_is_bounded_and_left_to_pyyaml_which_refuses_it() -> None:
    bomb = _block_bomb()
    bound = expansion_bound(bomb)
    assert bound is not None and bound > 10**9  # counted from the text, never expanded
    assert yamlfast.plain_data_documents(bomb) is None
    with pytest.raises(UnsafeYaml, match="excessive aliasing"):
        read_documents(bomb)


def test_a_small_block_bomb_within_the_limit_is_read_fast_and_exactly() -> None:
    small = _block_bomb(levels=3)
    fast = yamlfast.plain_data_documents(small)
    assert fast is not None and fast == _pyyaml(small)
    bound = expansion_bound(small)
    assert bound is not None and bound >= _exact(fast[0])


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("a: &a [1, 2]\nb: *a\n", "a flow collection"),
        ("a: &a\n  k: *a\n", "a recursive alias"),
        ("b: *a\na: &a 1\n", "used before its anchor"),
        ("b: *nowhere\n", "an undefined alias"),
        ("a: &a.b 1\nb: *a.b\n", "a name beyond letters, digits, - and _"),
        ("- &a k: v\n- *a\n", "an anchor on a key's line"),
        ("a: &a 1\na2: &a 2\nb: *a\n", "an anchor defined twice"),
    ],
)
def test_what_the_text_cannot_bound_is_left_to_pyyaml(text: str, why: str) -> None:
    assert expansion_bound(text) is None, why
    assert yamlfast.plain_data_documents(text) is None, why


def test_a_lone_star_is_no_alias() -> None:
    """A cron schedule's stars are no alias (PyYAML reads none without a name after "*"):
    the file takes the fast path as one without aliases."""
    text = "schedule: '0 9 * * *'\nother: a * b\nevery: '*/5 * * * *'\n"
    assert not has_alias(text)
    assert yamlfast.plain_data_documents(text) == _pyyaml(text)


_leaf = st.integers(0, 9) | st.sampled_from(["x", "Ready", "True"])
_shared_pool = st.lists(
    st.dictionaries(st.sampled_from(["a", "b", "c"]), _leaf, min_size=1)
    | st.lists(_leaf, min_size=1, max_size=3),
    min_size=1,
    max_size=3,
)


@settings(max_examples=200, deadline=None)
@given(
    pool=_shared_pool,
    picks=st.lists(
        st.tuples(st.sampled_from(["k1", "k2", "k3", "k4"]), st.integers(0, 2)), max_size=8
    ),
    nest=st.booleans(),
)
def test_any_dump_of_shared_objects_is_bounded_from_above_and_read_as_pyyaml(
    pool: list[Any], picks: list[tuple[str, int]], nest: bool
) -> None:
    """Objects shared in any position (mapping values, sequence items, nested): the fast
    reading, when it is given, equals PyYAML's; the bound never falls below the truth."""
    document: dict[str, Any] = {}
    for key, index in picks:
        shared = pool[index % len(pool)]
        document.setdefault(key, []).append({"inner": shared} if nest else shared)
    text = cyaml.safe_dump(document, default_flow_style=False)
    bound = expansion_bound(text)
    if bound is not None:
        assert bound >= _exact(document), text
    fast = yamlfast.plain_data_documents(text)
    if fast is not None:
        assert fast == _pyyaml(text), text
