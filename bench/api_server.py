"""The storms' Kubernetes API server in a process of its own, as a real one is another
machine: the emulator's CPU (parsing, validating, storing, serialising each request) is then
not taken from the interpreter the bench's 10 invocations share, whose lock otherwise makes a
taint wait for the emulator's answers to the other invocations (issue 36).

:class:`ServedEmulator` starts ``kubemu.Emulator`` in a spawned process (like
``bench.fleet``'s API servers) and answers what the bench asks of an emulator (its URL and
clients, its request log with times, its objects, its faults), each call sent over a pipe
and run there. The request log's times are ``time.perf_counter()`` read in the server's
process: one monotonic clock for every process on the machine (CLOCK_MONOTONIC on Linux),
so receipt (read in the bench) and tainted (read by the server when it answered the PATCH)
are compared as before.
"""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Iterable
from multiprocessing.connection import Connection
from types import TracebackType
from typing import Any

from kubernetes import client

# Processes start by importing what they run (spawn: nothing is inherited half-made).
_CONTEXT = multiprocessing.get_context("spawn")
# How long the server may take to seed and start (a 5,000-node cluster: 25,000 objects).
_PATIENCE_SECONDS = 600.0
# What the bench reads as attributes of an emulator (the rest are methods).
_ATTRIBUTES = frozenset(
    {"latency", "request_log", "requests", "requests_by_resource", "answers", "request_times"}
)


def _serve(conn: Connection, objects: list[dict[str, Any]], latency: float) -> None:
    """The server's process: the emulator, then each call asked over ``conn`` until it
    closes. An error is sent back, raised in the bench as :class:`ServerError`."""
    from kubemu import Emulator
    from kubemu.validation import compile_validators

    compile_validators()  # as a long-running API server would have them
    with Emulator(objects, latency=latency, take=True) as emulator:
        del objects
        conn.send(emulator.url)
        while True:
            try:
                name, args, kwargs = conn.recv()
            except EOFError:  # the bench closed the pipe: stop
                return
            try:
                found = getattr(emulator, name)
                result = found if name in _ATTRIBUTES else found(*args, **kwargs)
                conn.send((True, result))
            except Exception as error:  # told to the caller (as text: any error pickles)
                conn.send((False, f"{type(error).__name__}: {error}"))


class ServedEmulator:
    """An emulator in another process, used as ``kubemu.Emulator`` is by the storms."""

    def __init__(self, objects: Iterable[dict[str, Any]], latency: float = 0.0) -> None:
        self._objects = list(objects)
        self._latency = latency
        self._conn: Connection | None = None
        self._process: multiprocessing.process.BaseProcess | None = None
        self._lock = threading.Lock()
        self.url = ""

    def __enter__(self) -> ServedEmulator:
        ours, theirs = _CONTEXT.Pipe()
        self._process = _CONTEXT.Process(
            target=_serve, args=(theirs, self._objects, self._latency), daemon=True
        )
        self._process.start()
        theirs.close()
        self._conn = ours
        self._objects = []
        if not ours.poll(_PATIENCE_SECONDS):
            raise RuntimeError("the API server's process did not start")
        self.url = ours.recv()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._conn is not None:
            self._conn.close()  # the server stops on it
        if self._process is not None:
            self._process.join(_PATIENCE_SECONDS)
            if self._process.is_alive():
                self._process.kill()

    def api_client(self) -> client.ApiClient:
        """A new client for the server, configured as ``Emulator.api_client`` makes it."""
        return client.ApiClient(client.Configuration(host=self.url))

    def __getattr__(self, name: str) -> Any:
        """What the bench reads of an emulator (``latency``, ``request_log``, ``answers``...),
        read in the server's process; any other name a method of the emulator
        (``reset_counts``, ``timed_request_log``, ``objects``, ``put_object``,
        ``set_fault_rate``...), run there."""
        if name.startswith("_"):
            raise AttributeError(name)
        if name in _ATTRIBUTES:
            return self._call(name)

        def call(*args: Any, **kwargs: Any) -> Any:
            return self._call(name, *args, **kwargs)

        return call

    def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        if self._conn is None:
            raise RuntimeError("the API server's process is not started")
        with self._lock:
            self._conn.send((name, args, kwargs))
            ok, result = self._conn.recv()
        if not ok:
            raise ServerError(f"the API server's process, {name}: {result}")
        return result


class ServerError(RuntimeError):
    """A call to the emulator failed in the server's process (its error named)."""
