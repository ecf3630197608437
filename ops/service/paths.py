"""Ids in URL paths, for the API and the console alike.

The feed's ids may hold `/` and may be `.` or `..` (ledger/commands.py). A link carries an
id as one path segment (`path_segment`): every reserved character escaped, so `a/b` is
`a%2Fb`. uvicorn decodes the whole path before routing, which would make `a%2Fb` two
segments; `EscapedSlashes` rebuilds the path from the raw one, each segment decoded but
its `/` and `%` kept escaped, and the `{name:id}` convertor (registered here) takes one such
segment and decodes it. `/ui/rounds/{ref:id}/proof` is then never confused by an id
`x/proof`. Clients and browsers remove `.` and `..` segments, browsers `%2E` ones too, so an
id of dots alone is carried double-escaped, `%252E` a dot; the convertor reads that form
too (an id never holds `%`).

No path or query parameter may hold a character domain/text.py refuses (a control
character, a bidirectional override): `clean_parameters`, a dependency of every route,
answers 422 before the route reads anything (PostgreSQL text cannot hold a NUL at all).
"""
from __future__ import annotations

import re
from collections.abc import MutableMapping
from typing import Any
from urllib.parse import quote, unquote, unquote_to_bytes

from fastapi import Request
from starlette.convertors import Convertor, register_url_convertor

from domain.errorcodes import ErrorCode
from domain.text import char_name, escaped, hostile_at
from ops.service.problems import ProblemItem, ServiceError

_DOT_ESCAPED = "%252E"  # a dot as a link carries it in an id of dots alone
_DOTS_DECODED = re.compile(r"(?:%2E)+", re.IGNORECASE)  # that form after the server's one decoding


def path_segment(text: str) -> str:
    """An id as one path segment of a link, which every client and browser keeps as it is."""
    if text and text.strip(".") == "":
        return _DOT_ESCAPED * len(text)
    return quote(text, safe="")


class IdConvertor(Convertor[str]):
    """`{name:id}`: one segment, as EscapedSlashes leaves it, decoded."""

    regex = "[^/]+"

    def convert(self, value: str) -> str:
        text = unquote(value)
        return "." * (len(text) // 3) if _DOTS_DECODED.fullmatch(text) else text

    def to_string(self, value: str) -> str:
        return path_segment(value)


register_url_convertor("id", IdConvertor())


class EscapedSlashes:
    """ASGI middleware: the request's path with each segment decoded but its `%2F` (and `%25`)
    kept, so that an escaped slash stays inside its segment for the router."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        raw = scope.get("raw_path")
        if scope["type"] == "http" and raw and b"%" in raw:  # without an escape the server's path is the same
            scope["path"] = segments_decoded(raw)  # in place: the router's additions reach the request log
        await self.app(scope, receive, send)


def segments_decoded(raw: bytes) -> str:
    """`/a%2Fb/c%20d` -> `/a%2Fb/c d`: each segment decoded as the server decodes the path
    (UTF-8, bad bytes replaced), then its `%` and `/` escaped again."""
    return "/".join(unquote_to_bytes(part).decode("utf-8", "replace").replace("%", "%25").replace("/", "%2F")
                    for part in raw.split(b"/"))


def clean_parameters(request: Request) -> None:
    """422 `request_invalid` naming each path or query parameter that holds a character
    domain/text.py refuses (a control character, a bidirectional override, a separator)."""
    params = [(f"path.{name}", value) for name, value in request.path_params.items() if isinstance(value, str)]
    params += [(f"query.{escaped(name)}", name + value) for name, value in request.query_params.multi_items()]
    items = [ProblemItem(location=where, message=f"holds {char_name(text[at])}")
             for where, text in params if (at := hostile_at(text)) is not None]
    if items:
        raise ServiceError(ErrorCode.REQUEST_INVALID, "; ".join(f"{i.location}: {i.message}" for i in items[:3]),
                           errors=items)
