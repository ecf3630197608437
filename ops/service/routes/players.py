"""Players and accounts: balances and funds on game, a player's last rounds."""
from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Path, Query

from domain.errorcodes import ErrorCode
from domain.operators import EVERY_OPERATOR
from ops.service import paths  # noqa: F401  (registers the `{name:id}` convertor of these routes)
from ops.service.problems import documented
from ops.service.routes.deps import (
    CURSOR,
    GAMING_ZONES,
    KEYED,
    OPERATOR,
    READ,
    READ_TAGS,
    READS,
    cursor_checked,
    scoped_player,
)
from projections import queries
from projections.recall import RECALL_LAST_DEFAULT, RECALL_LAST_MAX, RECALL_LAST_MIN

router = APIRouter(prefix="/v1", tags=READ_TAGS, dependencies=READ)
ERRORS = documented(*KEYED, ErrorCode.REQUEST_INVALID)
BALANCES_LIMIT_MAX = 1_000_000


@router.get("/balances", summary="account balances and funds on game (players' accounts unless `kind` says)",
            response_model=queries.Balances, responses=ERRORS)
def get_balances(reads: READS, account: Annotated[list[str] | None, Query(max_length=1000)] = None,
                 kind: Annotated[Literal["player", "round", "house", "all"], Query(
                     description="the accounts of players (default), of rounds (funds on game), of the house, or "
                                 "all")] = "player",
                 nonzero: bool = False,
                 limit: Annotated[int | None, Query(ge=1, le=BALANCES_LIMIT_MAX, description="at most this many "
                                                    "accounts (all: none given)")] = None,
                 cursor: CURSOR = None, scope: OPERATOR = EVERY_OPERATOR) -> queries.Balances:
    with reads.views() as db, cursor_checked():
        return queries.balances(db, account or [], None if kind == "all" else kind, nonzero, limit, cursor, scope)


@router.get("/recall/{player:id}", summary="a player's last N rounds", response_model=queries.Recall, responses=ERRORS)
def get_recall(reads: READS, player: Annotated[str, Path(max_length=128)], zones: GAMING_ZONES,
               last: Annotated[int, Query(ge=RECALL_LAST_MIN, le=RECALL_LAST_MAX)] = RECALL_LAST_DEFAULT,
               scope: OPERATOR = EVERY_OPERATOR) -> queries.Recall:
    key = scoped_player(scope, player)  # the player as its operator names it
    with reads.views() as db:
        return queries.recall(db, key, last, zones, scope)
