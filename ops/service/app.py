"""The live service: FastAPI over the ledger (`ledger serve`).

Writes go through one GroupCommitter per process (ops/service/committer.py): a
request is answered only after its commands are committed. Reads use an EventLog
on a second LedgerApp (the writer's aggregate cache is the writer thread's alone)
and call the same functions as the read commands of the command line
(projections/queries.py, the read service; routes in ops/service/routes/). Roles:
ops/service/auth.py; errors: ops/service/problems.py; README "Live service".
"""
from __future__ import annotations

import asyncio
import gc
import inspect
import json
import os
import sys
import time
from collections.abc import AsyncIterator, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

import orjson
from fastapi import Depends, FastAPI, Request
from fastapi.responses import Response
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from domain.errorcodes import ErrorCode
from domain.operators import DEFAULT_OPERATOR_ID
from domain.refusals import RefusalCode
from domain.text import storable
from ledger import logging as ledger_logging
from ledger.batching import Result
from ledger.eventlog import EventLog
from ledger.keys import ROLE_WRITE, ApiKey, key_store
from ledger.store import db_url_from, open_app
from ops.service import metrics, problems, routes
from ops.service.auth import KEY_CACHE_S_DEFAULT, Keys, bearer_credentials, checked_key
from ops.service.committer import (
    GATHER_MS_DEFAULT,
    MAX_BATCH_DEFAULT,
    MAX_WAIT_MS_DEFAULT,
    GroupCommitter,
    TableLocks,
)
from ops.service.health import RETRY_AFTER_S, StoreHealth, probe_for
from ops.service.http import OneWrite
from ops.service.intake import (
    BODY_BYTES_MAX_DEFAULT,
    INLINE_SPLIT_BYTES_MAX,
    IntakeError,
    media_type,
    split_body,
)
from ops.service.logs import RequestLog, bind_request_id, log_request
from ops.service.openapi import DESCRIPTION, complete
from ops.service.paths import EscapedSlashes, clean_parameters
from ops.service.routes.commands import COMMANDS_PATH
from ops.service.startup import note_startup_failure
from ops.service.trace import from_env as trace_from_env
from projections import queries
from projections.read_service import ReadService

# How long the event loop may hold the GIL while the writer waits for it (Python's default
# is 5 ms). The writer gives the GIL up at every database round trip; each time, a busy
# loop kept it until the interval ran out, so one batch waited several times 5 ms for it
# (writer beside a busy thread, ~25 batches of 5 commands: 31 -> 14 ms per batch at 1 ms).
SWITCH_INTERVAL_MS_DEFAULT = 1.0
# How long a request may wait for the store (an API key read, its commit) before it is answered
# 503 `store_unavailable` with Retry-After; it never hangs on a store that does not answer.
STORE_TIMEOUT_S_DEFAULT = 5.0
# Bodies above INLINE_SPLIT_BYTES_MAX are split here, off the request loop (two at a time: more
# would only share the same interpreter lock).
_SPLITTER = ThreadPoolExecutor(max_workers=2, thread_name_prefix="intake")


@dataclass(frozen=True)
class Settings:
    db_url: str
    max_wait_ms: float = MAX_WAIT_MS_DEFAULT
    max_batch: int = MAX_BATCH_DEFAULT
    lock_dir: str | None = None  # set when several worker processes share the store
    key_cache_s: float = KEY_CACHE_S_DEFAULT
    switch_interval_ms: float = SWITCH_INTERVAL_MS_DEFAULT
    store_timeout_s: float = STORE_TIMEOUT_S_DEFAULT
    max_body_bytes: int = BODY_BYTES_MAX_DEFAULT
    gather_ms: float = GATHER_MS_DEFAULT  # the writer's adaptive window when max_wait_ms is 0 (committer.py)

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
            store_timeout_s=float(env.get("LEDGER_SERVE_STORE_TIMEOUT_S", STORE_TIMEOUT_S_DEFAULT)),
            max_body_bytes=int(env.get("LEDGER_SERVE_MAX_BODY_BYTES", BODY_BYTES_MAX_DEFAULT)),
            gather_ms=float(env.get("LEDGER_SERVE_GATHER_MS", GATHER_MS_DEFAULT)),
        )


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings.from_env()

    @asynccontextmanager
    async def lifespan(api: FastAPI) -> AsyncIterator[None]:
        try:
            writer_app = open_app(settings.db_url)
            api.state.reader = EventLog(open_app(settings.db_url))
            api.state.keys = Keys(key_store(api.state.reader.app), settings.key_cache_s,
                                  read_timeout_s=settings.store_timeout_s)
        except Exception as exc:  # the store out of reach as this worker starts: `ledger serve` says so
            note_startup_failure(exc)
            raise
        api.state.settings = settings
        api.state.health = StoreHealth(probe_for(settings.db_url, api.state.reader),
                                       views=partial(queries.stopped_views, api.state.reader))
        api.state.health.start()
        locks = TableLocks(settings.lock_dir) if settings.lock_dir else None
        api.state.committer = GroupCommitter(writer_app, max_wait_ms=settings.max_wait_ms,
                                             max_batch=settings.max_batch, locks=locks, on_commit=_observe,
                                             gather_ms=settings.gather_ms, answer_within_s=settings.store_timeout_s)
        api.state.reads = ReadService(api.state.reader, gc_off_per_run=False)  # the collector is the process's
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
            await api.state.health.stop()
            api.state.committer.close()
            api.state.keys.close()
            writer_app.close()
            api.state.reads.close()
            api.state.reader.close()
            if frozen_here:
                gc.unfreeze()
            if api.state.trace is not None:
                api.state.trace.dump()

    api = LedgerAPI(title="casino-ledger", version="1", lifespan=lifespan, **_NO_OTEL, description=DESCRIPTION,
                    openapi_tags=routes.TAGS, docs_url=None, redoc_url=None,  # docs: ops/service/routes/docs.py
                    dependencies=[Depends(clean_parameters)])
    problems.install(api)
    api.commands_route = routes.install(api)
    from ops.console.pages import mount as mount_console

    mount_console(api)  # the back-office pages under /ui/ (ops/console/)
    api.add_middleware(EscapedSlashes)  # ids holding `/` in one path segment (ops/service/paths.py)
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


def store_unavailable(detail: str) -> IntakeError:
    """503: the store did not answer in time or failed; nothing of the request is known to be
    committed, and sending the same commands again is safe (idempotent by command_id)."""
    return IntakeError(ErrorCode.STORE_UNAVAILABLE, detail, headers={"Retry-After": str(RETRY_AFTER_S)})


def _observe(count: int, seconds: float, results: list[Any]) -> None:
    metrics.BATCH_SECONDS.observe(seconds)
    metrics.BATCH_COMMANDS.observe(count)
    metrics.count_results(results)


class LedgerAPI(FastAPI):
    """FastAPI, with POST /v1/commands, the one hot route, answered before FastAPI's and
    Starlette's machinery (their middleware layers, Request and Response objects, routing and
    dependency solving): on the event loop every command shares, that machinery cost more CPU
    per command than the handler itself. Same handler (`commands_answer`), same answers, the
    same log line and metrics (`log_request`); an HTTPException is rendered by the app's own
    handler for it, as the route would have it (tests/e2e/service/test_fast_path.py compares the
    two). Every other request (other paths, other methods, a root path) goes through FastAPI."""

    commands_route: APIRoute | None = None
    fast_commands = True  # the tests turn it off to compare with the route
    # When each connection (its client address) was last answered: a request arriving within
    # WAITING_CALLER_S of it comes from a caller that was waiting on that answer (a table behind
    # its schedule), and ends the writer's adaptive window at once (committer.py, `urgent`).
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._answered: dict[Any, float] = {}

    def openapi(self) -> dict[str, Any]:
        if self.openapi_schema is None:
            self.openapi_schema = complete(super().openapi())
        return self.openapi_schema

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        if (self.fast_commands and scope["type"] == "http" and scope["method"] == "POST"
                and scope["path"] == COMMANDS_PATH and not scope.get("root_path")):
            await self._commands(scope, receive, send)
            return
        if scope["type"] == "http" and scope["path"].startswith("/v1/") and not self._store_ready():
            # Every /v1 route needs the store (its API key, at least): answered now, not after the pool's retries.
            await self._unavailable(scope, receive, send)
            return
        await super().__call__(scope, receive, send)

    async def commands_response(self, request: Request) -> Response:
        """The answer of FastAPI's route for POST /v1/commands (ops/service/routes/commands.py)."""
        return await commands_response(request)

    def _store_ready(self) -> bool:
        health = self.state._state.get("health")  # State as a dict: each attribute read of State is a Python call
        return health is None or health.ready

    async def _unavailable(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        """503 store_unavailable with Retry-After, logged as every request is."""
        started, request_id = time.perf_counter(), bind_request_id(scope)
        response = await problems.http_error(Request(scope, receive, send),
                                             store_unavailable(f"the store is unreachable: {self.state.health.status.error}"))
        response.raw_headers.append((b"x-request-id", request_id.encode()))
        await response(scope, receive, send)
        log_request(scope, response.status_code, started, request_id, None)

    async def _commands(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        started = time.perf_counter()
        request_id = bind_request_id(scope)
        state = self.state._state  # the app's State as a dict: each attribute read of State is a Python call
        last_answers = self._answered
        client = scope.get("client")
        if isinstance(client, list):  # an ASGI server may give [host, port]: a key needs a tuple
            client = tuple(client)
        urgent = started - last_answers.get(client, float("-inf")) < WAITING_CALLER_S
        scope["app"], scope["route"] = self, self.commands_route  # as Starlette and the router set them
        timing: dict[str, Any] | None = None
        if state.get("trace") is not None:  # ops/service/trace.py
            timing = scope.setdefault("state", {})["trace"] = {"a": started}
        status = 500
        try:
            try:
                if not self._store_ready():  # before the key: its read would wait for the store too
                    raise store_unavailable(f"the store is unreachable: {state['health'].status.error}")
                authorization, content_type, content_length = _headers(scope["headers"])
                keys = state["keys"] if "keys" in state else self.state.keys  # (no lifespan: raised as before)
                key = await checked_key(keys, bearer_credentials(authorization), ROLE_WRITE)
                content_type = content_type or ""
                media_type(content_type)  # 415 before the body is read
                body = await read_body(receive, content_length, state["settings"].max_body_bytes)
                body = await commands_answer(self.state, key, body, content_type, timing, urgent)
            except StarletteHTTPException as exc:
                request = Request(scope, receive, send)
                handler = self.exception_handlers.get(StarletteHTTPException, problems.http_error)
                answered = handler(request, exc)
                response = await answered if inspect.isawaitable(answered) else answered
                status = response.status_code
                response.raw_headers.append((b"x-request-id", request_id.encode()))
                await response(scope, receive, send)
                return
            except ClientDisconnect:  # the client hung up mid-body: nobody to answer, nothing was queued
                status = CLIENT_CLOSED
                return
            except Exception:  # as Starlette's ServerErrorMiddleware: a plain 500, then raised for the server's log
                await _send(send, 500, b"Internal Server Error", b"text/plain; charset=utf-8", request_id)
                raise
            status = 200
            await _send(send, 200, body, b"application/json", request_id)
            if len(last_answers) >= _ANSWERED_MAX:  # connections come and go: forget them now and then
                last_answers.clear()
            last_answers[client] = time.perf_counter()
        finally:
            log_request(scope, status, started, request_id, timing, COMMANDS_PATH)


WAITING_CALLER_S = 0.001
_ANSWERED_MAX = 10_000
CLIENT_CLOSED = 499  # the request log's status for a client that went away before its answer (nginx's)


async def read_body(receive: Any, content_length: str | None, limit: int) -> bytes:
    """The request body (what Request.body() reads), from the ASGI messages: 413 `body_too_large`
    as soon as it is known to exceed `limit` (from Content-Length, or while reading), and
    ClientDisconnect when the client goes away first."""
    if content_length is not None and content_length.strip().isdigit() and int(content_length) > limit:
        raise _too_large(limit)
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnect()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise _too_large(limit)
        chunks.append(chunk)
        if not message.get("more_body", False):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _too_large(limit: int) -> IntakeError:
    # Connection: close: the rest of the body is not read, and the connection cannot carry another request.
    return IntakeError(ErrorCode.BODY_TOO_LARGE, f"the body is larger than {limit} bytes (--max-body-bytes)",
                       headers={"Connection": "close"})


def _headers(headers: list[tuple[bytes, bytes]]) -> tuple[str | None, str | None, str | None]:
    """The Authorization, Content-Type and Content-Length values (each the first), as Starlette
    decodes them (latin-1), in one pass over the request's headers (names are lower case in ASGI)."""
    authorization = content_type = content_length = None
    for name, value in headers:
        if name == b"authorization":
            if authorization is None:
                authorization = value.decode("latin-1")
        elif name == b"content-type":
            if content_type is None:
                content_type = value.decode("latin-1")
        elif name == b"content-length" and content_length is None:
            content_length = value.decode("latin-1")
    return authorization, content_type, content_length


async def _send(send: Any, status: int, body: bytes, content_type: bytes, request_id: str) -> None:
    # On uvicorn with ops/service/http.py's protocol, the status line, headers and body go out in one write.
    one_write = getattr(getattr(send, "__self__", None), "transport", None)
    if type(one_write) is OneWrite:
        one_write.hold()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-length", str(len(body)).encode()), (b"content-type", content_type),
        (b"x-request-id", request_id.encode())]})
    await send({"type": "http.response.body", "body": body})


async def commands_response(request: Request) -> Response:
    """The answer to POST /v1/commands on FastAPI's route (the fast path's twin)."""
    state = request.app.state
    key = await checked_key(state.keys, bearer_credentials(request.headers.get("authorization")), ROLE_WRITE)
    content_type = request.headers.get("content-type", "")
    media_type(content_type)
    try:
        body = await read_body(request.receive, request.headers.get("content-length"), state.settings.max_body_bytes)
    except ClientDisconnect:
        return Response(status_code=CLIENT_CLOSED)  # never sent: the client is gone
    body = await commands_answer(state, key, body, content_type, request.scope.get("state", {}).get("trace"))
    return Response(body, media_type="application/json")


async def commands_answer(state: Any, key: ApiKey, body: bytes, content_type: str,
                          timing: dict[str, Any] | None, urgent: bool = False) -> bytes:
    """One result per command, after their commit, as the JSON body of the answer (the
    caller checked the key first: an unknown caller's body is never read)."""
    if len(body) <= INLINE_SPLIT_BYTES_MAX:
        raws, answers = intake(key, body, content_type)
    else:  # off the request loop: the other clients' requests go on meanwhile
        raws, answers = await asyncio.get_running_loop().run_in_executor(_SPLITTER, intake, key, body, content_type)
    allowed = [i for i, answer in enumerate(answers) if answer is None]
    if allowed:
        if not state.health.ready:  # known down: answered now, nothing queued (so nothing applied later)
            raise store_unavailable(f"the store is unreachable: {state.health.status.error}")
        if timing is not None:
            timing["q"] = time.perf_counter()
        try:
            # The committer ends the wait after store_timeout_s (its `answer_within_s`): TimeoutError,
            # and the writer skips the answer of a caller that went away.
            results = await state.committer.results([raws[i] for i in allowed], timing, urgent)
        except TimeoutError:
            raise store_unavailable(f"the store did not answer within {state.settings.store_timeout_s:g} s; "
                                    "resend the same commands (what was recorded answers duplicate)") from None
        except Exception as exc:
            raise store_unavailable(f"the store failed: {str(exc)[:200]}") from exc
        if timing is not None:
            timing.update(r=time.perf_counter(), n=len(allowed), id=results[0].command_id if results else None)
        for i, result in zip(allowed, results):
            answers[i] = result.as_dict()
    # Text echoed from a request is `storable` (a lone surrogate escaped), which orjson can write.
    return orjson.dumps(answers)


def intake(key: ApiKey, body: bytes, content_type: str) -> tuple[list[bytes], list[dict[str, Any] | None]]:
    """The commands as sent, and the answers known before the ledger sees them (scope refusals)."""
    commands = split_body(body, content_type)
    raws = [raw for raw, _ in commands]
    if not key.tables and not key.operators:
        return raws, [None] * len(raws)
    return raws, [scope_refusal(key, raw, value) for raw, value in commands]


def scope_refusal(key: ApiKey, raw: str | bytes, data: Any = None) -> dict[str, Any] | None:
    """The `table_not_allowed` / `operator_not_allowed` result for a command outside the key's
    tables or operators (nothing is recorded). `data`: the command already parsed (a JSON
    array's element), else parsed here."""
    if not key.tables and not key.operators:
        return None
    if data is None:
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError):  # too deep or not JSON: the ledger refuses it as bad_command
            return None
    if not isinstance(data, dict):
        return None
    cid = data.get("command_id")
    cid = storable(cid) if isinstance(cid, str) else None
    found = _outside_tables(key, data, cid) or _outside_operators(key, data, cid)
    if found is None:
        return None
    metrics.COMMANDS.labels("refused", str(found.code)).inc()
    return found.as_dict()


def _outside_tables(key: ApiKey, data: dict[str, Any], cid: str | None) -> Result | None:
    """A command of another table, or one naming no table (`configure_operator`: the studio's
    own, never a table key's), for a key limited to tables."""
    if not key.tables:
        return None
    table, tables = data.get("table_id"), ", ".join(key.tables)
    kind = data.get("type")
    if isinstance(table, str) and key.allows_table(table):
        return None
    if not isinstance(table, str) and kind != "configure_operator":  # no table, no type known: the ledger refuses it
        return None
    named = storable(table) if isinstance(table, str) else f"{kind} (it names no table)"
    return Result(status="refused", command_id=cid, code=RefusalCode.TABLE_NOT_ALLOWED,
                  message=RefusalCode.TABLE_NOT_ALLOWED.message(tables=tables, table_id=named))


# The commands that name an operator: a bet's, a player's decision or pause (with `player_id`),
# an operator's configuration. Absent on a bet or player: the default operator.
_OPERATOR_COMMANDS = ("place_bet", "decide", "pause", "configure_operator")


def _outside_operators(key: ApiKey, data: dict[str, Any], cid: str | None) -> Result | None:
    """A command of another operator's player (or configuring another operator), for a key
    limited to operators."""
    kind = data.get("type")
    if not key.operators or kind not in _OPERATOR_COMMANDS:
        return None
    if kind in ("decide", "pause") and data.get("player_id") is None:
        return None  # the table's or the box's, no player's
    operator = data.get("operator_id")
    operator = DEFAULT_OPERATOR_ID if operator is None else operator
    if isinstance(operator, str) and key.scope.allows(operator):
        return None
    return Result(status="refused", command_id=cid, code=RefusalCode.OPERATOR_NOT_ALLOWED,
                  message=RefusalCode.OPERATOR_NOT_ALLOWED.message(operators=", ".join(key.operators),
                                                                   operator_id=storable(str(operator))))


def app_from_env() -> FastAPI:
    """The uvicorn factory (`ledger serve` passes its settings through the environment to every worker)."""
    ledger_logging.configure(os.environ.get("LEDGER_LOG_LEVEL", "info"), json_output=True)
    return create_app()
