"""The replacement's instance types narrowed to the pool's remaining limits
(:mod:`lifeboat.karpenter.limits`, Karpenter's ``filterByRemainingResources``)."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from lifeboat.karpenter.limits import (
    INSTANCE_CPU,
    INSTANCE_MEMORY,
    MIB,
    max_instance_memory_mib,
    narrow,
)
from lifeboat.karpenter.requirements import Requirement, Unsatisfiable, merge


def _karpenter_capacity_mib(size_mib: int) -> int:
    """karpenter-provider-aws instancetype/types.go ``memory()`` for an x86 type, default
    VM_MEMORY_OVERHEAD_PERCENT 0.075."""
    return size_mib - math.ceil(size_mib * MIB * 0.075 / MIB)


@pytest.mark.parametrize("left_mib", [0, 1, 615, 7577, 7748, 18706, 2**20])
def test_the_memory_bound_is_the_largest_instance_memory_whose_capacity_fits(left_mib: int) -> None:
    most = max_instance_memory_mib(Fraction(left_mib * MIB))
    assert _karpenter_capacity_mib(most) <= left_mib
    assert _karpenter_capacity_mib(most + 1) > left_mib


def test_an_m5_large_fits_the_room_its_own_node_leaves() -> None:
    """A node's real capacity (7934456Ki for 8 GiB) is above Karpenter's estimate (7577 MiB):
    a pool at its limit still admits the same type for the replacement."""
    assert max_instance_memory_mib(Fraction(7934456 * 1024)) >= 8192


def test_narrowing_intersects_the_templates_own_values() -> None:
    requirements = merge([{"key": INSTANCE_CPU, "operator": "In", "values": ["2", "4", "8"]}], {})
    unnarrowed = narrow(requirements, {"cpu": Fraction(5), "pods": Fraction(10)})
    assert requirements[INSTANCE_CPU].values == frozenset({"2", "4"})
    assert unnarrowed == ["pods"]


def test_no_instance_type_fits_is_unsatisfiable() -> None:
    """Karpenter: "all available instance types exceed limits for nodepool"."""
    with pytest.raises(Unsatisfiable, match="all available instance types exceed its limits"):
        narrow({}, {"cpu": Fraction(1, 2)})
    requirements = merge([{"key": INSTANCE_CPU, "operator": "Gt", "values": ["8"]}], {})
    with pytest.raises(Unsatisfiable, match="exceed its limits"):
        narrow(requirements, {"cpu": Fraction(6)})


def test_min_values_still_hold_within_the_limits() -> None:
    requirements = merge(
        [{"key": INSTANCE_CPU, "operator": "In", "values": ["2", "4", "8"], "minValues": 3}], {}
    )
    with pytest.raises(Unsatisfiable, match="fewer than minValues 3"):
        narrow(requirements, {"cpu": Fraction(4)})


def test_a_new_bound_is_written_as_lt() -> None:
    requirements: dict[str, Requirement] = {}
    narrow(requirements, {"memory": Fraction(4 * 2**30)})
    [entry] = requirements[INSTANCE_MEMORY].entries()
    assert entry["operator"] == "Lt"
    assert int(entry["values"][0]) - 1 == max_instance_memory_mib(Fraction(4 * 2**30))
