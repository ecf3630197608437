"""Rounds: the list, one round, its replay and its dispute page."""
from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from domain.errorcodes import ErrorCode
from ops.service import paths  # noqa: F401  (registers the `{name:id}` convertor of these routes)
from ops.service.problems import ServiceError, documented
from ops.service.routes.deps import KEYED, READ, READ_TAGS, ROUND_ERRORS, log_of, round_id, round_not_found, views
from projections import queries
from projections.rounds import LIST_LIMIT_MAX

router = APIRouter(prefix="/v1/rounds", tags=READ_TAGS, dependencies=READ)
Status = Literal["open", "paused", "settled", "reversed", "voided"]  # projections.rounds.STATUSES


@router.get("", summary="rounds by status, table and studio time, in the order the studio opened them",
            response_model=queries.RoundList, responses=documented(*KEYED, ErrorCode.REQUEST_INVALID))
def list_rounds(request: Request, status: Status | None = None,
                table: Annotated[str | None, Query(max_length=128)] = None,
                since: Annotated[datetime | None, Query(description="studio time from (ISO 8601; UTC if no offset)")] = None,
                until: Annotated[datetime | None, Query(description="studio time before (ISO 8601; UTC if no offset)")] = None,
                limit: Annotated[int | None, Query(ge=1, le=LIST_LIMIT_MAX)] = None) -> queries.RoundList:
    with views(request) as db:
        return queries.round_list(db, status=status, table_id=table, since=_utc(since), until=_utc(until), limit=limit)


def _utc(at: datetime | None) -> datetime | None:
    return at.replace(tzinfo=UTC) if at is not None and at.tzinfo is None else at


@router.get("/{round_ref:id}", summary="one round (TABLE#NO, URL-encoded, or UUID): facts, events and story",
            response_model=queries.RoundDetail, responses=ROUND_ERRORS)
def get_round(round_ref: str, request: Request) -> queries.RoundDetail:
    round_uuid = round_id(round_ref)
    detail = queries.round_detail(log_of(request), round_uuid, round_ref)
    if detail is None:
        raise round_not_found(round_ref, round_uuid)
    return detail


@router.get("/{round_ref:id}/replay", summary="the round replayed, settlement recomputed",
            response_model=queries.RoundReplay, responses=documented(
                *KEYED, ErrorCode.ROUND_NOT_FOUND, ErrorCode.REQUEST_INVALID))
def get_replay(round_ref: str, request: Request,
               at: Annotated[int | None, Query(ge=1, le=100_000, description="cut after the at-th event")] = None,
               ) -> queries.RoundReplay:
    round_uuid = round_id(round_ref)
    replay = queries.round_replay(log_of(request), round_uuid, at=at, ref=round_ref)
    if replay is None:
        raise round_not_found(round_ref, round_uuid)
    return replay


@router.get("/{round_ref:id}/replay.html", summary="the dispute page of a round", response_class=HTMLResponse,
            responses={200: {"content": {"text/html": {"schema": {"type": "string"}}}}, **ROUND_ERRORS,
                       **documented(ErrorCode.CHAIN_MISMATCH)})
def get_replay_page(round_ref: str, request: Request) -> HTMLResponse:
    from projections.chain_index import ChainMismatch
    from projections.replay_page import RoundNotFound, render_round_html

    round_uuid = round_id(round_ref)
    try:
        return HTMLResponse(render_round_html(log_of(request), str(round_uuid)))
    except RoundNotFound:
        raise round_not_found(round_ref, round_uuid) from None
    except ChainMismatch as exc:  # a finding about the store, not a page that quotes old hashes
        raise ServiceError(ErrorCode.CHAIN_MISMATCH, f"{round_ref}: {exc}") from None
