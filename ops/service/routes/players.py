"""Players and accounts: balances and funds on game, a player's last rounds."""
from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Path, Query, Request

from domain.errorcodes import ErrorCode
from ops.service import paths  # noqa: F401  (registers the `{name:id}` convertor of these routes)
from ops.service.problems import documented
from ops.service.routes.deps import GAMING_ZONES, KEYED, READ, READ_TAGS, views
from projections import queries
from projections.recall import RECALL_LAST_DEFAULT, RECALL_LAST_MAX, RECALL_LAST_MIN

router = APIRouter(prefix="/v1", tags=READ_TAGS, dependencies=READ)
ERRORS = documented(*KEYED, ErrorCode.REQUEST_INVALID)


@router.get("/balances", summary="account balances and funds on game", response_model=queries.Balances,
            responses=ERRORS)
def get_balances(request: Request, account: Annotated[list[str] | None, Query(max_length=1000)] = None,
                 kind: Literal["player", "round", "house"] | None = None, nonzero: bool = False) -> queries.Balances:
    with views(request) as db:
        return queries.balances(db, account or [], kind, nonzero)


@router.get("/recall/{player:id}", summary="a player's last N rounds", response_model=queries.Recall, responses=ERRORS)
def get_recall(request: Request, player: Annotated[str, Path(max_length=128)], zones: GAMING_ZONES,
               last: Annotated[int, Query(ge=RECALL_LAST_MIN, le=RECALL_LAST_MAX)] = RECALL_LAST_DEFAULT,
               ) -> queries.Recall:
    with views(request) as db:
        return queries.recall(db, player, last, zones)
