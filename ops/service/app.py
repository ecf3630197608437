"""The live service: FastAPI over the ledger (`ledger serve`).

Writes go through one GroupCommitter per process (ops/service/committer.py): a
request is answered only after its commands are committed. Reads use an EventLog
on a second LedgerApp (the writer's aggregate cache is the writer thread's alone)
and call the same functions as the read commands of the command line
(ops/service/reads.py). Roles: ops/service/auth.py; README "Live service".
"""
from __future__ import annotations

import gc
import inspect
import json
import os
import sys
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import orjson
from fastapi import FastAPI, HTTPException, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from domain.refusals import RefusalCode
from ledger import logging as ledger_logging
from ledger.app import storable
from ledger.batching import Result
from ledger.eventlog import EventLog
from ledger.keys import ApiKey, key_store
from ledger.store import db_url_from, open_app
from ops.service import metrics
from ops.service.auth import KEY_CACHE_S_DEFAULT, ROLE_WRITE, Keys, bearer_credentials, checked_key
from ops.service.committer import MAX_BATCH_DEFAULT, MAX_WAIT_MS_DEFAULT, GroupCommitter, TableLocks
from ops.service.logs import RequestLog, log_request, next_request_id
from ops.service.trace import from_env as trace_from_env

COMMANDS_PER_REQUEST_MAX = 10_000
# How long the event loop may hold the GIL while the writer waits for it (Python's default
# is 5 ms). The writer gives the GIL up at every database round trip; each time, a busy
# loop kept it until the interval ran out, so one batch waited several times 5 ms for it
# (writer beside a busy thread, ~25 batches of 5 commands: 31 -> 14 ms per batch at 1 ms).
SWITCH_INTERVAL_MS_DEFAULT = 1.0
NDJSON = "application/x-ndjson"


@dataclass(frozen=True)
class Settings:
    db_url: str
    max_wait_ms: float = MAX_WAIT_MS_DEFAULT
    max_batch: int = MAX_BATCH_DEFAULT
    lock_dir: str | None = None  # set when several worker processes share the store
    key_cache_s: float = KEY_CACHE_S_DEFAULT
    switch_interval_ms: float = SWITCH_INTERVAL_MS_DEFAULT

    @classmethod
    def from_env(cls) -> Settings:
        env = os.environ
        return cls(
            db_url=db_url_from(None),
            max_wait_ms=float(env.get("LEDGER_SERVE_MAX_WAIT_MS", MAX_WAIT_MS_DEFAULT)),
            max_batch=int(env.get("LEDGER_SERVE_MAX_BATCH", MAX_BATCH_DEFAULT)),
            lock_dir=env.get("LEDGER_SERVE_LOCK_DIR") or None,
            key_cache_s=float(env.get("LEDGER_SERVE_KEY_CACHE_S", KEY_CACHE_S_DEFAULT)),
            switch_interval_ms=float(env.get("LEDGER_SERVE_SWITCH_INTERVAL_MS", SWITCH_INTERVAL_MS_DEFAULT)),
        )


class CommandResult(BaseModel):
    status: str
    command_id: str | None
    code: str | None
    message: str
    round_id: str | None
    events: list[str]
    original_status: str | None


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings.from_env()

    @asynccontextmanager
    async def lifespan(api: FastAPI) -> AsyncIterator[None]:
        writer_app = open_app(settings.db_url)
        api.state.reader = EventLog(open_app(settings.db_url))
        api.state.keys = Keys(key_store(api.state.reader.app), settings.key_cache_s)
        locks = TableLocks(settings.lock_dir) if settings.lock_dir else None
        api.state.committer = GroupCommitter(writer_app, max_wait_ms=settings.max_wait_ms,
                                             max_batch=settings.max_batch, locks=locks, on_commit=_observe)
        api.state.views_lock = threading.Lock()
        api.state.trace = trace_from_env()
        if api.state.trace is not None:
            api.state.trace.start()
        frozen_here = _freeze_startup_heap()
        switch_interval_s = sys.getswitchinterval()
        sys.setswitchinterval(settings.switch_interval_ms / 1000.0)
        try:
            yield
        finally:  # SIGTERM: uvicorn stops taking requests, finishes the open ones, then this
            sys.setswitchinterval(switch_interval_s)
            api.state.committer.close()
            api.state.keys.close()
            writer_app.close()
            api.state.reader.close()
            if frozen_here:
                gc.unfreeze()
            if api.state.trace is not None:
                api.state.trace.dump()

    api = LedgerAPI(title="casino-ledger", version="1", lifespan=lifespan, **_NO_OTEL,
                    description="Live intake and reads of the casino ledger. Feed format: docs/feed.md.")
    _health_routes(api)
    api.commands_route = _command_routes(api)
    from ops.service.reads import read_routes

    read_routes(api)
    api.add_middleware(RequestLog)
    return api


# The service reports through /metrics and its JSON log lines. FastAPI >= 0.16x also
# looks for OpenTelemetry providers on every request (environment lookups, a tenth of
# the event loop's time per command at 1,000/s); off where that option exists.
_NO_OTEL: dict[str, Any] = ({"telemetry": {"tracing": False, "metrics": False, "logs": False}}
                            if "telemetry" in inspect.signature(FastAPI.__init__).parameters else {})


def _freeze_startup_heap() -> bool:
    """Move what startup made (modules, classes, routes, the apps: some 100k objects that
    live as long as the process) out of the cyclic collector's reach. Otherwise every
    oldest-generation pass re-walks them all while holding the GIL: a 20-40 ms stall of
    every request in flight, several times a second at 2,000 commands/s. Reference
    counting still frees them. False when someone else froze objects already (left alone)."""
    if gc.get_freeze_count() != 0:
        return False
    gc.collect()
    gc.freeze()
    return True


def _observe(count: int, seconds: float, results: list) -> None:
    metrics.BATCH_SECONDS.observe(seconds)
    metrics.BATCH_COMMANDS.observe(count)
    metrics.count_results(results)


def _health_routes(api: FastAPI) -> None:
    @api.get("/healthz", tags=["ops"], summary="the process is alive")
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @api.get("/readyz", tags=["ops"], summary="the store answers (503 otherwise)",
             responses={503: {"description": "store unreachable"}})
    def readyz(request: Request) -> JSONResponse:
        try:
            head = request.app.state.reader.head()
        except Exception as exc:  # any store failure means not ready
            return JSONResponse({"status": "unavailable", "error": str(exc)[:200]}, status_code=503)
        return JSONResponse({"status": "ready", "position": head})

    @api.get("/metrics", tags=["ops"], summary="Prometheus metrics (all worker processes)",
             response_class=Response)
    def metrics_route(request: Request) -> Response:
        from ops.service.reads import projection_lag

        try:
            metrics.PROJECTION_LAG.set(projection_lag(request.app.state.reader))
        except Exception:  # the store is down: /readyz says so; metrics still answer
            pass
        return Response(metrics.render(), media_type=metrics.CONTENT_TYPE)


COMMANDS_BODY = {
    "required": True,
    "content": {
        "application/json": {"schema": {"type": "array", "items": {"type": "object"},
                                        "maxItems": COMMANDS_PER_REQUEST_MAX}},
        NDJSON: {"schema": {"type": "string", "description": "one JSON command per line"}},
    },
}


COMMANDS_PATH = "/v1/commands"


def _command_routes(api: FastAPI) -> APIRoute:
    @api.post(COMMANDS_PATH, tags=["commands"], response_model=list[CommandResult],
              summary="apply feed commands; answered after they are committed",
              openapi_extra={"requestBody": COMMANDS_BODY, "security": [{"HTTPBearer": []}]},  # checked_key
              responses={413: {"description": "too many commands"}, 422: {"description": "body is no JSON array"},
                         503: {"description": "the store failed; nothing of this request is known committed"}})
    async def post_commands(request: Request) -> Response:
        return await commands_response(request)

    return next(r for r in api.routes if isinstance(r, APIRoute) and r.path == COMMANDS_PATH and "POST" in r.methods)


class LedgerAPI(FastAPI):
    """FastAPI, with POST /v1/commands, the one hot route, answered before FastAPI's and
    Starlette's machinery (their middleware layers, Request and Response objects, routing and
    dependency solving): on the event loop every command shares, that machinery cost more CPU
    per command than the handler itself. Same handler (`commands_answer`), same answers, the
    same log line and metrics (`log_request`); an HTTPException is rendered by the app's own
    handler for it, as the route would have it (tests/service/test_fast_path.py compares the
    two). Every other request (other paths, other methods, a root path) goes through FastAPI."""

    commands_route: APIRoute | None = None
    fast_commands = True  # the tests turn it off to compare with the route

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if (self.fast_commands and scope["type"] == "http" and scope["method"] == "POST"
                and scope["path"] == COMMANDS_PATH and not scope.get("root_path")):
            await self._commands(scope, receive, send)
            return
        await super().__call__(scope, receive, send)

    async def _commands(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        started = time.perf_counter()
        request_id = next_request_id()
        scope["app"], scope["route"] = self, self.commands_route  # as Starlette and the router set them
        timing: dict[str, Any] | None = None
        if self.state.trace is not None:  # ops/service/trace.py
            timing = scope.setdefault("state", {})["trace"] = {"a": started}
        status = 500
        try:
            try:
                key = await checked_key(self.state.keys, bearer_credentials(_header(scope, b"authorization")),
                                        ROLE_WRITE)
                body = await commands_answer(self.state, key, await _body(receive),
                                             _header(scope, b"content-type") or "", timing)
            except StarletteHTTPException as exc:
                request = Request(scope, receive, send)
                handler = self.exception_handlers.get(StarletteHTTPException, http_exception_handler)
                response = await handler(request, exc)
                status = response.status_code
                response.raw_headers.append((b"x-request-id", request_id.encode()))
                await response(scope, receive, send)
                return
            except Exception:  # as Starlette's ServerErrorMiddleware: a plain 500, then raised for the server's log
                await _send(send, 500, b"Internal Server Error", b"text/plain; charset=utf-8", request_id)
                raise
            status = 200
            await _send(send, 200, body, b"application/json", request_id)
        finally:
            log_request(scope, status, started, request_id, timing)


async def _body(receive: Any) -> bytes:
    """The request body (what Request.body() reads), from the ASGI messages."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnect()
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _header(scope: dict[str, Any], name: bytes) -> str | None:
    """A request header's value (the first), as Starlette decodes it (latin-1); names are lower case in ASGI."""
    for key, value in scope["headers"]:
        if key == name:
            return value.decode("latin-1")
    return None


async def _send(send: Any, status: int, body: bytes, content_type: bytes, request_id: str) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-length", str(len(body)).encode()), (b"content-type", content_type),
        (b"x-request-id", request_id.encode())]})
    await send({"type": "http.response.body", "body": body})


async def commands_response(request: Request) -> Response:
    """The answer to POST /v1/commands on FastAPI's route (the fast path's twin)."""
    state = request.app.state
    key = await checked_key(state.keys, bearer_credentials(request.headers.get("authorization")), ROLE_WRITE)
    body = await commands_answer(state, key, await request.body(), request.headers.get("content-type", ""),
                                 request.scope.get("state", {}).get("trace"))
    return Response(body, media_type="application/json")


async def commands_answer(state: Any, key: ApiKey, body: bytes, content_type: str,
                          timing: dict[str, Any] | None) -> bytes:
    """One result per command, after their commit, as the JSON body of the answer (the
    caller checked the key first: an unknown caller's body is never read)."""
    raws = split_body(body, content_type)
    answers: list[dict[str, Any] | None] = [None] * len(raws)
    allowed: list[int] = []
    for i, raw in enumerate(raws):
        refusal = scope_refusal(key, raw)
        if refusal is None:
            allowed.append(i)
        else:
            answers[i] = refusal
    if allowed:
        if timing is not None:
            timing["q"] = time.perf_counter()
        try:
            results = await state.committer.results([raws[i] for i in allowed], timing)
        except Exception as exc:
            raise HTTPException(503, f"the store failed: {str(exc)[:200]}") from exc
        if timing is not None:
            timing.update(r=time.perf_counter(), n=len(allowed), id=results[0].command_id if results else None)
        for i, result in zip(allowed, results):
            answers[i] = result.as_dict()
    # Text echoed from a request is `storable` (a lone surrogate escaped), which orjson can write.
    return orjson.dumps(answers)


def split_body(body: bytes, content_type: str) -> list[str | bytes]:
    """The commands of a request, each as the raw JSON the CLI would read from a feed line."""
    if content_type.split(";")[0].strip().lower() == NDJSON:
        raws: list[str | bytes] = [line for line in body.split(b"\n") if line.strip()]
    else:
        try:
            data = json.loads(body)
        except ValueError as exc:
            raise HTTPException(422, f"the body is not JSON: {exc}") from exc
        if not isinstance(data, list):
            raise HTTPException(422, "the body must be a JSON array of commands (or NDJSON lines)")
        raws = [json.dumps(item) for item in data]
    if len(raws) > COMMANDS_PER_REQUEST_MAX:
        raise HTTPException(413, f"at most {COMMANDS_PER_REQUEST_MAX} commands per request")
    return raws


def scope_refusal(key: ApiKey, raw: str | bytes) -> dict[str, Any] | None:
    """The `table_not_allowed` result for a command outside the key's tables (nothing is recorded)."""
    if not key.tables:
        return None
    try:
        data = json.loads(raw)
    except ValueError:
        return None  # not JSON: the ledger refuses it as bad_command
    if not isinstance(data, dict) or not isinstance(data.get("table_id"), str) or key.allows_table(data["table_id"]):
        return None
    cid = data.get("command_id")
    metrics.COMMANDS.labels("refused", RefusalCode.TABLE_NOT_ALLOWED.value).inc()
    message = RefusalCode.TABLE_NOT_ALLOWED.template.format(tables=", ".join(key.tables),
                                                            table_id=storable(data["table_id"]))
    return Result(status="refused", command_id=storable(cid) if isinstance(cid, str) else None,
                  code=RefusalCode.TABLE_NOT_ALLOWED, message=message).as_dict()


def app_from_env() -> FastAPI:
    """The uvicorn factory (`ledger serve` passes its settings through the environment to every worker)."""
    ledger_logging.configure(os.environ.get("LEDGER_LOG_LEVEL", "info"), json_output=True)
    return create_app()
