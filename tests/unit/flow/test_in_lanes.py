"""``Pipeline._in_lanes``: every lane handled exactly once, after its own taint phase, whatever
the order the taints finish in (issue 36's taint phase; a review of its scheduling)."""

from __future__ import annotations

import threading
from concurrent.futures import Future
from types import SimpleNamespace

import pytest

import lifeboat.flow.pipeline as pipeline_module
from lifeboat.flow.pipeline import Pipeline

LANES = [[0], [1], [2], [3]]


def _in_lanes(workers: int, taint: object, run: object) -> None:
    Pipeline._in_lanes(SimpleNamespace(workers=workers), LANES, taint, run)  # type: ignore[arg-type]


def test_a_taint_ending_between_two_looks_at_it_still_has_its_lane_handled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The phase's wait runs out, and each taint ends just after the first time the
    scheduler asks whether it is done (the first answer no, every later one yes). Sorting
    the lanes by two looks (done ones, then the not done ones) put such a lane in neither
    list: it was never handled and its message, with no error and no report, would have
    been deleted from the queue."""
    monkeypatch.setattr(pipeline_module, "wait", lambda futures, timeout=None: None)
    main = threading.current_thread()
    asked: set[int] = set()
    real_done = Future.done

    def done(self: Future[None]) -> bool:
        if threading.current_thread() is main and id(self) not in asked:
            asked.add(id(self))
            return False
        return real_done(self)

    monkeypatch.setattr(Future, "done", done)
    handled: list[list[int]] = []
    _in_lanes(2, lambda lane: None, handled.append)
    assert sorted(handled) == LANES


@pytest.mark.parametrize("workers", [2, 4])
def test_a_lane_whose_handling_fails_raises_and_every_other_lane_is_handled(
    workers: int,
) -> None:
    handled: list[list[int]] = []

    def run(lane: list[int]) -> None:
        if lane == [1]:
            raise RuntimeError("lane 1")
        handled.append(lane)

    with pytest.raises(RuntimeError, match="lane 1"):
        _in_lanes(workers, lambda lane: None, run)
    assert sorted(handled) == [[0], [2], [3]]


def test_no_lane_is_handled_before_its_own_taint_is_done(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lane 0's taint finishes last (it waits for every other lane to be handled, past the
    phase's wait): the other lanes go ahead of it, and lane 0 is handled only after its
    taint."""
    monkeypatch.setattr(pipeline_module, "TAINT_PHASE_WAIT", 0.05)
    others_handled = threading.Event()
    tainted: set[int] = set()
    order: list[int] = []
    lock = threading.Lock()

    def taint(lane: list[int]) -> None:
        if lane == [0]:
            assert others_handled.wait(10)
        with lock:
            tainted.add(lane[0])

    def run(lane: list[int]) -> None:
        with lock:
            assert lane[0] in tainted
            order.append(lane[0])
            if len(order) == len(LANES) - 1:
                others_handled.set()

    _in_lanes(2, taint, run)
    assert order[-1] == 0 and sorted(order) == [0, 1, 2, 3]
