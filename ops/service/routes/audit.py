"""The audit trail: its export as events.jsonl, and the verification of an export."""
from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, File, Query, UploadFile
from fastapi.responses import StreamingResponse

from domain.errorcodes import ErrorCode
from domain.operators import EVERY_OPERATOR, OperatorScope
from ledger.eventlog import EventLog
from ops.service.problems import documented
from ops.service.routes.deps import AUDIT, KEYED, OPERATOR, READS, save
from projections import queries

router = APIRouter(prefix="/v1/audit", tags=["auditor"], dependencies=AUDIT)
NDJSON = "application/x-ndjson"
CHUNK_BYTES = 64 * 1024
AUDIT_LINE_REF = "#/components/schemas/AuditLine"  # queries.AuditLine, added by ops/service/openapi.py


@router.get("/export", summary="the hash-chained audit trail as events.jsonl (streamed)",
            response_class=StreamingResponse,
            description="Positions `from`..`to` (event positions, not a period of time: the chain is cut by "
                        "position); each line is one `AuditLine` (its JSON schema), the file `ledger audit export` "
                        "writes. The lines are hashed: they keep every field as stored, times included. "
                        "For a key of some operators, a line whose event names another operator's player or bet "
                        "keeps its hash and prev, and its record `\"redacted\": true` with those fields removed "
                        "(an event about such a bet alone: no field); the chain still verifies (docs/operators.md).",
            responses={200: {"content": {NDJSON: {"schema": {"$ref": AUDIT_LINE_REF,
                                                            "description": "one AuditLine per line"}}}},
                       **documented(*KEYED, ErrorCode.REQUEST_INVALID)})
def get_audit_export(reads: READS,
                     from_position: Annotated[int | None, Query(alias="from", ge=1, le=2**62)] = None,
                     to_position: Annotated[int | None, Query(alias="to", ge=1, le=2**62)] = None,
                     scope: OPERATOR = EVERY_OPERATOR) -> StreamingResponse:
    return StreamingResponse(_encoded(reads.log, from_position, to_position, scope), media_type=NDJSON)


def _encoded(log: EventLog, start: int | None, stop: int | None, scope: OperatorScope) -> Iterator[bytes]:
    """The lines in chunks of about CHUNK_BYTES (a chunk per line cost more than the lines)."""
    chunk: list[str] = []
    size = 0
    for line in queries.audit_export_lines(log, start, stop, scope):
        chunk.append(line)
        size += len(line)
        if size >= CHUNK_BYTES:
            yield "".join(chunk).encode("utf-8")
            chunk, size = [], 0
    if chunk:
        yield "".join(chunk).encode("utf-8")


@router.post("/verify", summary="verify an export (events.jsonl, manifest.json, events.csv)",
             response_model=queries.ExportCheck,
             responses=documented(*KEYED, ErrorCode.REQUEST_INVALID,
                                  ErrorCode.BODY_TOO_LARGE, ErrorCode.BAD_REQUEST))
def post_audit_verify(reads: READS, events_jsonl: Annotated[UploadFile, File()],
                      manifest_json: Annotated[UploadFile, File()],
                      events_csv: Annotated[UploadFile | None, File()] = None,
                      against_store: bool = False, scope: OPERATOR = EVERY_OPERATOR) -> queries.ExportCheck:
    from projections.audit_export import EVENTS_CSV, EVENTS_JSONL, MANIFEST

    with tempfile.TemporaryDirectory() as tmp:
        save(events_jsonl, "events_jsonl", Path(tmp) / EVENTS_JSONL)
        save(manifest_json, "manifest_json", Path(tmp) / MANIFEST)
        if events_csv is not None:
            save(events_csv, "events_csv", Path(tmp) / EVENTS_CSV)
        return queries.verify_export(tmp, reads.log if against_store else None, scope)
