"""Running ``lifeboat replay`` in-process for scenario tests: event files written from the
samples, cluster files derived from the sample cluster, JSON lines back."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from kubemu import dump_cluster_file, load_cluster_file
from lifeboat_local.cli import main
from lifeboat_local.common import parse_instant

EVENTS = Path(__file__).resolve().parents[2] / "events"
CLUSTER = EVENTS / "cluster.yaml"

IN_WINDOW = "2026-12-01T14:05:00Z"  # Tuesday, inside general's 09:00-17:00 zero budget
EVENING = "2026-12-01T18:00:00Z"  # Tuesday, after the window: general allows 20 % (2)

Lines = list[dict[str, Any]]
Obj = dict[str, Any]


def sample(name: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((EVENTS / name).read_text())
    return document


def write(tmp_path: Path, name: str, event: dict[str, Any]) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(event))
    return path


def _event(tmp_path: Path, kind: str, instance: str, time: str) -> Path:
    """The sample of ``kind`` (a file name stem) about ``instance``, sent at ``time``."""
    event = sample(f"{kind}.json")
    event["id"] = f"{kind}-{instance}"
    event["time"] = time
    event["resources"] = [f"arn:aws:ec2:us-east-1a:instance/{instance}"]
    event["detail"]["instance-id"] = instance
    return write(tmp_path, f"{kind}-{instance}.json", event)


def rebalance_event(tmp_path: Path, instance: str, time: str = "2026-12-01T14:01:30Z") -> Path:
    return _event(tmp_path, "rebalance-recommendation", instance, time)


def spot_event(tmp_path: Path, instance: str, time: str) -> Path:
    return _event(tmp_path, "spot-interruption", instance, time)


def replay(capsys: pytest.CaptureFixture[str], *args: str | Path) -> Lines:
    code = main(["replay", *map(str, args), "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert captured.err == ""
    return [json.loads(line) for line in captured.out.splitlines()]


def follow(
    capsys: pytest.CaptureFixture[str], event: Path, cluster: Path, at: str, state: Path
) -> Lines:
    """``replay EVENT --cluster CLUSTER --at AT --follow --state-out STATE``, bounded in time."""
    return run_with_timeout(
        lambda: replay(
            capsys, event, "--cluster", cluster, "--at", at, "--follow", "--state-out", state
        )
    )


def only(lines: Lines, instance: str) -> dict[str, Any]:
    (line,) = [item for item in lines if item["instance_id"] == instance]
    return line


def types(line: dict[str, Any]) -> list[str]:
    return [action["type"] for action in line["actions"]]


def at_of(line: dict[str, Any]) -> datetime:
    return parse_instant(line["at"])


def run_with_timeout(target: Callable[[], Lines], seconds: float = 60) -> Lines:
    """``--follow`` must terminate by itself: run it where a hang fails instead of blocking."""
    result: list[Lines] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            result.append(target())
        except BaseException as error:  # re-raised below, in the test's thread
            errors.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"replay --follow did not terminate within {seconds} s"
    if errors:
        raise errors[0]
    return result[0]


def sample_cluster() -> list[Obj]:
    return load_cluster_file(CLUSTER)


def find(objects: list[Obj], kind: str, name: str) -> Obj:
    (found,) = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


def of_kind(objects: list[Obj], kind: str) -> Iterator[Obj]:
    return (o for o in objects if o["kind"] == kind)


def save(objects: list[Obj], path: Path) -> Path:
    dump_cluster_file(objects, path)
    return path
