"""POST /v1/commands, the studio's feed. Its body is read by the service's own bounded
parser (ops/service/intake.py), never by FastAPI: the schema below documents it (an array
of the feed's commands, the union discriminated by `type` that `ledger schema` prints,
or NDJSON lines of them) without FastAPI parsing the raw body. The route answers through
the app's fast path (ops/service/app.py, LedgerAPI); this declaration is its twin."""
from __future__ import annotations

from typing import Any, Literal

from fastapi import FastAPI, Request
from fastapi.responses import Response
from fastapi.routing import APIRoute
from pydantic import BaseModel

from domain.errorcodes import ErrorCode
from domain.refusals import RefusalCode
from ops.service.intake import COMMANDS_PER_REQUEST_MAX, NDJSON
from ops.service.problems import documented

COMMANDS_PATH = "/v1/commands"
COMMAND_SCHEMA_NAME = "Command"  # components/schemas: the feed's command union (ledger/commands.py)
CommandStatus = Literal["accepted", "duplicate", "refused", "conflict"]  # ledger.batching.Result


class CommandResult(BaseModel):
    """One command's answer, in the order sent (docs/feed.md)."""

    status: CommandStatus
    command_id: str | None
    code: RefusalCode | None  # refused, conflict (concurrency_conflict), a duplicate of one of those
    message: str
    round_id: str | None
    events: list[str]
    original_status: CommandStatus | None  # a duplicate's first delivery


COMMANDS_BODY: dict[str, Any] = {
    "required": True,
    "content": {
        "application/json": {"schema": {"type": "array", "maxItems": COMMANDS_PER_REQUEST_MAX,
                                        "items": {"$ref": f"#/components/schemas/{COMMAND_SCHEMA_NAME}"}}},
        NDJSON: {"schema": {"type": "string", "description": f"one JSON {COMMAND_SCHEMA_NAME} per line"}},
    },
}


async def post_commands(request: Request) -> Response:
    answer: Response = await request.app.commands_response(request)  # LedgerAPI's (ops/service/app.py)
    return answer


def install(api: FastAPI) -> APIRoute:
    """The route, on the app itself (the fast path names it in the request's scope, as the router
    would, and the tests reach its handler there)."""
    api.post(COMMANDS_PATH, tags=["studio"], summary="apply feed commands; answered after they are committed",
             description="One result per command, in order. A command the ledger refuses is answered in its result "
                         "(status `refused`, a refusal code, docs/refusals.md), never as an HTTP error: a 4xx "
                         "refuses the whole request and nothing of it was applied.",
             response_model=list[CommandResult],
             openapi_extra={"requestBody": COMMANDS_BODY, "security": [{"HTTPBearer": []}]},  # checked_key
             responses=documented(ErrorCode.UNAUTHORIZED, ErrorCode.FORBIDDEN, ErrorCode.BODY_TOO_LARGE,
                                  ErrorCode.TOO_MANY_COMMANDS, ErrorCode.UNSUPPORTED_MEDIA_TYPE,
                                  ErrorCode.BODY_NOT_JSON, ErrorCode.BODY_NOT_ARRAY, ErrorCode.STORE_UNAVAILABLE),
             )(post_commands)
    return next(r for r in api.routes if isinstance(r, APIRoute) and r.path == COMMANDS_PATH)
