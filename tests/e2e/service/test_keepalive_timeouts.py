"""The read timeouts on a kept-alive connection (ops/service/http.py): after a whole
request, its timers are armed only for what a read leaves incomplete, so the next
request's headers trickling in, or its body stopping, are still answered 408 (the
connection's first request: tests/e2e/service/test_hostile_http.py)."""
from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tests.e2e.service.test_hostile_http import served, status_of, trickled  # noqa: F401  # the fixture: timeouts of 2 s


def whole_answer(s: socket.socket) -> bytes:
    """One answer with a Content-Length body, read whole."""
    got = b""
    while b"\r\n\r\n" not in got:
        got += s.recv(65536)
    head, _, body = got.partition(b"\r\n\r\n")
    length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")[1:]
                  if line.lower().startswith(b"content-length:"))
    while len(body) < length:
        body += s.recv(65536)
    return head


@contextmanager
def kept_alive(server: Any) -> Iterator[socket.socket]:
    """A connection to the server whose first request (GET /readyz) was answered whole."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        s.sendall(b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert status_of(whole_answer(s)) == 200
        yield s


def test_a_kept_alive_connection_s_next_request_trickling_in_is_answered_408(served):  # noqa: F811
    server, keys = served
    with kept_alive(server) as s:
        started = time.monotonic()
        answer = trickled(s, b"POST /v1/commands HTTP/1.1\r\n")
        assert status_of(answer) == 408 and b"request_timeout" in answer, answer
        assert time.monotonic() - started < 5


def test_a_kept_alive_connection_s_next_body_stopping_is_answered_408(served):  # noqa: F811
    server, keys = served
    with kept_alive(server) as s:
        started = time.monotonic()
        s.sendall(f"POST /v1/commands HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {keys['studio']}\r\n"
                  "Content-Type: application/x-ndjson\r\nContent-Length: 1000\r\n\r\n{\"type\":".encode())
        s.settimeout(8.0)
        answer = s.recv(4096)
        assert status_of(answer) == 408 and b"request_timeout" in answer, answer
        assert time.monotonic() - started < 5
