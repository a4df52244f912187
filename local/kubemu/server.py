"""The HTTP/1.1 front: keep-alive connections, JSON bodies with a Content-Length, and
chunked streams for watches."""

from __future__ import annotations

import json
import select
import socket
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from .dispatch import REQUEST_HEADERS, Backend, Drop, Response
from .errors import ApiError, entity_too_large

# The API server's limit on a request body (apiserver's MaxRequestBodyBytes, 3 MiB).
MAX_REQUEST_BODY_BYTES = 3 * 1024 * 1024


class EmulatorHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    # Benchmarks open many pooled connections at once; the default backlog of 5 refuses some.
    request_queue_size = 128

    def __init__(self, backend: Backend, port: int = 0) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.backend = backend
        host, bound = self.server_address[:2]
        backend.address = f"{host!s}:{bound}"


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.1 keeps connections open for the client's urllib3 pool.
    protocol_version = "HTTP/1.1"
    server: EmulatorHTTPServer
    # Idle keep-alive connections are dropped after this many seconds so threads do not pile up.
    timeout = 30

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in two writes; without NODELAY, Nagle holds the body back
        # until the client's delayed ACK (~40 ms a request).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def handle(self) -> None:
        """The connection's requests; a client that goes mid-request or mid-answer (a reset,
        a broken pipe, a timeout) ends its connection quietly, never a traceback on the
        server's stderr (socketserver's handle_error prints one for anything raised)."""
        try:
            super().handle()
        except (ConnectionError, TimeoutError):
            self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        """Silenced: a benchmark's thousands of requests must not flood stderr."""

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def do_PUT(self) -> None:
        self._handle()

    def do_PATCH(self) -> None:
        self._handle()

    def do_DELETE(self) -> None:
        self._handle()

    def _handle(self) -> None:
        stranger = _foreign_request(
            self.headers.get("Host"), self.headers.get("Origin"), self.server.server_port
        )
        if stranger is not None:
            self._refuse(403, ApiError(403, stranger).status())
            return
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if not 0 <= length <= MAX_REQUEST_BODY_BYTES:
            # As the API server (handlers.limitedReadBody): a body past 3 MiB is refused
            # unread, with 413; the connection is closed (the body was not consumed).
            self._refuse(413, entity_too_large(f"limit is {MAX_REQUEST_BODY_BYTES}").status())
            return
        raw = self.rfile.read(length) if length else b""
        url = urlsplit(self.path)
        query = {key: values[-1] for key, values in parse_qs(url.query).items()}
        content_type = self.headers.get("Content-Type") or ""
        # Header names are case-insensitive: kept lower-case. A header sent several times
        # (Impersonate-Group) keeps every value, one per line.
        names = {name.lower() for name in self.headers}
        headers = {name: "\n".join(self.headers.get_all(name) or ()) for name in names}
        token = REQUEST_HEADERS.set(headers)
        try:
            result = self.server.backend.handle(self.command, url.path, query, content_type, raw)
        finally:
            REQUEST_HEADERS.reset(token)
        if isinstance(result, Drop):
            time.sleep(result.delay)
            self.close_connection = True
            return
        if result.stream is not None:
            self._stream(result)
            return
        payload = result.raw if result.raw is not None else json.dumps(result.body).encode()
        self.send_response(result.code)
        if "Content-Type" not in result.headers:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in result.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    def _client_gone(self) -> bool:
        """Whether the client closed its end (a watch's client sends nothing after its
        request, so anything to read means end-of-file, or a reset). ``poll()``, not
        ``select()``: that fails on descriptors past 1024 (FD_SETSIZE), which a server
        holding many connections reaches. (Not a non-blocking peek either: on a socket with a
        timeout, Python waits out the timeout for it.)"""
        try:
            poller = select.poll()
            poller.register(self.connection, select.POLLIN | select.POLLPRI)
            events = poller.poll(0)
            if not events:
                return False  # nothing to read: the client is still there
            if events[0][1] & (select.POLLHUP | select.POLLERR | select.POLLNVAL):
                return True
            return not self.connection.recv(1, socket.MSG_PEEK)
        except (OSError, ValueError):  # reset, closed under us: gone
            return True

    def _refuse(self, code: int, body: dict[str, Any]) -> None:
        payload = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(payload)
        self.close_connection = True

    def _stream(self, result: Response) -> None:
        """A watch: chunked transfer encoding, one event per chunk, until the stream ends."""
        assert result.stream is not None
        self.send_response(result.code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for chunk in result.stream:
                if not chunk:  # the stream is idle: end it if its client has gone
                    if self._client_gone():
                        break
                    continue
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except (OSError, ValueError):
            # The client went (a broken pipe, a reset, a timeout, the socket closed): the
            # watch ends here, its thread with it.
            pass
        finally:
            close = getattr(result.stream, "close", None)
            if close is not None:
                close()  # the generator's own clean-up, now rather than at collection
        self.close_connection = True


# The emulator listens on the loopback only; these are the names a local client uses for it.
_LOCAL_HOSTS = ("127.0.0.1", "localhost", "[::1]")


def _foreign_request(host: str | None, origin: str | None, port: int) -> str | None:
    """Why a request is not a local client's (None: it is). A web page the operator has open
    may send requests to 127.0.0.1 (a cross-site POST needs no permission) or, through DNS
    rebinding, under its own host name: its ``Host`` names another server, or its ``Origin``
    (browsers add it; kubectl and the Kubernetes clients never send one) another site. A
    page on another local port (a dev server on localhost:8080) is another site too: only
    this server's own address is its origin."""
    if host is None or _host_name(host) not in _LOCAL_HOSTS:
        return f"Host {host!r} is not this server: it answers 127.0.0.1 and localhost only"
    if origin is not None and not _own_origin(origin, port):
        return f"Origin {origin!r}: requests from web pages are refused"
    return None


def _own_origin(origin: str, port: int) -> bool:
    """Whether ``origin`` is this server's own address (http, a local name, its port)."""
    try:
        parts = urlsplit(origin)
        origin_port = parts.port
    except ValueError:  # a port that is not a number
        return False
    local = _host_name(parts.netloc) in _LOCAL_HOSTS
    return parts.scheme == "http" and local and origin_port == port


def _host_name(host: str) -> str:
    """``host[:port]`` without its port (an IPv6 address keeps its brackets)."""
    if host.startswith("["):
        end = host.find("]") + 1
        # Only a port may follow the brackets: ``[::1]evil.example`` is no loopback address.
        return host[:end] if end and host[end:][:1] in ("", ":") else host
    return host.rsplit(":", 1)[0].lower()
