"""What the read routes share: only the query parameters a route declares, periods
(`since`/`until`), page cursors, the read service, a round's reference,
an upload."""
from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from enum import Enum
from pathlib import Path
from typing import Annotated
from uuid import UUID

from fastapi import Depends, Query, Request, UploadFile
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute

from domain.errorcodes import ErrorCode
from domain.errors import Refusal
from domain.operators import DEFAULT_OPERATOR_ID, OPERATOR_ID_PATTERN, OperatorScope, player_key
from domain.refusals import RefusalCode
from ledger.keys import ROLE_AUDIT, ROLE_READ, ApiKey
from ops.service.auth import role
from ops.service.problems import ProblemItem, ServiceError, documented
from projections import queries
from projections.folding import Zones
from projections.read_service import ReadService

UPLOAD_BYTES_MAX = 200 * 1024 * 1024


async def declared_only(request: Request) -> None:
    """422 `unknown_parameter` for a query parameter the route does not declare (its own and its
    dependencies'): a misspelt or unsupported filter would otherwise be ignored and the answer
    look right. Read from the route itself, so a parameter a route adds is known at once."""
    route = request.scope.get("route")
    if not isinstance(route, APIRoute):
        return
    known = declared_query(route)
    unknown = sorted({name for name in request.query_params if name not in known})
    if unknown:
        takes = ", ".join(sorted(known)) or "no query parameter"
        raise ServiceError(ErrorCode.UNKNOWN_PARAMETER,
                           f"unknown query parameter {', '.join(unknown)} ({request.url.path} takes: {takes})",
                           errors=[ProblemItem(location=f"query.{name}", message="not a parameter of this route")
                                   for name in unknown])


def declared_query(route: APIRoute) -> frozenset[str]:
    """The names (aliases) of every query parameter of the route and its dependencies (kept on
    the route: an APIRoute is no dict key)."""
    known: frozenset[str] | None = getattr(route, "_declared_query", None)
    if known is None:
        known = _query_names(route.dependant)
        route._declared_query = known  # type: ignore[attr-defined]
    return known


def _query_names(root: Dependant) -> frozenset[str]:
    names: set[str] = set()
    pending = [root]
    while pending:
        dependant = pending.pop()
        names.update(field.alias for field in dependant.query_params)
        pending.extend(dependant.dependencies)
    return frozenset(names)


# The role first (an unknown caller learns nothing of the parameters), then the parameters.
READ = [Depends(role(*ROLE_READ)), Depends(declared_only)]
READ_TAGS: list[str | Enum] = ["backoffice", "auditor"]  # the roles that may read (and admin)
# Every /v1 read route: no key or a wrong one, a role that may not, a query parameter it does not take, the store down.
KEYED = (ErrorCode.UNAUTHORIZED, ErrorCode.FORBIDDEN, ErrorCode.OPERATOR_FORBIDDEN, ErrorCode.UNKNOWN_PARAMETER,
         ErrorCode.STORE_UNAVAILABLE)
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


OPERATOR_ID_QUERY = Query(min_length=1, max_length=64, pattern=OPERATOR_ID_PATTERN, description=(
    "only this operator's players (a player is the pair operator, player id; bets whose feed names no operator "
    f"are the operator {DEFAULT_OPERATOR_ID!r}), as `--operator` on the command line"))


def caller(request: Request) -> ApiKey:
    """The key the route's role dependency checked (it runs first: a router's dependencies come
    before the route's own). None there is a route declared without one: refused, never read
    with every operator."""
    key: ApiKey | None = getattr(request.state, "api_key", None)
    if key is None:
        raise ServiceError(ErrorCode.UNAUTHORIZED, "a valid API key is required: Authorization: Bearer KEY",
                           headers={"WWW-Authenticate": "Bearer"})
    return key


def narrowed(key: ApiKey, operator: str | None) -> OperatorScope:
    """The key's operators, narrowed to `operator` when one is asked (403 `operator_forbidden`
    for an operator outside them: `?operator=` narrows, never widens)."""
    if operator is None:
        return key.scope
    if not key.scope.allows(operator):
        raise operator_not_allowed(key, operator)
    return OperatorScope.of(operator)


def operator_not_allowed(key: ApiKey, operator: str) -> ServiceError:
    return ServiceError(ErrorCode.OPERATOR_FORBIDDEN,
                        f"this API key reads operators {', '.join(key.operators)} only, not {operator}",
                        errors=[ProblemItem(location="query.operator", message="not one of the key's operators")])


def operator_scope(request: Request, operator: Annotated[str | None, OPERATOR_ID_QUERY] = None) -> OperatorScope:
    """The operators a read shows: the key's (every operator for a key limited to none), narrowed
    by `?operator=` (docs/operators.md)."""
    return narrowed(caller(request), operator)


def scoped_player(scope: OperatorScope, player: str) -> str:
    """The player key of a route's `player`, named as the one operator of `scope` names it (every
    operator: the default operator's); 403 when the scope may not see that operator."""
    key = player_key(scope.only(), player)
    if not scope.allows_key(key):
        operators = sorted(scope.operators or ())
        raise ServiceError(ErrorCode.OPERATOR_FORBIDDEN, f"player {player}: name its operator with ?operator= (one "
                           f"of {', '.join(operators)}); without it the player is the default operator's",
                           errors=[ProblemItem(location="query.operator", message="required for this key")])
    return key


OPERATOR = Annotated[OperatorScope, Depends(operator_scope)]
# The audit trail: auditors' and admins' (an auditor of some operators sees the others' bets redacted).
AUDIT = [Depends(role(*ROLE_AUDIT)), Depends(declared_only)]


# ---------------------------------------------------------------- periods: since (inclusive), until (exclusive)

def utc(at: datetime | None) -> datetime | None:
    """A time without an offset is UTC (as on the command line)."""
    return at.replace(tzinfo=UTC) if at is not None and at.tzinfo is None else at


def instants(since: Annotated[datetime | None, Query(description="from this time (inclusive; ISO 8601, UTC if "
                                                                  "no offset)")] = None,
             until: Annotated[datetime | None, Query(description="before this time (exclusive)")] = None,
             ) -> tuple[datetime | None, datetime | None]:
    """A period of times [since, until)."""
    since, until = utc(since), utc(until)
    if since is not None and until is not None and since >= until:
        raise _param_error("since", f"since {since.isoformat()} is not before until {until.isoformat()}")
    return since, until


INSTANTS = Annotated[tuple[datetime | None, datetime | None], Depends(instants)]


@dataclass(frozen=True)
class Days:
    """Whole days, both included (YYYY-MM-DD), as the day queries take them; None: unbounded."""

    first: str | None
    last: str | None


def days(since: Annotated[date | None, Query(description="from this gaming day (inclusive, YYYY-MM-DD)")] = None,
         until: Annotated[date | None, Query(description="before this gaming day (exclusive: since=2026-11-21&"
                                                         "until=2026-11-22 is one day)")] = None) -> Days:
    """A period of whole days [since, until), as `--since`/`--until` on the command line."""
    if until == date.min:
        raise _param_error("until", "until 0001-01-01: no day is before it")
    if since is not None and until is not None and since >= until:
        raise _param_error("since", f"since {since} is not before until {until}")
    return Days(since.isoformat() if since else None, (until - timedelta(days=1)).isoformat() if until else None)


def days_or_old(period: Annotated[Days, Depends(days)],
                old_from: Annotated[date | None, Query(alias="from", deprecated=True,
                                                       description="deprecated: `since`")] = None,
                old_to: Annotated[date | None, Query(alias="to", deprecated=True,
                                                     description="deprecated: the last day, included (`until` is "
                                                                 "the day after it)")] = None) -> Days:
    """`days`, or the old names of a route that took `from`/`to` (kept for clients written before)."""
    for old, new, name in ((old_from, period.first, "from"), (old_to, period.last, "to")):
        if old is not None and new is not None:
            raise _param_error(name, f"{name} is the old name of {'since' if name == 'from' else 'until'}: give one")
    if old_from is not None and (old_to or date.max) < old_from:
        raise _param_error("from", f"from {old_from} is after to {old_to}")
    return Days(old_from.isoformat() if old_from else period.first, old_to.isoformat() if old_to else period.last)


DAYS = Annotated[Days, Depends(days)]
DAYS_OR_OLD = Annotated[Days, Depends(days_or_old)]


def _param_error(name: str, detail: str) -> ServiceError:
    return ServiceError(ErrorCode.REQUEST_INVALID, detail, errors=[ProblemItem(location=f"query.{name}",
                                                                               message=detail)])


# ---------------------------------------------------------------- pages

CURSOR = Annotated[str | None, Query(max_length=512, description="the `next_cursor` of the page before (opaque)")]


@contextmanager
def cursor_checked() -> Iterator[None]:
    """A cursor the query did not make: 422 naming `cursor`."""
    try:
        yield
    except queries.BadCursor as exc:
        raise _param_error("cursor", f"cursor: {exc}") from None


def read_service(request: Request) -> ReadService:
    """The process's read service (projections/read_service.py), made at start-up."""
    service: ReadService = request.app.state.reads
    return service


# Every read of a route goes through it: the views caught up before they answer, as on the command line.
READS = Annotated[ReadService, Depends(read_service)]


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
