"""The read routes: the same functions the read commands of the command line call.

Plain `def` routes (they call the synchronous store; FastAPI runs them in its
thread pool). Views are caught up before they answer, as on the command line;
one catch-up at a time per process (a second runner would only roll back).
"""
from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from datetime import date
from pathlib import Path
from typing import Annotated, Any

from fastapi import FastAPI, File, HTTPException, Query, Request, UploadFile
from fastapi.responses import HTMLResponse, Response, StreamingResponse

from domain.errors import Refusal
from ledger.eventlog import EventLog
from ops.service.auth import Auditor, Reader
from projections import queries

UPLOAD_BYTES_MAX = 200 * 1024 * 1024


def _json(value: Any) -> Response:
    return Response(json.dumps(value, default=str), media_type="application/json")


def projection_lag(log: EventLog) -> int:
    """Events recorded but not yet folded into every view (all of them before the first catch-up)."""
    from projections.sql import Db

    head = log.head()
    db = Db.for_store(log.backend)
    try:
        rows = db.query("SELECT MIN(position) FROM proj_tracking")
    except Exception:  # no views yet
        return head
    finally:
        db.close()
    low = rows[0][0] if rows and rows[0][0] is not None else 0
    return max(0, head - int(low))


@contextmanager
def views(request: Request) -> Iterator[Any]:
    from projections.runner import Projector

    with request.app.state.views_lock:
        projector = Projector(request.app.state.reader, gc_off_per_run=False)  # the collector is the process's
        try:
            projector.catch_up()
            yield projector.db
        finally:
            projector.close()


def read_routes(api: FastAPI) -> None:
    not_found: dict[int | str, dict[str, Any]] = {404: {"description": "no such round"}, 422: {"description": "bad round reference"}}

    @api.get("/v1/rounds/{round_ref}", tags=["reads"], summary="one round (TABLE#NO, URL-encoded, or UUID)",
             responses=not_found)
    def get_round(round_ref: str, request: Request, key: Reader) -> Response:
        round_id = _round_id(round_ref)
        detail = queries.round_detail(request.app.state.reader, round_id, round_ref)
        if detail is None:
            raise HTTPException(404, f"no round {round_ref} in the store")
        return _json(asdict(detail))

    @api.get("/v1/rounds/{round_ref}/replay", tags=["reads"], summary="the round replayed, settlement recomputed",
             responses=not_found)
    def get_replay(round_ref: str, request: Request, key: Reader,
                   at: Annotated[int | None, Query(ge=1, le=100_000)] = None) -> Response:
        from projections.replay_view import round_document

        round_id = _round_id(round_ref)
        document = round_document(request.app.state.reader, round_id, at=at)
        if document is None:
            raise HTTPException(404, f"no events for {round_ref} (id {round_id})")
        return _json(document)

    @api.get("/v1/rounds/{round_ref}/replay.html", tags=["reads"], summary="the dispute page of a round",
             responses=not_found, response_class=HTMLResponse)
    def get_replay_page(round_ref: str, request: Request, key: Reader) -> Response:
        from projections.replay_page import RoundNotFound, render_round_html

        round_id = _round_id(round_ref)
        try:
            return HTMLResponse(render_round_html(request.app.state.reader, str(round_id)))
        except RoundNotFound:
            raise HTTPException(404, f"no events for {round_ref} (id {round_id})") from None

    @api.get("/v1/balances", tags=["reads"], summary="account balances and funds on game")
    def get_balances(request: Request, key: Reader, account: Annotated[list[str] | None, Query()] = None,
                     kind: Annotated[str | None, Query(pattern="^(player|round|house)$")] = None,
                     nonzero: bool = False) -> Response:
        from projections.balances import balance_rows, balance_totals

        with views(request) as db:
            return _json({"accounts": balance_rows(db, account or [], kind, nonzero),
                          "sum_by_currency": balance_totals(db)})

    @api.get("/v1/refunds", tags=["reads"], summary="refunded bets and totals by day and cause")
    def get_refunds(request: Request, key: Reader,
                    day_from: Annotated[str | None, Query(alias="from", pattern=r"^\d{4}-\d{2}-\d{2}$")] = None,
                    day_to: Annotated[str | None, Query(alias="to", pattern=r"^\d{4}-\d{2}-\d{2}$")] = None) -> Response:
        from projections.refunds import refund_lines, refund_totals

        for day in (day_from, day_to):
            try:
                date.fromisoformat(day) if day else None
            except ValueError:  # the pattern lets 2026-13-01 through: days are now turned into instants
                raise HTTPException(422, f"{day!r} is not a calendar day") from None
        with views(request) as db:
            return _json({"refunds": refund_lines(db, day_from, day_to),
                          "totals": refund_totals(db, day_from, day_to)})

    @api.get("/v1/recall/{player}", tags=["reads"], summary="a player's last N rounds")
    def get_recall(player: str, request: Request, key: Reader,
                   last: Annotated[int, Query(ge=10, le=1000)] = 10) -> Response:
        from projections.recall import RECALL_LAST_MAX, RECALL_LAST_MIN, recall_rounds

        if not RECALL_LAST_MIN <= last <= RECALL_LAST_MAX:
            raise HTTPException(422, f"last must be {RECALL_LAST_MIN}..{RECALL_LAST_MAX}")
        with views(request) as db:
            return _json({"player_id": player, "rounds": recall_rounds(db, player, last)})

    @api.get("/v1/ggr", tags=["reads"], summary="gross gaming revenue per table, game and day")
    def get_ggr(request: Request, key: Reader) -> Response:
        from projections.ggr import ggr_rows

        with views(request) as db:
            return _json({"rows": ggr_rows(db)})

    @api.get("/v1/rejections", tags=["reads"], summary="refused commands, oldest first")
    def get_rejections(request: Request, key: Reader, code: str | None = None,
                       after: Annotated[int, Query(ge=0, le=2**62)] = 0,
                       limit: Annotated[int, Query(ge=1, le=1000)] = 1000) -> Response:
        rows = request.app.state.reader.rejections(after_id=after, limit=limit)
        return _json([r for r in rows if not code or r["code"] == code])

    @api.post("/v1/reconcile", tags=["reads"], summary="reconcile an operator wallet CSV with the ledger",
              responses={422: {"description": "malformed wallet file"}})
    def post_reconcile(request: Request, key: Reader, wallet: Annotated[UploadFile, File()]) -> Response:
        from projections.reconcile import WalletFormatError, expected_movements, read_wallet, reconcile

        with tempfile.TemporaryDirectory() as tmp:
            path = _save(wallet, Path(tmp) / "wallet.csv")
            try:
                rows = read_wallet(path)
            except (WalletFormatError, UnicodeDecodeError, ValueError) as exc:
                raise HTTPException(422, str(exc).replace(str(path), "wallet")) from None
        report = reconcile(rows, expected_movements(request.app.state.reader.records()))
        return _json(report.as_dict())

    @api.get("/v1/audit/export", tags=["audit"], summary="the hash-chained audit trail as events.jsonl (streamed)")
    def get_audit_export(request: Request, key: Auditor,
                         from_position: Annotated[int | None, Query(alias="from", ge=1, le=2**62)] = None,
                         to_position: Annotated[int | None, Query(alias="to", ge=1, le=2**62)] = None) -> Response:
        return StreamingResponse(_export_lines(request.app.state.reader, from_position, to_position),
                                 media_type="application/x-ndjson")

    @api.post("/v1/audit/verify", tags=["audit"], summary="verify an export (events.jsonl, events.csv, manifest.json)")
    def post_audit_verify(request: Request, key: Auditor, events_jsonl: Annotated[UploadFile, File()],
                          manifest_json: Annotated[UploadFile, File()],
                          events_csv: Annotated[UploadFile | None, File()] = None,
                          against_store: bool = False) -> Response:
        from projections.audit_export import EVENTS_CSV, EVENTS_JSONL, MANIFEST, verify_against_store, verify_files

        with tempfile.TemporaryDirectory() as tmp:
            _save(events_jsonl, Path(tmp) / EVENTS_JSONL)
            _save(manifest_json, Path(tmp) / MANIFEST)
            if events_csv is not None:
                _save(events_csv, Path(tmp) / EVENTS_CSV)
            verified = verify_files(tmp)
        findings = list(verified.findings)
        last = verified.manifest.get("last_position")
        if against_store and verified.manifest:
            store = request.app.state.reader.stored(1, last, page_size=5000) if isinstance(last, int) else []
            findings += verify_against_store(verified, store)
        return _json({"count": verified.manifest.get("count"), "head_hash": verified.manifest.get("head_hash"),
                      "checked_store": against_store, "findings": [f.as_dict() for f in findings]})


def _round_id(ref: str) -> Any:
    from projections.audit_store import parse_round_ref

    try:
        return parse_round_ref(ref)
    except Refusal as refusal:
        raise HTTPException(422, f"{refusal.code}: {refusal.message}") from None


def _save(upload: UploadFile, path: Path) -> Path:
    data = upload.file.read(UPLOAD_BYTES_MAX + 1)
    if len(data) > UPLOAD_BYTES_MAX:
        raise HTTPException(413, f"{upload.filename}: larger than {UPLOAD_BYTES_MAX} bytes")
    path.write_bytes(data)
    return path


def _export_lines(log: EventLog, start: int | None, stop: int | None) -> Iterator[bytes]:
    """events.jsonl of `ledger audit export`: the chain always starts at position 1."""
    from projections.audit import chain

    for link in chain(log.stored(1, stop, page_size=5000)):
        if start is None or link.position >= start:
            yield (link.line() + "\n").encode("utf-8")
