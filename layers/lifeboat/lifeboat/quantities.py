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
        number *= Fraction(10) ** int(match["exponent"][1:])
    elif match["decimal"]:
        number *= Fraction(10) ** _DECIMAL[match["decimal"]]
    return -number if match["sign"] == "-" else number


def parse_resources(resources: Mapping[str, Any] | None) -> dict[str, Fraction]:
    """A ResourceList; entries that are not quantities are left out."""
    parsed: dict[str, Fraction] = {}
    for name, value in (resources or {}).items():
        try:
            parsed[str(name)] = parse_quantity(value)
        except ValueError:
            continue
    return parsed
