"""Rounds: the list, one round, its replay and its dispute page."""
from __future__ import annotations

from dataclasses import asdict
from datetime import time
from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from domain.errorcodes import ErrorCode
from domain.operators import EVERY_OPERATOR
from ops.service import paths  # noqa: F401  (registers the `{name:id}` convertor of these routes)
from ops.service.problems import ServiceError, documented
from ops.service.routes.deps import (
    CURSOR,
    INSTANTS,
    KEYED,
    OPERATOR,
    READ,
    READ_TAGS,
    READS,
    ROUND_ERRORS,
    cursor_checked,
    round_id,
    round_not_found,
    scoped_player,
)
from projections import queries
from projections.csvtext import csv_lines
from projections.redaction import redact_document
from projections.round_search import PLAYER_SORTS, RoundQuery
from projections.rounds import LIST_LIMIT_MAX

router = APIRouter(prefix="/v1/rounds", tags=READ_TAGS, dependencies=READ)
Sort = Literal["time", "-time", "table", "-table", "stake", "-stake", "net", "-net"]  # round_search.SORTS
Clock = Annotated[time | None, Query(description="time of day, UTC (HH:MM)")]


@router.get("", summary="rounds by status, player, table and studio time; a page at a time with cursor",
            description="Player and table match any id starting with what is given, in any case. With `player`: "
                        "a row per round and matching player, with that player's stake, return, refund, net and "
                        "result. `status=reversed`: every round with a settlement reversed (`reversals` > 0). "
                        "`since`/`until`: the studio time of the round's opening. "
                        "`count` is every row matched; `next_cursor`, when there are more, is the `cursor` of the "
                        "next page (same other parameters). `Accept: text/csv` answers the same rows as CSV.",
            response_model=queries.RoundList, responses={
                200: {"content": {"text/csv": {"schema": {"type": "string"}}}},
                **documented(*KEYED, ErrorCode.REQUEST_INVALID)})
def list_rounds(request: Request, reads: READS, period: INSTANTS, status: queries.RoundStatus | None = None,
                player: Annotated[str | None, Query(max_length=128, description="a player id or its start")] = None,
                table: Annotated[str | None, Query(max_length=128, description="a table id or its start")] = None,
                dealer: Annotated[str | None, Query(max_length=128)] = None,
                time_from: Clock = None, time_to: Clock = None, sort: Sort = "time",
                limit: Annotated[int | None, Query(ge=1, le=LIST_LIMIT_MAX, description="at most this many (all: "
                                                   "none given)")] = None,
                cursor: CURSOR = None, scope: OPERATOR = EVERY_OPERATOR,
                ) -> queries.RoundList | Response:
    if sort.lstrip("-") in PLAYER_SORTS and not player:
        raise ServiceError(ErrorCode.REQUEST_INVALID, f"sort: {sort} needs player (it is the player's own figure)")
    since, until = period  # the studio's time of the round's opening
    q = RoundQuery(player=scoped_player(scope, player) if player else None, scope=scope,
                   table=table or None, status=status, dealer=dealer, since=since,
                   until=until, time_from=time_from, time_to=time_to, sort=sort)
    with reads.views() as db, cursor_checked():
        found = queries.round_list(db, q, limit=limit, cursor=cursor)
    if "text/csv" in request.headers.get("accept", ""):
        return Response("".join(csv_lines(queries.ROUND_CSV, queries.round_csv_rows(found.rounds))),
                        media_type="text/csv; charset=utf-8", headers={"X-Count": str(found.count)})
    return found


@router.get("/{round_ref:id}", summary="one round (TABLE#NO, URL-encoded, or UUID): facts, events and story",
            response_model=queries.RoundDetail, responses=ROUND_ERRORS)
def get_round(round_ref: str, reads: READS, scope: OPERATOR = EVERY_OPERATOR) -> queries.RoundDetail | queries.JsonObject:
    round_uuid = round_id(round_ref)
    detail = queries.round_detail(reads.log, round_uuid, round_ref)
    if detail is None:
        raise round_not_found(round_ref, round_uuid)
    return detail if scope.everyone else redact_document(asdict(detail), scope)


@router.get("/{round_ref:id}/replay", summary="the round replayed, settlement recomputed",
            response_model=queries.RoundReplay, responses=documented(
                *KEYED, ErrorCode.ROUND_NOT_FOUND, ErrorCode.REQUEST_INVALID))
def get_replay(round_ref: str, reads: READS,
               at: Annotated[int | None, Query(ge=1, le=100_000, description="cut after the at-th event")] = None,
               scope: OPERATOR = EVERY_OPERATOR) -> queries.RoundReplay | queries.JsonObject:
    round_uuid = round_id(round_ref)
    replay = queries.round_replay(reads.log, round_uuid, at=at, ref=round_ref)
    if replay is None:
        raise round_not_found(round_ref, round_uuid)
    # a key of some operators: the others' bets only as a count and a total
    return replay if scope.everyone else redact_document(asdict(replay), scope)


@router.get("/{round_ref:id}/replay.html", summary="the dispute page of a round", response_class=HTMLResponse,
            responses={200: {"content": {"text/html": {"schema": {"type": "string"}}}}, **ROUND_ERRORS,
                       **documented(ErrorCode.CHAIN_MISMATCH)})
def get_replay_page(round_ref: str, reads: READS, scope: OPERATOR = EVERY_OPERATOR) -> HTMLResponse:
    from projections.chain_index import ChainMismatch
    from projections.replay_page import RoundNotFound, render_round_html

    round_uuid = round_id(round_ref)
    try:
        return HTMLResponse(render_round_html(reads.log, str(round_uuid), scope))
    except RoundNotFound:
        raise round_not_found(round_ref, round_uuid) from None
    except ChainMismatch as exc:  # a finding about the store, not a page that quotes old hashes
        raise ServiceError(ErrorCode.CHAIN_MISMATCH, f"{round_ref}: {exc}") from None
