"""Which messages of a batch may be handled side by side.

Messages about a common instance share a lane and are handled in batch order, so two notices
about one node (a Spot warning and its state change, a wake-up delivered twice) never race
each other for it; the lanes run side by side.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def lanes(instances: Sequence[Iterable[str]]) -> list[list[int]]:
    """The indexes of the messages (``instances[i]``: the instances message ``i`` names)
    grouped into lanes, each in batch order."""
    lane_of = list(range(len(instances)))

    def root(index: int) -> int:
        while lane_of[index] != index:
            lane_of[index] = lane_of[lane_of[index]]
            index = lane_of[index]
        return index

    first_with: dict[str, int] = {}
    for index, named in enumerate(instances):
        for instance in named:
            other = first_with.setdefault(instance, index)
            lane_of[root(index)] = root(other)
    grouped: dict[int, list[int]] = {}
    for index in range(len(instances)):
        grouped.setdefault(root(index), []).append(index)
    return list(grouped.values())
