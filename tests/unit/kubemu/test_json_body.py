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
