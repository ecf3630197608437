"""Reports: refunds, gross gaming revenue, refused commands, and the wallet reconciliation."""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, File, Query, UploadFile

from domain.errorcodes import ErrorCode
from domain.operators import EVERY_OPERATOR
from ops.service.problems import ProblemItem, ServiceError, documented
from ops.service.routes.deps import (
    CURSOR,
    DAYS,
    DAYS_OR_OLD,
    GAMING_ZONES,
    INSTANTS,
    KEYED,
    OPERATOR,
    READ,
    READ_TAGS,
    READS,
    cursor_checked,
    save,
)
from projections import queries

router = APIRouter(prefix="/v1", tags=READ_TAGS, dependencies=READ)
ERRORS = documented(*KEYED, ErrorCode.REQUEST_INVALID)


@router.get("/refunds", summary="refunded bets and totals by gaming day and cause",
            response_model=queries.Refunds, responses=ERRORS)
def get_refunds(reads: READS, zones: GAMING_ZONES, period: DAYS_OR_OLD, scope: OPERATOR) -> queries.Refunds:
    with reads.views() as db:
        return queries.refunds(db, period.first, period.last, zones, log=reads.log, scope=scope)


@router.get("/ggr", summary="gross gaming revenue per table, game and gaming day", response_model=queries.Ggr,
            responses=ERRORS)
def get_ggr(reads: READS, zones: GAMING_ZONES, period: DAYS, scope: OPERATOR) -> queries.Ggr:
    with reads.views() as db:
        return queries.ggr(db, zones, period.first, period.last, log=reads.log, scope=scope)


@router.get("/rejections", summary="refused commands, oldest first, by code and the time they were received",
            response_model=queries.Rejections, responses=ERRORS,
            description="Every refused command, oldest first (a key of some operators: those naming one of its "
            "operators' players, or configuring one of them; docs/operators.md). `received_at` is when the ledger received it (UTC, "
            "the server's time), not a gaming day: a refused line may name no table (or not be JSON), so it has "
            "no gaming day, and `since`/`until` filter on the time received.")
def get_rejections(reads: READS, period: INSTANTS, code: Annotated[str | None, Query(max_length=64)] = None,
                   limit: Annotated[int, Query(ge=1, le=1000)] = 1000, cursor: CURSOR = None,
                   after: Annotated[int, Query(ge=0, le=2**62, deprecated=True,
                                               description="deprecated: `cursor` (after this rejection id)")] = 0,
                   scope: OPERATOR = EVERY_OPERATOR) -> queries.Rejections:
    since, until = period  # the service's time of receipt: a refused command may carry no studio time
    with cursor_checked():
        return queries.rejection_page(reads.log, code, limit, cursor, since, until, after, scope)


@router.post("/reconcile", summary="reconcile an operator wallet CSV with the ledger",
             response_model=queries.Reconciliation,
             responses=documented(*KEYED, ErrorCode.REQUEST_INVALID, ErrorCode.INPUT_INVALID, ErrorCode.INPUT_EMPTY,
                                  ErrorCode.INPUT_NOT_UTF8, ErrorCode.BODY_TOO_LARGE, ErrorCode.BAD_REQUEST))
def post_reconcile(reads: READS, wallet: Annotated[UploadFile, File()], zones: GAMING_ZONES, scope: OPERATOR,
                   ) -> queries.Reconciliation:
    from projections.reconcile import WalletEmpty, WalletFormatError

    with tempfile.TemporaryDirectory() as tmp:
        path = save(wallet, "wallet", Path(tmp) / "wallet.csv")
        try:
            return queries.reconcile_wallet(reads.log, path, zones, scope)
        except UnicodeDecodeError as exc:
            raise _wallet_error(ErrorCode.INPUT_NOT_UTF8, f"not UTF-8 text: {exc.reason} at byte {exc.start}") from None
        except WalletEmpty as exc:
            raise _wallet_error(ErrorCode.INPUT_EMPTY, str(exc).replace(str(path), "wallet")) from None
        except (WalletFormatError, ValueError) as exc:
            raise _wallet_error(ErrorCode.INPUT_INVALID, str(exc).replace(str(path), "wallet")) from None


def _wallet_error(code: ErrorCode, detail: str) -> ServiceError:
    return ServiceError(code, detail, errors=[ProblemItem(location="body.wallet", message=detail)])
