"""What the read routes share: the views caught up, the store's log, a round's reference, an upload."""
from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import Annotated
from uuid import UUID

from fastapi import Depends, Query, Request, UploadFile

from domain.errorcodes import ErrorCode
from domain.errors import Refusal
from domain.refusals import RefusalCode
from ledger.eventlog import EventLog
from ledger.keys import ROLE_AUDIT, ROLE_READ
from ops.service.auth import role
from ops.service.problems import ProblemItem, ServiceError, documented
from projections import queries
from projections.sql import Db
from projections.state import Zones

UPLOAD_BYTES_MAX = 200 * 1024 * 1024

READ = [Depends(role(*ROLE_READ))]
AUDIT = [Depends(role(*ROLE_AUDIT))]
READ_TAGS: list[str | Enum] = ["backoffice", "auditor"]  # the roles that may read (and admin)
# Every /v1 route: no key or a wrong one, a role that may not, the store down.
KEYED = (ErrorCode.UNAUTHORIZED, ErrorCode.FORBIDDEN, ErrorCode.STORE_UNAVAILABLE)
ROUND_ERRORS = documented(*KEYED, ErrorCode.ROUND_NOT_FOUND, RefusalCode.BAD_ROUND_REF, ErrorCode.REQUEST_INVALID)


def gaming_zones(timezone: Annotated[str | None, Query(
        max_length=64, description="the studio's time zone (IANA, e.g. Europe/Malta): days are gaming days there; a "
        "round at a table configured with a zone of its own keeps the zone in force when it was played "
        "(default: the service's LEDGER_TIMEZONE, else UTC), as `--timezone` on the command line")] = None) -> Zones:
    name = timezone or os.environ.get("LEDGER_TIMEZONE") or "UTC"
    try:
        return Zones.named(name)
    except ValueError as exc:
        raise ServiceError(ErrorCode.REQUEST_INVALID, f"timezone: {exc}",
                           errors=[ProblemItem(location="query.timezone", message="not an IANA time zone")]) from None


GAMING_ZONES = Annotated[Zones, Depends(gaming_zones)]


def log_of(request: Request) -> EventLog:
    log: EventLog = request.app.state.reader
    return log


@contextmanager
def views(request: Request) -> Iterator[Db]:
    """The views, caught up before they answer (as on the command line); one catch-up at a
    time per process (a second runner would only roll back)."""
    from projections.runner import Projector

    lock: threading.Lock = request.app.state.views_lock
    with lock:
        projector = Projector(log_of(request), gc_off_per_run=False)  # the collector is the process's
        try:
            projector.catch_up()
            yield projector.db
        finally:
            projector.close()


def round_id(round_ref: str) -> UUID:
    try:
        return queries.round_ref(round_ref)
    except Refusal as refusal:
        raise ServiceError(RefusalCode.BAD_ROUND_REF, refusal.message, status=422,
                           errors=[ProblemItem(location="path.round_ref", message=refusal.message)]) from None


def round_not_found(round_ref: str, round_uuid: UUID) -> ServiceError:
    return ServiceError(ErrorCode.ROUND_NOT_FOUND, f"no round {round_ref} in the store (id {round_uuid})")


def save(upload: UploadFile, field: str, path: Path) -> Path:
    """An uploaded file written to `path`, 413 `body_too_large` past UPLOAD_BYTES_MAX."""
    data = upload.file.read(UPLOAD_BYTES_MAX + 1)
    if len(data) > UPLOAD_BYTES_MAX:
        raise ServiceError(ErrorCode.BODY_TOO_LARGE, f"{field}: larger than {UPLOAD_BYTES_MAX} bytes",
                           errors=[ProblemItem(location=f"body.{field}", message="too large")])
    path.write_bytes(data)
    return path
