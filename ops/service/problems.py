"""Every error of the live service as an RFC 9457 problem (`application/problem+json`).

A problem's `code` is a stable snake_case code from one catalogue: domain/errorcodes.py
(`ErrorCode`: the command line's and the service's) or, where the service refuses what the
ledger refuses too (a bad round reference), domain/refusals.py. `type` names the code
(`urn:casino-ledger:error:CODE`), `title` is the status's reason phrase, `detail` says what
was wrong with this request, `errors` (where it helps) names each offending parameter,
file or command, and `instance` names this occurrence: `urn:casino-ledger:request:ID`, the
id the answer's `X-Request-Id` header and the request log carry (absent from the 400, 408
and 431 the protocol layer writes before a request exists). The handlers here render FastAPI's own errors (validation, 404, 405) the
same way; ops/service/http.py renders its 408 and 431 with `problem_bytes`.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from domain.errorcodes import ErrorCode
from domain.refusals import RefusalCode
from ops.service.logs import REQUEST_ID

PROBLEM_JSON = "application/problem+json"
TYPE_PREFIX = "urn:casino-ledger:error:"
INSTANCE_PREFIX = "urn:casino-ledger:request:"
# The code of an HTTPException raised without one (Starlette's router, FastAPI's security classes).
_BY_STATUS = {400: ErrorCode.BAD_REQUEST, 401: ErrorCode.UNAUTHORIZED, 403: ErrorCode.FORBIDDEN, 404: ErrorCode.NOT_FOUND,
              405: ErrorCode.METHOD_NOT_ALLOWED, 413: ErrorCode.BODY_TOO_LARGE,
              415: ErrorCode.UNSUPPORTED_MEDIA_TYPE, 422: ErrorCode.REQUEST_INVALID,
              503: ErrorCode.STORE_UNAVAILABLE}
ERRORS_MAX = 50  # items of `errors` in one problem (a body of 10,000 bad fields names the first 50)


class ProblemItem(BaseModel):
    """One offending part of the request."""

    location: str = Field(description="where: `query.last`, `path.round_ref`, `body.wallet`, `header.content-type`")
    message: str


class Problem(BaseModel):
    """An RFC 9457 problem. `code` is stable (the catalogue: domain/errorcodes.py, domain/refusals.py)."""

    type: str = Field(description="urn:casino-ledger:error:CODE")
    title: str = Field(description="the HTTP status's reason phrase")
    status: int
    detail: str = Field(description="what was wrong with this request")
    code: str = Field(pattern="^[a-z][a-z0-9_]*$", description="a stable snake_case code")
    errors: list[ProblemItem] | None = Field(default=None, description="each offending parameter, file or command")
    instance: str | None = Field(default=None, description="this occurrence: urn:casino-ledger:request:ID, the "
                                 "X-Request-Id of the answer and the request log's request_id")


class ServiceError(HTTPException):
    """A refused request: its status (the code's), a stable code and what was wrong."""

    def __init__(self, code: ErrorCode | RefusalCode, detail: str, *, status: int | None = None,
                 headers: dict[str, str] | None = None, errors: list[ProblemItem] | None = None) -> None:
        status = status or (code.http_status if isinstance(code, ErrorCode) else None) or 422
        super().__init__(status, detail, headers=headers)
        self.code = code
        self.errors = errors


def problem(status: int, code: str, detail: str, errors: list[ProblemItem] | None = None,
            request_id: str | None = None) -> dict[str, Any]:
    """The problem document (a plain dict: the hot path renders it without a model)."""
    body: dict[str, Any] = {"type": TYPE_PREFIX + code, "title": _title(status), "status": status,
                            "detail": detail, "code": code}
    if errors:
        body["errors"] = [e.model_dump() for e in errors[:ERRORS_MAX]]
    if request_id is not None:
        body["instance"] = INSTANCE_PREFIX + request_id
    return body


def request_id_of(request: Request) -> str | None:
    """The id the request log gave this request (ops/service/logs.py keeps it in the scope's state)."""
    state = request.scope.get("state")
    found = state.get(REQUEST_ID) if isinstance(state, dict) else None
    return found if isinstance(found, str) else None


def problem_bytes(status: int, code: str, detail: str) -> bytes:
    return json.dumps(problem(status, code, detail)).encode()


def problem_response(status: int, code: str, detail: str, *, request: Request | None = None,
                     headers: Mapping[str, str] | None = None, errors: list[ProblemItem] | None = None) -> JSONResponse:
    request_id = request_id_of(request) if request is not None else None
    return JSONResponse(problem(status, code, detail, errors, request_id), status_code=status, headers=headers,
                        media_type=PROBLEM_JSON)


def _title(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


async def http_error(request: Request, exc: Exception) -> Response:
    """An HTTPException (ours with its code; Starlette's and FastAPI's by their status) as a problem;
    a 3xx one as the redirect it is, without a body."""
    if not isinstance(exc, StarletteHTTPException):
        return await internal_error(request, exc)
    if 300 <= exc.status_code < 400:  # a redirect (the console's "sign in first") is no error: no problem body
        return Response(status_code=exc.status_code, headers=exc.headers)
    code = getattr(exc, "code", None) or _BY_STATUS.get(exc.status_code, ErrorCode.INTERNAL)
    detail = exc.detail if isinstance(exc.detail, str) else json.dumps(exc.detail, default=str)
    if exc.status_code == 404 and code == ErrorCode.NOT_FOUND:
        detail = f"no route {request.url.path}"
    elif exc.status_code == 405:
        detail = f"{request.method} is not a method of {request.url.path}"
    return problem_response(exc.status_code, code, detail, request=request, headers=exc.headers,
                            errors=getattr(exc, "errors", None))


async def validation_error(request: Request, exc: Exception) -> Response:
    """FastAPI's request validation (path, query, form) as 422 `request_invalid`, each error named."""
    if not isinstance(exc, RequestValidationError):
        return await internal_error(request, exc)
    items = [ProblemItem(location=".".join(str(part) for part in error.get("loc", ())), message=str(error.get("msg")))
             for error in exc.errors()]
    detail = "; ".join(f"{i.location}: {i.message}" for i in items[:3]) or "the request is not valid"
    return problem_response(422, ErrorCode.REQUEST_INVALID, detail, request=request, errors=items)


async def internal_error(request: Request, exc: Exception) -> Response:
    """A bug: 500 `internal_error` (the traceback goes to the server's log, never to the client)."""
    # Starlette answers a bug outside the middleware that stamps X-Request-Id: stamped here,
    # so the client can quote the id under which the log keeps the traceback.
    request_id = request_id_of(request)
    return problem_response(500, ErrorCode.INTERNAL, "the service failed; its log says why", request=request,
                            headers={"X-Request-Id": request_id} if request_id else None)


def install(api: FastAPI) -> None:
    api.add_exception_handler(StarletteHTTPException, http_error)
    api.add_exception_handler(RequestValidationError, validation_error)
    api.add_exception_handler(Exception, internal_error)


def documented(*codes: ErrorCode | RefusalCode) -> dict[int | str, dict[str, Any]]:
    """The `responses` of a route: each error status it answers, with the codes it may carry,
    as a Problem in application/problem+json."""
    by_status: dict[int, list[str]] = {}
    for code in codes:
        status = (code.http_status if isinstance(code, ErrorCode) else None) or 422
        by_status.setdefault(status, []).append(code.value)
    return {status: {"description": f"{_title(status)}: " + ", ".join(f"`{c}`" for c in found),
                     "model": Problem, "content": {PROBLEM_JSON: {"schema": {"$ref": "#/components/schemas/Problem"}}}}
            for status, found in sorted(by_status.items())}


_SERVICE_MEANING = {ErrorCode.INTERNAL: "a bug: the service's log says what failed"}  # its meaning speaks of --debug


def codes_markdown() -> str:
    """The service's codes as a table (the OpenAPI description carries it)."""
    served = sorted((c for c in ErrorCode if c.http_status), key=lambda c: c.http_status or 0)
    rows = [f"| `{c.value}` | {c.http_status} | {_SERVICE_MEANING.get(c, c.meaning)} |" for c in served]
    rows.insert(next(i for i, c in enumerate(served) if c.http_status == 422),
                f"| `{RefusalCode.BAD_ROUND_REF.value}` | 422 | {RefusalCode.BAD_ROUND_REF.meaning} |")
    return "\n".join(["| code | status | meaning |", "|---|---|---|", *rows])
