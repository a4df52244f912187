"""Kubernetes resource quantities (``resource.Quantity``): "3920m", "15896988Ki", "8Gi", "1e3".

Exact (``Fraction``), so comparing a NodePool's limits with its usage is never off by a
rounding error. The serialisations the API server produces are all accepted: a decimal
number, an optional exponent (``e``/``E``), or one of the binary (Ki..Ei) or decimal
(n, u, m, k, M, G, T, P, E) suffixes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from fractions import Fraction
from typing import Any, Final

_PATTERN: Final = re.compile(
    r"^(?P<sign>[+-]?)(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?:(?P<binary>Ki|Mi|Gi|Ti|Pi|Ei)|(?P<exponent>[eE][+-]?[0-9]+)|(?P<decimal>[numkMGTPE]))?$"
)
_BINARY: Final = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL: Final = {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}


def parse_quantity(value: Any) -> Fraction:
    """A quantity as an exact number; ``ValueError`` names what is wrong."""
    text = str(value).strip()
    match = _PATTERN.match(text)
    if match is None:
        raise ValueError(f"quantity {value!r}: not a Kubernetes quantity")
    number = Fraction(match["number"])
    if match["binary"]:
        number *= 1024 ** _BINARY[match["binary"]]
    elif match["exponent"]:
        exponent = match["exponent"][1:]
        if len(exponent.lstrip("+-0")) > _EXPONENT_DIGITS:
            # resource.Quantity parses the exponent as an int64: "1e99999999999999999999"
            # is no quantity (and 10 to that power would never finish here).
            raise ValueError(f"quantity {value!r}: exponent out of range")
        number = _scaled(number, int(exponent))
    elif match["decimal"]:
        number *= Fraction(10) ** _DECIMAL[match["decimal"]]
    number = min(number, _MAX)
    return -number if match["sign"] == "-" else number


# resource.Quantity: "no quantity may represent a number greater than 2^63-1 in magnitude,
# nor may it have more than 3 decimal places. Numbers larger or more precise will be capped
# or rounded up" (k8s.io/apimachinery/pkg/api/resource/quantity.go).
_MAX: Final = Fraction(2**63 - 1)
_SMALLEST: Final = Fraction(1, 1000)
_EXPONENT_DIGITS: Final = 18  # an int64
# Past these powers of ten any non-zero number of at most a few thousand digits is over
# the cap, or below the smallest step: decided without computing the power.
_POWER_BOUND: Final = 4096


def _scaled(number: Fraction, exponent: int) -> Fraction:
    """``number`` times ten to ``exponent``, capped (and rounded up) as Quantity is, without
    computing a power of ten that could take minutes for a hostile exponent."""
    if number == 0:
        return number
    if exponent > _POWER_BOUND:
        return _MAX
    if exponent < -_POWER_BOUND:
        return _SMALLEST
    return number * Fraction(10) ** exponent


def parse_resources(resources: Mapping[str, Any] | None) -> dict[str, Fraction]:
    """A ResourceList; entries that are not quantities are left out."""
    parsed: dict[str, Fraction] = {}
    for name, value in (resources or {}).items():
        try:
            parsed[str(name)] = parse_quantity(value)
        except ValueError:
            continue
    return parsed
