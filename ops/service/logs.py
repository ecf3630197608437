"""One JSON log line per request, and the per-route request metrics.

A plain ASGI middleware (not BaseHTTPMiddleware): it only watches the response
start, so streamed bodies stream and the request path costs little.
"""
from __future__ import annotations

import functools
import itertools
import os
import sys
import time
from collections.abc import Mapping, MutableMapping
from datetime import UTC, datetime
from typing import Any

import orjson

from ops.service import metrics

DOC_PATHS = frozenset({"/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc"})
DOC_ASSETS = "/docs-assets"  # their scripts and styles (ops/service/routes/docs.py), one label for all


def write_line(line: dict[str, Any]) -> None:
    """One request's JSON log line on standard error (whatever sys.stderr is at the time, a
    captured or replaced stream included): `line`'s keys, then `event`, `level` and an RFC 3339 UTC
    `timestamp`, the line structlog's JSONRenderer wrote with add_log_level and
    TimeStamper(fmt="iso", utc=True), written here directly: structlog's lazy logger binds a
    new logger and runs its processor chain on every call, a fifth of the fast path's own CPU."""
    line["event"] = "request"
    line["level"] = "info"
    line["timestamp"] = datetime.now(UTC)  # orjson writes it as isoformat() does, Z for +00:00
    stream = sys.stderr
    stream.write(orjson.dumps(line, option=_LINE).decode())
    stream.flush()


_LINE = orjson.OPT_UTC_Z | orjson.OPT_APPEND_NEWLINE


_ids = itertools.count()
_id_prefix: tuple[int, str] = (0, "")


REQUEST_ID = "request_id"  # the key of this request's id in the ASGI scope's state


def bind_request_id(scope: MutableMapping[str, Any]) -> str:
    """A new request id, kept in the scope's state for the problem's `instance` (problems.py)."""
    request_id = next_request_id()
    scope.setdefault("state", {})[REQUEST_ID] = request_id
    return request_id


def next_request_id() -> str:
    """16 hex digits, unique: 8 random per process, then a counter. uuid4 (a getrandom
    system call per request) was a tenth of the event loop's own time under load."""
    global _id_prefix
    pid = os.getpid()
    if _id_prefix[0] != pid:  # a new (or forked) process: a prefix of its own
        _id_prefix = (pid, os.urandom(4).hex())
    return f"{_id_prefix[1]}{next(_ids) & 0xFFFFFFFF:08x}"


class RequestLog:
    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        trace = getattr(getattr(scope.get("app"), "state", None), "trace", None)  # ops/service/trace.py
        timing: dict[str, Any] | None = None
        if trace is not None and scope["path"] == "/v1/commands":
            timing = {"a": started}
            scope.setdefault("state", {})["trace"] = timing
        status = {"code": 500}
        request_id = bind_request_id(scope)

        async def watch(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
                message.setdefault("headers", []).append((b"x-request-id", request_id.encode()))
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            log_request(scope, status["code"], started, request_id, timing)


@functools.lru_cache(maxsize=1024)  # routes are templates and statuses few: a small, bounded set
def _request_metrics(route: str, status: int) -> tuple[Any, Any]:
    """The labelled request counter and latency histogram (a `labels` lookup per request cost 1.4 us)."""
    return metrics.REQUESTS.labels(route, str(status)), metrics.REQUEST_SECONDS.labels(route)


def log_request(scope: Mapping[str, Any], status: int, started: float, request_id: str,
                timing: dict[str, Any] | None, route: str | None = None) -> None:
    """A request's metrics, its trace row (when tracing) and its JSON log line. `route`: the
    route's template when the caller knows it (else found from the scope)."""
    seconds = time.perf_counter() - started
    if timing is not None:
        timing["s"] = started + seconds
        scope["app"].state.trace.add(timing)
    # the route's template without its convertors, `/v1/recall/{player}` (bounded label values); the
    # docs routes are plain paths
    route = route or getattr(scope.get("route"), "path_format", None) or (
        scope["path"] if scope["path"] in DOC_PATHS else DOC_ASSETS if scope["path"].startswith(DOC_ASSETS) else "unmatched")
    requests, request_seconds = _request_metrics(route, status)
    requests.inc()
    request_seconds.observe(seconds)
    write_line({"request_id": request_id, "method": scope["method"], "path": scope["path"], "route": route,
                "status": status, "ms": round(seconds * 1000, 2), "client": (scope.get("client") or ("-",))[0]})
