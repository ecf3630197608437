"""The fast path's answer in one write (ops/service/http.py `OneWrite`): after `hold()` the
status line and headers wait for the body and go out with it; nothing else is held, and
closing writes what is held first."""
from __future__ import annotations

import asyncio
from typing import Any

from ops.service.app import _send
from ops.service.http import OneWrite


class Transport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        assert not self.closed
        self.writes.append(data)

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def get_extra_info(self, name: str) -> str:
        return f"info {name}"


def test_held_head_goes_out_with_the_body_in_one_write():
    transport = Transport()
    one = OneWrite(transport)  # type: ignore[arg-type]
    one.hold()
    one.write(b"HTTP/1.1 200 OK\r\n\r\n")
    assert transport.writes == []
    one.write(b"body")
    assert transport.writes == [b"HTTP/1.1 200 OK\r\n\r\nbody"]
    one.write(b"more")  # not held: only the write right after hold()
    assert transport.writes[-1] == b"more"
    assert one.get_extra_info("peername") == "info peername" and not one.is_closing()


def test_without_hold_every_write_goes_out_at_once():
    transport = Transport()
    one = OneWrite(transport)  # type: ignore[arg-type]
    one.write(b"a")
    one.write(b"b")
    assert transport.writes == [b"a", b"b"]


def test_close_and_flush_write_what_is_held_first():
    transport = Transport()
    one = OneWrite(transport)  # type: ignore[arg-type]
    one.hold()
    one.write(b"head")
    one.flush()
    assert transport.writes == [b"head"]
    one.hold()
    one.write(b"head2")
    one.close()
    assert transport.writes == [b"head", b"head2"] and transport.closed


class Cycle:
    """uvicorn's RequestResponseCycle as `_send` sees it: `send` is its bound method."""

    def __init__(self, transport: Any) -> None:
        self.transport = transport
        self.messages: list[dict[str, Any]] = []

    async def send(self, message: dict[str, Any]) -> None:
        self.messages.append(message)
        if message["type"] == "http.response.start":
            self.transport.write(b"HTTP/1.1 %d\r\n\r\n" % message["status"])
        else:
            self.transport.write(message["body"])


def test_the_fast_path_s_answer_is_one_write():
    transport = Transport()
    cycle = Cycle(OneWrite(transport))  # type: ignore[arg-type]
    asyncio.run(_send(cycle.send, 200, b"[]", b"application/json", "id1"))
    assert transport.writes == [b"HTTP/1.1 200\r\n\r\n[]"]
    assert cycle.messages[0]["headers"] == [(b"content-length", b"2"), (b"content-type", b"application/json"),
                                            (b"x-request-id", b"id1")]


def test_any_other_send_is_left_alone():
    transport = Transport()
    cycle = Cycle(transport)  # no OneWrite (another server, a test client)
    asyncio.run(_send(cycle.send, 200, b"[]", b"application/json", "id1"))
    assert transport.writes == [b"HTTP/1.1 200\r\n\r\n", b"[]"]


def test_flush_ends_a_hold_that_no_write_used():
    """The protocol flushes at each new request: an answer that failed before its head leaves no hold."""
    transport = Transport()
    one = OneWrite(transport)  # type: ignore[arg-type]
    one.hold()
    one.flush()
    one.write(b"next head")
    assert transport.writes == [b"next head"]
