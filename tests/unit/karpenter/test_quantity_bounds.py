"""Quantities are bounded as Kubernetes' ``resource.Quantity`` bounds them (issue 23.5): "no
quantity may represent a number greater than 2^63-1 in magnitude, nor may it have more than
3 decimal places. Numbers larger or more precise will be capped or rounded up"
(k8s.io/apimachinery/pkg/api/resource/quantity.go), and the exponent of ``1e<n>`` is an
int64. A NodePool limit of ``1e99999999`` is read at once as the cap, not computed for a
minute."""

from __future__ import annotations

from fractions import Fraction

import pytest

from lifeboat.karpenter.quantities import parse_quantity

CAP = Fraction(2**63 - 1)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1e99999999", CAP),
        ("-1e5000", -CAP),
        ("9300000000000000000", CAP),  # past 2^63-1 without an exponent: capped too
        ("1e-99999999", Fraction(1, 1000)),  # rounded up to the smallest step
        ("0e999999999", Fraction(0)),
        ("12e3", Fraction(12000)),
        ("1.5e-3", Fraction(3, 2000)),
        ("8Gi", Fraction(8 * 1024**3)),
    ],
)
def test_exponents_are_bounded_as_resource_quantity_bounds_them(
    text: str, expected: Fraction
) -> None:
    assert parse_quantity(text) == expected


def test_an_exponent_past_int64_is_no_quantity() -> None:
    with pytest.raises(ValueError, match="exponent out of range"):
        parse_quantity("1e99999999999999999999")
