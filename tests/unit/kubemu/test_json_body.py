"""kubemu.dispatch._json_body: a request body decoded as the API server decodes JSON
(encoding/json with k8s.io/apimachinery util/json ``convertNumber``)."""

from __future__ import annotations

import pytest

from kubemu import dispatch
from kubemu.errors import ApiError


def test_numbers_are_int64_or_float64() -> None:
    """convertNumber: ``n.Int64()`` when it fits, else ``n.Float64()``."""
    decoded = dispatch._json_body(
        b"[9223372036854775807, 9223372036854775808, -9223372036854775808, 1.5]"
    )
    assert decoded == [2**63 - 1, 9.223372036854776e18, -(2**63), 1.5]
    assert [type(n) for n in decoded] == [int, float, int, float]


@pytest.mark.parametrize("body", [b'{"a": NaN}', b'{"a": -Infinity}', b'{"a": 1e400}', b"[-1e999]"])
def test_what_go_does_not_decode_is_a_400(body: bytes) -> None:
    """Go refuses NaN and Infinity (no JSON) and a number beyond float64 (Float64's range
    error); Python takes the first two and makes inf of the last."""
    with pytest.raises(ApiError) as caught:
        dispatch._json_body(body)
    assert caught.value.code == 400


def _nested(depth: int) -> bytes:
    return ('{"a":' * (depth - 1) + "[1]" + "}" * (depth - 1)).encode()


def test_a_body_nested_beyond_kubemus_depth_is_a_400_not_a_dead_handler() -> None:
    """The server's limit is 10,000 levels (util/json maxDepth); kubemu's handlers recurse a
    few Python frames a level, so it refuses beyond 100 levels, clearly, with a 400."""
    assert dispatch._depth(dispatch._json_body(_nested(100))) == 100
    for depth in (101, 700, 20_000):
        with pytest.raises(ApiError) as caught:
            dispatch._json_body(_nested(depth))
        assert caught.value.code == 400
        assert "exceeded max depth of 100" in str(caught.value.status())
