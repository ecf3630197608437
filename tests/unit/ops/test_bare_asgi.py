"""The bare ASGI app live_bench runs beside `ledger serve` (ops/bench/bare_asgi.py) reads the whole
body and answers one accepted result, the form live_bench counts as answered (else every request
of the floor's step would count as an error)."""
from __future__ import annotations

import asyncio
import json
from typing import Any

from ops.bench.bare_asgi import app


def test_answers_one_accepted_result_after_the_whole_body() -> None:
    chunks = [{"type": "http.request", "body": b'{"a":', "more_body": True},
              {"type": "http.request", "body": b"1}", "more_body": False}]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return chunks.pop(0)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app({"type": "http", "method": "POST", "path": "/v1/commands"}, receive, send))
    assert not chunks  # the body was read to its end
    assert sent[0]["status"] == 200
    body = sent[1]["body"]
    assert dict(sent[0]["headers"])[b"content-length"] == str(len(body)).encode()
    assert json.loads(body)[0]["status"] == "accepted"
