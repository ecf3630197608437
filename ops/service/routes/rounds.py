"""Rounds: the list, one round, its replay and its dispute page."""
from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from domain.errorcodes import ErrorCode
from ops.service.problems import ServiceError, documented
from ops.service.routes.deps import (
    CURSOR,
    INSTANTS,
    KEYED,
    READ,
    READ_TAGS,
    ROUND_ERRORS,
    cursor_checked,
    log_of,
    round_id,
    round_not_found,
    views,
)
from projections import queries
from projections.rounds import LIST_LIMIT_MAX

router = APIRouter(prefix="/v1/rounds", tags=READ_TAGS, dependencies=READ)


@router.get("", summary="rounds by status, table and studio time, in the order the studio opened them",
            response_model=queries.RoundList, responses=documented(*KEYED, ErrorCode.REQUEST_INVALID))
def list_rounds(request: Request, period: INSTANTS, status: queries.RoundStatus | None = None,
                table: Annotated[str | None, Query(max_length=128)] = None,
                limit: Annotated[int | None, Query(ge=1, le=LIST_LIMIT_MAX, description="at most this many (all: "
                                                   "none given)")] = None,
                cursor: CURSOR = None) -> queries.RoundList:
    since, until = period  # the studio's time of the round's opening
    with views(request) as db, cursor_checked():
        return queries.round_list(db, status=status, table_id=table, since=since, until=until, limit=limit,
                                  cursor=cursor)


@router.get("/{round_ref}", summary="one round (TABLE#NO, URL-encoded, or UUID): facts, events and story",
            response_model=queries.RoundDetail, responses=ROUND_ERRORS)
def get_round(round_ref: str, request: Request) -> queries.RoundDetail:
    round_uuid = round_id(round_ref)
    detail = queries.round_detail(log_of(request), round_uuid, round_ref)
    if detail is None:
        raise round_not_found(round_ref, round_uuid)
    return detail


@router.get("/{round_ref}/replay", summary="the round replayed, settlement recomputed",
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


@router.get("/{round_ref}/replay.html", summary="the dispute page of a round", response_class=HTMLResponse,
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
