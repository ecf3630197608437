"""uvicorn's httptools protocol with the limits it lacks: header size and count (431), and
read timeouts for the headers and the body (408).

uvicorn (0.54, httptools) accepts headers of any size and number, and has no timeout for
a request that is being received: a client sending one byte a second held its connection
(and, with enough of them, the worker's file descriptors) for ever. Here:

- `max_header_bytes` (request line and headers together) and `max_headers`: 431 and the
  connection closed, counted as the bytes arrive (a 1 MiB header is refused at the limit,
  never held whole);
- `header_timeout_s`: from a connection's start, or the first byte of a request on a
  kept-alive one, to its last header; `body_timeout_s`: from the last header to the body's
  end, paused while the server itself holds the reading back (flow control, the app busy).
  On expiry: 408 (when no answer was started) and the connection closed; the app sees the
  client go away.

`ledger serve` passes the limits through the environment to every worker
(LEDGER_SERVE_MAX_HEADER_BYTES, ..._MAX_HEADERS, ..._HEADER_TIMEOUT_S, ..._BODY_TIMEOUT_S).
"""
from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from typing import Any

import httptools
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from domain.errorcodes import ErrorCode
from ops.service.problems import PROBLEM_JSON, problem_bytes

MAX_HEADER_BYTES_DEFAULT = 32 * 1024  # nginx answers 431/400 past 32 KiB (4 x 8 KiB buffers) by default
MAX_HEADERS_DEFAULT = 100
HEADER_TIMEOUT_S_DEFAULT = 10.0
BODY_TIMEOUT_S_DEFAULT = 30.0


@dataclass(frozen=True)
class Limits:
    max_header_bytes: int = MAX_HEADER_BYTES_DEFAULT
    max_headers: int = MAX_HEADERS_DEFAULT
    header_timeout_s: float = HEADER_TIMEOUT_S_DEFAULT
    body_timeout_s: float = BODY_TIMEOUT_S_DEFAULT

    @classmethod
    def from_env(cls) -> Limits:
        env = os.environ
        return cls(
            max_header_bytes=int(env.get("LEDGER_SERVE_MAX_HEADER_BYTES", MAX_HEADER_BYTES_DEFAULT)),
            max_headers=int(env.get("LEDGER_SERVE_MAX_HEADERS", MAX_HEADERS_DEFAULT)),
            header_timeout_s=float(env.get("LEDGER_SERVE_HEADER_TIMEOUT_S", HEADER_TIMEOUT_S_DEFAULT)),
            body_timeout_s=float(env.get("LEDGER_SERVE_BODY_TIMEOUT_S", BODY_TIMEOUT_S_DEFAULT)),
        )


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    limits: Limits | None = None  # None: read from the environment by the first connection

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if type(self).limits is None:
            type(self).limits = Limits.from_env()
        self._limits: Limits = type(self).limits  # type: ignore[assignment]
        self._in_body = False  # between a request's last header and its body's end
        self._header_bytes = 0  # received for the request whose headers are not complete yet
        self._header_count = 0
        self._header_size = 0  # the headers' bytes as sent ("name: value\r\n"), of the request being received
        self._timer: asyncio.TimerHandle | None = None
        self._closing = False

    # ------------------------------------------------------------------ timers

    def _arm(self, seconds: float, phase: str) -> None:
        self._disarm()
        self._timer = self.loop.call_later(seconds, self._expired, phase)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expired(self, phase: str) -> None:
        self._timer = None
        if self.transport.is_closing():
            return
        if phase == "body" and self.flow.read_paused:  # the server holds the reading back, not the client
            self._arm(self._limits.body_timeout_s, "body")
            return
        seconds = self._limits.header_timeout_s if phase == "header" else self._limits.body_timeout_s
        idle = phase == "header" and self._header_bytes == 0 and not self._in_body
        if idle:  # a connection that never sent a request: closed without an answer, like a keep-alive timeout
            self.transport.close()
            return
        self._answer_and_close(408, ErrorCode.REQUEST_TIMEOUT, f"the request's {phase} did not arrive within {seconds:g} s")

    # ------------------------------------------------------ protocol callbacks

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._one_write = OneWrite(transport)
        self._arm(self._limits.header_timeout_s, "header")

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._closing:
            return
        if not self._in_body:
            self._header_bytes += len(data)
        super().data_received(data)
        if self._closing:
            return
        # Timers only for what this data left incomplete (armed now, in the same callback, as the
        # first byte or the last header arrived): a request that came whole needs none.
        if self._in_body:
            if self._timer is None:  # its headers ended here
                self._arm(self._limits.body_timeout_s, "body")
        elif self._header_bytes > 0:
            if self._header_bytes > self._limits.max_header_bytes:
                self._answer_and_close(431, ErrorCode.HEADERS_TOO_LARGE, f"the request line and headers exceed {self._limits.max_header_bytes} bytes")
            elif self._timer is None:  # the first bytes of a request on a kept-alive connection
                self._arm(self._limits.header_timeout_s, "header")

    def send_400_response(self, msg: str) -> None:
        # A callback of ours answered the request (the parser reports it as its own error): answer that instead.
        if self._closing:
            return
        self._closing = True
        self._disarm()
        self._write_problem(400, ErrorCode.BAD_REQUEST, msg)
        self.transport.close()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._header_count = 0
        self._header_size = 0

    def on_url(self, url: bytes) -> None:
        super().on_url(url)
        if len(self.url) > self._limits.max_header_bytes:
            self._answer_and_close(431, ErrorCode.HEADERS_TOO_LARGE, f"the request line exceeds {self._limits.max_header_bytes} bytes")

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_count += 1
        if self._header_count > self._limits.max_headers:
            self._answer_and_close(431, ErrorCode.HEADERS_TOO_MANY, f"more than {self._limits.max_headers} headers")
            return
        self._header_size += len(name) + len(value) + 4  # "name: value\r\n"
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        if self._closing:
            return
        if len(self.url) + self._header_size > self._limits.max_header_bytes:
            self._answer_and_close(431, ErrorCode.HEADERS_TOO_LARGE, f"the request line and headers exceed {self._limits.max_header_bytes} bytes")
            return
        self._in_body = True
        self._header_bytes = 0
        self._disarm()  # the body's clock: armed when this data is parsed, unless the body came with it (data_received)
        super().on_headers_complete()
        cycle = self.cycle
        if cycle is not None and cycle.transport is self.transport:  # not an upgrade's (none: no new cycle)
            self._one_write.flush()  # nothing held, and no hold left by an answer that failed before its head
            cycle.transport = self._one_write  # type: ignore[assignment]

    def on_body(self, body: bytes) -> None:
        if self._closing:
            return
        super().on_body(body)

    def on_message_complete(self) -> None:
        if self._closing:
            return
        self._in_body = False
        self._header_bytes = 0
        self._disarm()  # the next request's clock starts at its first byte (or the keep-alive timeout closes)
        super().on_message_complete()

    # ----------------------------------------------------------------- refusal

    def shutdown(self) -> None:
        self._flush_cycle()
        super().shutdown()

    def _flush_cycle(self) -> None:
        """What a response cycle holds, written now (before anything else is)."""
        one_write = getattr(self, "_one_write", None)
        if one_write is not None:
            one_write.flush()

    def _write_problem(self, status: int, code: ErrorCode, detail: str) -> None:
        self._flush_cycle()
        body = problem_bytes(status, code, detail)
        self.transport.write(b"".join([
            STATUS_LINE[status], b"content-type: ", PROBLEM_JSON.encode(), b"\r\n",
            b"content-length: ", str(len(body)).encode(), b"\r\n", b"connection: close\r\n\r\n", body]))

    def _answer_and_close(self, status: int, code: ErrorCode, detail: str) -> None:
        """Answer `status` with a problem (ops/service/problems.py) unless an answer was started, then
        close the connection; an app still reading the body sees the client go away."""
        if self._closing:
            return
        self._closing = True
        self._disarm()
        cycle = self.cycle
        answering = cycle is not None and self._in_body and not cycle.response_complete
        if not (answering and cycle.response_started):
            self._write_problem(status, code, detail)
        if answering:
            cycle.disconnected = True
            cycle.message_event.set()
        self.logger.info("refused a request: %s %s (%s)", status, code, detail)
        self.transport.close()
        try:
            self.parser.pause()  # type: ignore[attr-defined]  # httptools has it; its stubs do not. The rest of what arrived is not parsed
        except (AttributeError, httptools.HttpParserError):  # pragma: no cover - older httptools
            pass


class OneWrite:
    """A connection's transport as its response cycles (uvicorn's RequestResponseCycle) see it,
    so that an app that sends its whole answer at once has it written once: after `hold()`,
    the next write (the status line and headers) is kept and sent with the write after it
    (the body), one system call and one TCP segment instead of two, the same bytes. Only
    the fast path of POST /v1/commands holds (ops/service/app.py `_send`), right before it
    sends its start and body messages back to back; closing writes what is held first."""

    __slots__ = ("_transport", "_held", "_hold")

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        self._held: bytes | None = None
        self._hold = False

    def hold(self) -> None:
        self._hold = True

    def write(self, data: bytes) -> None:
        held = self._held
        if held is not None:
            self._held = None
            self._transport.write(held + data)
        elif self._hold:
            self._hold = False
            self._held = data
        else:
            self._transport.write(data)

    def flush(self) -> None:
        self._hold = False
        held = self._held
        if held is not None:
            self._held = None
            self._transport.write(held)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)
