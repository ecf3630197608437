"""Regenerate the golden files (run only on purpose, and say why in the commit):

    .venv/bin/python -m tests.store.golden.make_golden
    .venv/bin/python -m tests.store.golden.make_golden --events-only   # keep the feed and store-v0

`--events-only` is for an intended change of what new events record (issue 20: the
settlement explanations' wording) while `store-v0.db.gz` stays the earlier version's
store that later versions must still read and replay cleanly.

- `day.feed.jsonl.gz`: a seeded simulated studio day with faults (the input);
- `day.events.jsonl.gz`: every stored event it gives, decoded from the raw rows
  (server timestamp left out: it is the wall clock), in store order, plus every
  command's result;
- `store-v0.db.gz`: the SQLite store written by the version that made the files,
  kept so that later versions prove they still read it (upcast what changes).
"""
from __future__ import annotations

import gzip
import json
import sqlite3
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

HERE = Path(__file__).resolve().parent
FEED = HERE / "day.feed.jsonl.gz"
EVENTS = HERE / "day.events.jsonl.gz"
STORE = HERE / "store-v0.db.gz"
SIM_ARGS = {"tables": 10, "rounds": 30, "seed": 20261123, "fault_rate": 80}


def feed_lines() -> list[bytes]:
    with gzip.open(FEED, "rb") as f:
        return [line for line in f.read().splitlines(keepends=True) if line.strip()]


def _plain(value: Any) -> Any:
    """The library's JSON transcodings ({"_type_": ..., "_data_": ...}) as their data."""
    if isinstance(value, dict):
        if set(value) == {"_type_", "_data_"}:
            return _plain(value["_data_"])
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def decoded_events(store: str) -> list[dict[str, Any]]:
    """The stored events straight from the table, independent of the code's readers:
    `store` is a SQLite file path or a PostgreSQL store URL (`...?schema=name`)."""
    rows = _pg_rows(store) if store.startswith(("postgresql://", "postgres://")) else _sqlite_rows(store)
    out = []
    for originator_id, version, topic, state in rows:
        fields = _plain(json.loads(state))
        fields.pop("timestamp", None)
        fields.pop("originator_id", None)
        fields.pop("originator_version", None)
        out.append({"id": str(originator_id), "v": version, "topic": topic, "fields": fields})
    return out


def _sqlite_rows(sqlite_path: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(sqlite_path)
    try:
        return conn.execute(
            "SELECT originator_id, originator_version, topic, state FROM stored_events ORDER BY rowid"
        ).fetchall()
    finally:
        conn.close()


def _pg_rows(url: str) -> list[tuple[Any, ...]]:
    """The same columns from the PostgreSQL events table, in notification order; the
    uuid column as SQLite holds it (32 hex digits)."""
    import psycopg

    p = urlparse(url)
    schema = parse_qs(p.query)["schema"][0]
    with psycopg.connect(dbname=p.path.lstrip("/"), host=p.hostname, port=p.port or 5432,
                         user=p.username or "postgres", password=p.password or None) as conn:
        rows = conn.execute(
            f'SELECT originator_id, originator_version, topic, state FROM "{schema}".ledger_events '
            "ORDER BY notification_id"
        ).fetchall()
    return [(oid.hex, version, topic, bytes(state)) for oid, version, topic, state in rows]


def result_dicts(results: list[Any]) -> list[dict[str, Any]]:
    return [
        {"command_id": r.command_id, "status": r.status, "code": r.code, "round_id": r.round_id,
         "events": list(r.events)}
        for r in results
    ]


def main(events_only: bool = False) -> None:
    from ledger.store import open_app
    from ops.sim.simulator import simulate

    if not events_only:
        _write_gz(FEED, b"".join(simulate(**SIM_ARGS)))
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "ledger.db"
        app = open_app(f"sqlite:///{db}")
        results = app.ingest(feed_lines())
        app.close()
        lines = [json.dumps({"results": result_dicts(results)}, sort_keys=True)]
        lines += [json.dumps(event, sort_keys=True) for event in decoded_events(str(db))]
        _write_gz(EVENTS, ("\n".join(lines) + "\n").encode("utf-8"))
        if not events_only:
            _write_gz(STORE, db.read_bytes())


def _write_gz(path: Path, data: bytes) -> None:
    path.write_bytes(gzip.compress(data, mtime=0))


if __name__ == "__main__":
    import sys

    main(events_only="--events-only" in sys.argv[1:])
