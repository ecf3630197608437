"""Reports: refunds, gross gaming revenue, refused commands, and the wallet reconciliation."""
from __future__ import annotations

import tempfile
from datetime import date
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, File, Query, Request, UploadFile

from domain.errorcodes import ErrorCode
from ops.service.problems import ProblemItem, ServiceError, documented
from ops.service.routes.deps import GAMING_ZONES, KEYED, READ, READ_TAGS, log_of, save, views
from projections import queries

router = APIRouter(prefix="/v1", tags=READ_TAGS, dependencies=READ)
ERRORS = documented(*KEYED, ErrorCode.REQUEST_INVALID)
DAY = r"^\d{4}-\d{2}-\d{2}$"


@router.get("/refunds", summary="refunded bets and totals by gaming day and cause",
            response_model=queries.Refunds, responses=ERRORS)
def get_refunds(request: Request, zones: GAMING_ZONES,
                day_from: Annotated[str | None, Query(alias="from", pattern=DAY, description="first day")] = None,
                day_to: Annotated[str | None, Query(alias="to", pattern=DAY, description="last day")] = None,
                ) -> queries.Refunds:
    for name, day in (("from", day_from), ("to", day_to)):
        _calendar_day(name, day)
    with views(request) as db:
        return queries.refunds(db, day_from, day_to, zones, log=log_of(request))


def _calendar_day(name: str, day: str | None) -> None:
    """The pattern lets 2026-13-01 through; days are turned into instants."""
    try:
        date.fromisoformat(day) if day else None
    except ValueError:
        raise ServiceError(ErrorCode.REQUEST_INVALID, f"{name}={day!r} is not a calendar day",
                           errors=[ProblemItem(location=f"query.{name}", message="not a calendar day")]) from None


@router.get("/ggr", summary="gross gaming revenue per table, game and gaming day", response_model=queries.Ggr,
            responses=ERRORS)
def get_ggr(request: Request, zones: GAMING_ZONES) -> queries.Ggr:
    with views(request) as db:
        return queries.ggr(db, zones, log=log_of(request))


@router.get("/rejections", summary="refused commands, in the order received", response_model=list[queries.Rejection],
            responses=ERRORS,
            description="Every refused command, oldest first. `received_at` is when the ledger received it (UTC, "
            "the server's time), not a gaming day: a refused line may name no table (or not be JSON), so it has "
            "no gaming day, and rejections are never filtered by one.")
def get_rejections(request: Request, code: Annotated[str | None, Query(max_length=64)] = None,
                   after: Annotated[int, Query(ge=0, le=2**62, description="after this rejection id")] = 0,
                   limit: Annotated[int, Query(ge=1, le=1000)] = 1000) -> list[queries.Rejection]:
    return queries.rejections(log_of(request), code, after, limit)


@router.post("/reconcile", summary="reconcile an operator wallet CSV with the ledger",
             response_model=queries.Reconciliation,
             responses=documented(*KEYED, ErrorCode.REQUEST_INVALID, ErrorCode.INPUT_INVALID, ErrorCode.INPUT_EMPTY,
                                  ErrorCode.INPUT_NOT_UTF8, ErrorCode.BODY_TOO_LARGE, ErrorCode.BAD_REQUEST))
def post_reconcile(request: Request, wallet: Annotated[UploadFile, File()], zones: GAMING_ZONES,
                   ) -> queries.Reconciliation:
    from projections.reconcile import WalletEmpty, WalletFormatError

    with tempfile.TemporaryDirectory() as tmp:
        path = save(wallet, "wallet", Path(tmp) / "wallet.csv")
        try:
            return queries.reconcile_wallet(log_of(request), path, zones)
        except UnicodeDecodeError as exc:
            raise _wallet_error(ErrorCode.INPUT_NOT_UTF8, f"not UTF-8 text: {exc.reason} at byte {exc.start}") from None
        except WalletEmpty as exc:
            raise _wallet_error(ErrorCode.INPUT_EMPTY, str(exc).replace(str(path), "wallet")) from None
        except (WalletFormatError, ValueError) as exc:
            raise _wallet_error(ErrorCode.INPUT_INVALID, str(exc).replace(str(path), "wallet")) from None


def _wallet_error(code: ErrorCode, detail: str) -> ServiceError:
    return ServiceError(code, detail, errors=[ProblemItem(location="body.wallet", message=detail)])
