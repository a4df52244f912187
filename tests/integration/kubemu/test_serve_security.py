"""``lifeboat serve``'s API server (the emulator's HTTP front) answers local clients only
(issue 23.5): a request whose ``Host`` names another server (DNS rebinding) or that carries a
web page's ``Origin`` (a cross-site POST from a browser needs no permission) is refused with
403; a body over 3 MiB is refused unread (413, as the API server); and a watch whose client
went away ends, instead of keeping its thread until the watch times out (30 minutes).
Through raw HTTP on a socket, as a browser or a departed client would behave."""

from __future__ import annotations

import json
import os
import socket
import threading
import time

import pytest

from kubemu import Emulator

BODY = json.dumps(
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "planted"}, "data": {}}
).encode()


def _request(emulator: Emulator, head: str, body: bytes = b"") -> tuple[int, dict[str, object]]:
    host, port = emulator.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as connection:
        connection.sendall(head.encode() + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
            if b"\r\n\r\n" in answer:
                header, _, rest = answer.partition(b"\r\n\r\n")
                length = int(header.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
                if len(rest) >= length:
                    break
    header, _, payload = answer.partition(b"\r\n\r\n")
    status = int(header.split(b" ")[1])
    return status, json.loads(payload)


def _post(host: str, origin: str | None = None, content_type: str = "application/json") -> str:
    lines = [
        "POST /api/v1/namespaces/default/configmaps HTTP/1.1",
        f"Host: {host}",
        f"Content-Type: {content_type}",
    ]
    if origin is not None:
        lines.append(f"Origin: {origin}")
    return "\r\n".join(lines) + "\r\n"


@pytest.mark.parametrize(
    ("host", "origin"),
    [
        ("evil.example:8443", None),  # DNS rebinding: the page's own name, our address
        ("127.0.0.1", "https://evil.example"),  # a cross-site form or fetch POST
        ("localhost", "null"),  # a sandboxed page or a file:// one
        ("127.0.0.1.evil.example", None),  # a rebound name that starts as a loopback address
        ("[::1]evil.example", None),  # a loopback address with a name after its brackets
    ],
    ids=["rebound-host", "cross-site-origin", "opaque-origin", "loopback-prefix", "brackets"],
)
def test_a_request_from_a_web_page_is_refused(
    emulator: Emulator, host: str, origin: str | None
) -> None:
    """Regression: a cross-site POST from a browser got 201."""
    status, answer = _request(emulator, _post(host, origin, "text/plain"), BODY)
    assert status == 403
    assert answer["reason"] == "Forbidden"
    assert emulator.get_object("ConfigMap", "planted", "default") is None


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "[::1]"])
def test_a_local_client_is_served(emulator: Emulator, host: str) -> None:
    port = emulator.url.rsplit(":", 1)[1]
    status, _ = _request(emulator, _post(f"{host}:{port}"), BODY)
    assert status == 201
    assert emulator.get_object("ConfigMap", "planted", "default") is not None


def test_a_watch_ends_when_its_client_goes(emulator: Emulator) -> None:
    """Regression: an abandoned watch kept its thread (and its place in the store's
    condition) until it timed out."""
    host, port = emulator.url.removeprefix("http://").split(":")
    before = threading.active_count()
    connection = socket.create_connection((host, int(port)), timeout=10)
    path = "/api/v1/namespaces/default/configmaps?watch=true"
    connection.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    assert connection.recv(4096).startswith(b"HTTP/1.1 200")
    assert threading.active_count() == before + 1
    connection.close()
    # The stream looks at its client at each idle wake-up (every 0.5 s): give it up to 10 s.
    for _ in range(100):
        if threading.active_count() == before:
            break
        time.sleep(0.1)
    assert threading.active_count() == before


@pytest.mark.parametrize(
    "origin",
    [
        "http://localhost:8080",
        "http://127.0.0.1",
        "https://127.0.0.1:{port}",
        "http://[::1]:x",
        "http://127.0.0.1.evil.example:{port}",
        "http://localhost@evil.example:{port}",
        "http://[::1]evil.example:{port}",
        "null",
    ],
    ids=[
        "other-local-port", "no-port", "https", "bad-port",
        "loopback-prefixed-name", "userinfo", "after-brackets", "null",
    ],
)  # fmt: skip
def test_an_origin_other_than_the_servers_own_is_refused(emulator: Emulator, origin: str) -> None:
    """Regression (issue 33.5): a POST with ``Origin: http://localhost:8080`` (a page served
    by a local dev server) was accepted: only the host name was compared."""
    port = emulator.url.rsplit(":", 1)[1]
    head = _post(f"127.0.0.1:{port}", origin.format(port=port), "text/plain")
    status, _ = _request(emulator, head, BODY)
    assert status == 403
    assert emulator.get_object("ConfigMap", "planted", "default") is None


@pytest.mark.parametrize("name", ["127.0.0.1", "localhost"])
def test_the_servers_own_origin_is_served(emulator: Emulator, name: str) -> None:
    port = emulator.url.rsplit(":", 1)[1]
    status, _ = _request(emulator, _post(f"{name}:{port}", f"http://{name}:{port}"), BODY)
    assert status == 201


def _open_watch(emulator: Emulator, resource: str = "configmaps") -> socket.socket:
    host, port = emulator.url.removeprefix("http://").split(":")
    connection = socket.create_connection((host, int(port)), timeout=10)
    path = f"/api/v1/namespaces/default/{resource}?watch=true"
    connection.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    assert connection.recv(4096).startswith(b"HTTP/1.1 200")
    return connection


def _threads_back_to(before: int, seconds: float = 10) -> int:
    deadline = time.monotonic() + seconds
    while threading.active_count() > before and time.monotonic() < deadline:
        time.sleep(0.05)
    return threading.active_count()


def test_a_watch_on_a_descriptor_past_1024_ends_when_its_client_goes(
    emulator: Emulator, capfd: pytest.CaptureFixture[str]
) -> None:
    """Regression (issue 33.5): ``_client_gone`` used ``select()``, which raises ValueError
    ("filedescriptor out of range") for a descriptor >= 1024 (FD_SETSIZE), caught by
    nothing: each watch's thread died with a traceback. The server's socket is pushed past
    1024 by holding that many descriptors open first."""

    held: list[int] = []
    try:
        while not held or held[-1] < 1100:
            held.append(os.dup(0))
    except OSError:
        pytest.skip("this process may not open 1100 descriptors")
    try:
        before = threading.active_count()
        connection = _open_watch(emulator)
        assert threading.active_count() == before + 1
        connection.close()
        assert _threads_back_to(before) == before
    finally:
        for fd in held:
            os.close(fd)
    assert "Traceback" not in capfd.readouterr().err


def test_a_watch_ends_when_its_client_goes_while_other_objects_change(emulator: Emulator) -> None:
    """Regression (issue 33.5): a watch only looked at its client when the store had no
    change at all; changes to other objects (a busy cluster) kept a departed client's watch
    and its thread until the watch timed out."""
    before = threading.active_count()
    connection = _open_watch(emulator, "configmaps")
    connection.close()
    ended = False
    for index in range(60):  # a change every 50 ms for 3 s: the store is never idle
        emulator.put_object({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{index}"}})
        time.sleep(0.05)
        if threading.active_count() == before:
            ended = True
            break
    assert ended, "the watch outlived its client while the store was busy"


def test_a_half_closed_watch_ends_as_go_servers_end_it(emulator: Emulator) -> None:
    """A client that shuts its sending side (``shutdown(SHUT_WR)``) and keeps reading: the
    server reads end-of-file, as Go's net/http does (its background read cancels the request
    context on EOF), so the watch and its thread end; the socket still gets the stream's end."""
    before = threading.active_count()
    connection = _open_watch(emulator, "configmaps")
    try:
        connection.shutdown(socket.SHUT_WR)
        assert _threads_back_to(before) == before
        connection.settimeout(2)
        rest = b""
        while chunk := connection.recv(65536):
            rest += chunk
        assert rest.endswith(b"0\r\n\r\n")  # the chunked stream's last chunk, then close
    finally:
        connection.close()


def test_a_watch_whose_client_stays_gets_changes_after_idle_periods(emulator: Emulator) -> None:
    """The client check must not end (or stall) a watch whose client is still there: a
    change made after several idle wake-ups still arrives at once."""
    connection = _open_watch(emulator, "configmaps")
    try:
        time.sleep(2)  # four idle wake-ups, each looking at the client
        emulator.put_object(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "late"}, "data": {}}
        )
        connection.settimeout(2)
        received = b""
        while b'"late"' not in received:
            received += connection.recv(65536)
        assert b'"ADDED"' in received
    finally:
        connection.close()


def test_a_client_reset_mid_request_leaves_no_traceback(
    emulator: Emulator, capfd: pytest.CaptureFixture[str]
) -> None:
    """Issue 33.5, every socket error handled: a client that resets its connection while
    the server reads its body (SO_LINGER 0: an RST, not a FIN) ended in socketserver's
    traceback on stderr."""
    import struct

    host, port = emulator.url.removeprefix("http://").split(":")
    before = threading.active_count()
    connection = socket.create_connection((host, int(port)), timeout=10)
    head = _post(f"{host}:{port}").encode() + b"Content-Length: 100000\r\n\r\n{"
    connection.sendall(head)
    time.sleep(0.2)  # the server is reading the body
    connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    connection.close()
    assert _threads_back_to(before) == before
    assert "Traceback" not in capfd.readouterr().err
