"""The request log line, written directly (ops/service/logs.py `write_line`), is the line structlog's
JSON chain wrote before (add_log_level, TimeStamper iso UTC, JSONRenderer): same keys in the same
order, same values, the timestamp in the same form; log readers see no change."""
from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

import orjson
import structlog

from ops.service.logs import log_request, write_line

FIELDS = {"request_id": "0123abcd00000001", "method": "POST", "path": "/v1/commands", "route": "/v1/commands",
          "status": 200, "ms": 1.25, "client": "127.0.0.1"}
STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?Z$")


def _structlog_line(fields: dict[str, Any]) -> str:
    lines: list[str] = []

    class Out:
        def msg(self, message: str) -> None:
            lines.append(message)

        info = msg

    log = structlog.wrap_logger(Out(), processors=[
        structlog.processors.add_log_level, structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.JSONRenderer(serializer=lambda obj, **kw: orjson.dumps(obj, **kw).decode())])
    log.info("request", **fields)
    return lines[0]


def test_the_line_is_structlogs(capsys) -> None:
    before = datetime.now(UTC)
    write_line(dict(FIELDS))
    ours = capsys.readouterr().err
    assert ours.endswith("\n") and ours.count("\n") == 1
    theirs = json.loads(_structlog_line(dict(FIELDS)))
    mine = json.loads(ours)
    assert list(mine) == list(theirs)  # keys in the same order
    assert {k: v for k, v in mine.items() if k != "timestamp"} == {k: v for k, v in theirs.items() if k != "timestamp"}
    assert STAMP.match(mine["timestamp"]) and STAMP.match(theirs["timestamp"])
    assert before <= datetime.fromisoformat(mine["timestamp"].replace("Z", "+00:00")) <= datetime.now(UTC)


def test_log_request_writes_one_line(capsys) -> None:
    scope = {"method": "GET", "path": "/healthz", "client": ("10.0.0.1", 5)}
    log_request(scope, 200, 0.0, "feedbeef00000002", None)
    line = json.loads(capsys.readouterr().err)
    assert [line[k] for k in ("request_id", "method", "path", "route", "status", "client", "event", "level")] == [
        "feedbeef00000002", "GET", "/healthz", "unmatched", 200, "10.0.0.1", "request", "info"]
