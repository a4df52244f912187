"""``python -m bench.abandoned_watches``: ``lifeboat serve``'s threads after many watches whose
clients went away (issue 33.5).

Opens ``--watches`` watches (raw HTTP on sockets, as kubectl's ``get -w`` does) on the
emulator, with the store busy (a Node created every 20 ms), closes every client socket, and
samples the process's threads until they are back to the count before the watches or
``--patience`` seconds pass; then a second round. Reported per round: the peak, the threads
left 1 s after the clients went, and the seconds until the baseline. The server's sockets
pass descriptor 1024 on the way (FD_SETSIZE, ``select()``'s limit).
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

from kubemu import Emulator


def _open(host: str, port: int) -> socket.socket:
    connection = socket.create_connection((host, port), timeout=30)
    path = "/api/v1/namespaces/default/pods?watch=true"
    connection.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    return connection


def _round(emulator: Emulator, watches: int, patience: float) -> dict[str, Any]:
    host, port = emulator.url.removeprefix("http://").split(":")
    baseline = threading.active_count()
    connections = [_open(host, int(port)) for _ in range(watches)]
    for connection in connections:
        connection.recv(64)  # the answer's head: the watch is being served
    peak = threading.active_count()
    for connection in connections:
        connection.close()
    gone = time.monotonic()
    after_1s: int | None = None
    while time.monotonic() - gone < patience and threading.active_count() > baseline:
        if after_1s is None and time.monotonic() - gone >= 1:
            after_1s = threading.active_count()
        time.sleep(0.05)
    seconds = time.monotonic() - gone
    left = threading.active_count() - baseline
    return {
        "baseline": baseline,
        "peak": peak,
        "left_after_1s": (after_1s if after_1s is not None else threading.active_count())
        - baseline,
        "left_at_end": left,
        "seconds_to_baseline": round(seconds, 2) if left <= 0 else None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.abandoned_watches")
    parser.add_argument("--watches", type=int, default=1500)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--patience", type=float, default=30.0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    results = []
    with Emulator([]) as emulator:
        stop = threading.Event()

        def churn() -> None:  # a busy cluster: the store changes all the time
            index = 0
            while not stop.wait(0.02):
                index += 1
                node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{index}"}}
                emulator.put_object(node)

        churner = threading.Thread(target=churn, daemon=True)
        churner.start()
        try:
            for _ in range(args.rounds):
                results.append(_round(emulator, args.watches, args.patience))
        finally:
            stop.set()
            churner.join()
    summary = {"watches": args.watches, "rounds": results, "patience_s": args.patience}
    print(json.dumps(summary, indent=2))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return 0 if all(r["left_at_end"] <= 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
