"""The console's routes under /ui/: server-rendered pages (Jinja2), one per screen.

Every read is a plain GET that renders without script; every change (sign-in, sign-out,
wallet upload, audit export and verify) is a POST form carrying the session's CSRF token.
Routes are plain `def` (they read the synchronous store; FastAPI runs them in its
thread pool)."""
from __future__ import annotations

import io
import json
import re
import tempfile
import threading
import zipfile
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import asdict
from datetime import UTC, date, datetime, time, timedelta
from hashlib import sha256
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import quote, urlencode, urlsplit

from fastapi import APIRouter, Depends, FastAPI, File, Form, HTTPException, Query, Request, UploadFile
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.routing import APIRoute

from domain.errors import Refusal
from domain.operators import OperatorScope
from ledger.startup import tables_created_alone
from ops.console import data, round_drawing
from ops.console.charts import Series, band_chart, bar_chart, money_tick, percent
from ops.console.render import people_named, render
from ops.console.sessions import ROLES_CONSOLE, Session, SessionStore, same_secret
from ops.service import paths  # noqa: F401  (registers the `{name:id}` convertor of these routes)
from ops.service.health import RETRY_AFTER_S
from ops.service.routes.deps import OPERATOR_ID_QUERY, READS, gaming_zones, narrowed, scoped_player
from projections import page_queries, queries
from projections.csvtext import csv_lines
from projections.read_service import ReadService
from projections.redaction import redact_document
from projections.round_search import PLAYER_SORTS, RoundQuery
from projections.rounds import STATUSES
from projections.wallet_outbox import read_status

COOKIE = "ledger_ui"
PRE_COOKIE = "ledger_ui_signin"  # the sign-in form's own CSRF token, signed by the store: no session yet
UPLOAD_BYTES_MAX = 200 * 1024 * 1024


class ConsoleRoute(APIRoute):
    """A console route: its errors (a bad reference, no such round, a malformed filter) are
    answered as a page a person reads, not as the API's JSON."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def route(request: Request) -> Response:
            try:
                return await handler(request)
            except HTTPException as exc:
                if exc.status_code < 400:
                    raise  # "sign in first": the app answers it as a redirect, no body (problems.http_error)
                return _error_page(request, exc.status_code, str(exc.detail))
            except RequestValidationError as exc:
                return _error_page(request, 422, "; ".join(f"{'.'.join(map(str, e['loc'][1:]))}: {e['msg']}"
                                                           for e in exc.errors()))
            except Exception:
                health = getattr(request.app.state, "health", None)
                if health is None or health.ready:
                    raise  # a bug: the service's 500
                return _error_page(request, 503, f"The store is unreachable ({health.status.error}); "
                                   "try again in a moment.", {"Retry-After": str(RETRY_AFTER_S)})

        return route


def _error_page(request: Request, status: int, detail: str, headers: dict[str, str] | None = None) -> HTMLResponse:
    return HTMLResponse(render("error.html", request=request, session=None, status=status, detail=detail),
                        status_code=status, headers={**SECURITY_HEADERS, **(headers or {})})


router = APIRouter(prefix="/ui", include_in_schema=False, route_class=ConsoleRoute)


# ------------------------------------------------------------------ sessions
_MADE = threading.Lock()


def sessions(request: Request) -> SessionStore:
    """The process's session store, made on first use (its tables beside the API keys), once
    whatever the threads of the worker."""
    state = request.app.state
    found: SessionStore | None = getattr(state, "ui_sessions", None)
    if found is None:
        with _MADE:
            found = getattr(state, "ui_sessions", None)
            if found is None:
                found = state.ui_sessions = _session_store(state)
    return found


def _session_store(state: Any) -> SessionStore:
    # Workers opening their first page together: one at a time creates the tables (PostgreSQL's
    # CREATE TABLE IF NOT EXISTS races in its catalog), as the ledger's own are.
    with tables_created_alone(state.reader.app.env):
        return SessionStore(state.keys.store)


def signed_in(request: Request) -> Session:
    """The request's live session, else a redirect to the sign-in page (303)."""
    found = sessions(request).get(request.cookies.get(COOKIE))
    if found is None:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        raise HTTPException(303, "sign in first", headers={"Location": "/ui/?" + urlencode({"next": target})})
    return found


UI = Annotated[Session, Depends(signed_in)]


def page_scope(session: UI, operator: Annotated[str | None, OPERATOR_ID_QUERY] = None) -> OperatorScope:
    """The operators a page shows: its key's, narrowed to `?operator=` or else to the operator
    picked for the session (deps.narrowed, as every HTTP read route: another operator is 403
    `operator_forbidden`, on the page)."""
    return narrowed(session.key, operator or session.operator)


SCOPE = Annotated[OperatorScope, Depends(page_scope)]


def scoped_search(scope: OperatorScope, player: str | None) -> str | None:
    """A player (or an id's start) typed on a page, as the ledger names it for `scope`'s one
    operator (deps.scoped_player); a key of several operators picks one first."""
    if player is None:
        return None
    if not scope.everyone and scope.only() is None:
        raise HTTPException(403, "this key reads several operators: pick one (Operator, at the top of the page) "
                            "to name a player, as each names its own")
    return scoped_player(scope, player)


def every_operator_only(session: Session, what: str) -> None:
    """A page whose figures are every operator's (the monitor): 403 for a key limited to
    operators, as the HTTP routes' `every_operator`."""
    if not session.key_scope.everyone:
        raise HTTPException(403, f"{what} shows every operator's bets: this key reads operators "
                            f"{', '.join(session.operators)} only")


_DEFAULT_PORTS = {"http": 80, "https": 443}


def _same_origin(request: Request) -> bool:
    """A browser names the page a form was sent from; it must be this site: the same scheme,
    host and port (None: not a browser's form). The scheme is the one the browser used: behind
    a TLS-terminating proxy uvicorn takes it from X-Forwarded-Proto (a proxy of
    FORWARDED_ALLOW_IPS), so an http Origin is not an https console's."""
    origin = request.headers.get("origin")
    if origin is None:
        return True
    try:
        sent, here = urlsplit(origin), request.url
        return _origin(sent.scheme, sent.hostname, sent.port) == _origin(here.scheme, here.hostname, here.port)
    except ValueError:  # a port that is not one (in the Origin or the Host header)
        return False


def _origin(scheme: str, host: str | None, port: int | None) -> tuple[str, str, int | None]:
    """(scheme, host, port) as a browser compares them: a default port is the port omitted."""
    scheme = scheme.lower()
    return scheme, (host or "").lower(), port or _DEFAULT_PORTS.get(scheme)


def checked_form(request: Request, session: Session, csrf: str | None) -> None:
    if not _same_origin(request) or not same_secret(csrf, session.csrf):
        raise HTTPException(403, "the form's CSRF token does not match this session; reload the page and send it again")


# Nothing from elsewhere, no script, no framing; pages of a signed-in session are not cached.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
                               "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff", "Referrer-Policy": "same-origin", "Cache-Control": "no-store",
}


def _page(request: Request, template: str, session: Session | None, status: int = 200, **context: Any) -> HTMLResponse:
    choices = operator_choices(request, session) if session is not None else []
    return HTMLResponse(render(template, request=request, session=session, operator_choices=choices, **context),
                        status_code=status, headers=SECURITY_HEADERS)


def _forbidden(request: Request, session: Session, what: str) -> HTMLResponse:
    return _page(request, "forbidden.html", session, status=403, what=what)


# ------------------------------------------------------------------ sign-in
@router.get("/")
def signin_page(request: Request, next: str | None = None) -> Response:
    if sessions(request).get(request.cookies.get(COOKIE)) is not None:
        return RedirectResponse(_safe_next(next), status_code=303)
    return _signin_form(request, next, None, 200)


def _signin_form(request: Request, next: str | None, error: str | None, status: int) -> Response:
    store = sessions(request)
    token = store.signin_token()
    response = _page(request, "signin.html", None, status=status, next=_safe_next(next), error=error, csrf=token)
    response.set_cookie(PRE_COOKIE, token, max_age=store.signin_s, path="/ui", httponly=True, samesite="strict",
                        secure=request.url.scheme == "https")
    return response


def _signin_form_checked(request: Request, csrf: str) -> bool:
    """The sign-in form came from this site, and its token is one the store signed and gave this
    browser (its cookie): a pair the client made up, or another browser's token, is refused."""
    pre = request.cookies.get(PRE_COOKIE)
    return (_same_origin(request) and pre is not None and same_secret(csrf, pre)
            and sessions(request).signin_token_valid(csrf))


def _safe_next(next: str | None) -> str:
    """Only a page of the console (never another site: `//host` or `/\\host`)."""
    if next and next.startswith("/ui/") and not next.startswith(("//", "/\\")) and "\\" not in next:
        return next
    return "/ui/rounds"


@router.post("/")
def signin(request: Request, key: Annotated[str, Form(max_length=500)], csrf: Annotated[str, Form(max_length=200)] = "",
           next: Annotated[str | None, Form(max_length=2000)] = None) -> Response:
    if not _signin_form_checked(request, csrf):
        return _signin_form(request, next, "The form expired or came from another site; sign in again.", 403)
    found = request.app.state.keys.store.check(key.strip())
    if found is None:
        return _signin_form(request, next, "This key is not valid (unknown, mistyped or revoked).", 401)
    if found.role not in ROLES_CONSOLE:
        return _signin_form(request, next, f"A {found.role} key cannot use the console "
                            f"(it needs a {', '.join(ROLES_CONSOLE[:-1])} or {ROLES_CONSOLE[-1]} key).", 403)
    store = sessions(request)
    token = store.open(found.key_id)
    response = RedirectResponse(_safe_next(next), status_code=303)
    response.set_cookie(COOKIE, token, max_age=store.session_s, path="/ui", httponly=True, samesite="strict",
                        secure=request.url.scheme == "https")
    response.delete_cookie(PRE_COOKIE, path="/ui")
    return response


@router.post("/signout")
def signout(request: Request, session: UI, csrf: Annotated[str | None, Form(max_length=200)] = None) -> Response:
    checked_form(request, session, csrf)
    sessions(request).end(request.cookies.get(COOKIE) or "")
    response = RedirectResponse("/ui/", status_code=303)
    response.delete_cookie(COOKIE, path="/ui", httponly=True, samesite="strict")
    return response


@router.post("/operator")
def pick_operator(request: Request, session: UI, csrf: Annotated[str | None, Form(max_length=200)] = None,
                  operator: Annotated[str, Form(max_length=64)] = "",
                  next: Annotated[str | None, Form(max_length=2000)] = None) -> Response:
    """The operator picker: the session's pages show this operator's players (empty: every one
    the key may see); 403 for an operator the key does not read."""
    checked_form(request, session, csrf)
    picked = operator.strip() or None
    if picked is not None:
        narrowed(session.key, picked)  # 403 operator_forbidden for another's
    sessions(request).pick(request.cookies.get(COOKIE) or "", picked)
    return RedirectResponse(_without_operator(_safe_next(next)), status_code=303)


def _without_operator(target: str) -> str:
    """The page the picker was on, without an `operator=` of its own (it would win over the pick)."""
    from urllib.parse import parse_qsl

    path, _, query = target.partition("?")
    kept = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k != "operator"]
    return path + ("?" + urlencode(kept) if kept else "")


def operator_choices(request: Request, session: Session) -> list[str]:
    """The operators the picker offers: the key's, or for a key of every operator each one the
    store knows (empty: nothing to pick, one operator)."""
    if session.operators:
        return list(session.operators) if len(session.operators) > 1 else []
    from projections.operators import operator_list

    with request.app.state.reads.views() as db:
        known = [o.operator_id for o in operator_list(db)]
    return known if len(known) > 1 else []


# ------------------------------------------------------------------ rounds
def _day(text: str | None, name: str) -> date | None:
    if not text:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise HTTPException(422, f"{name}={text!r} is not a day (YYYY-MM-DD)") from None


def _opt(text: str | None) -> str | None:
    return text.strip() or None if text else None


@router.get("/rounds")
def rounds_page(request: Request, session: UI, reads: READS, scope: SCOPE, table: str | None = None,
                player: str | None = None,
                status: str | None = None, dealer: str | None = None, since: str | None = None, until: str | None = None,
                time_from: str | None = None, time_to: str | None = None, sort: str | None = None,
                page: Annotated[int, Query(ge=1, le=100_000)] = 1) -> Response:
    q, query = _round_query(table, player, status, dealer, since, until, time_from, time_to, sort, scope)
    with reads.views() as db:
        found = data.round_page(db, q, page)
    return _page(request, "rounds.html", session, found=found, rows=found.rounds, f=q, statuses=STATUSES,
                 sorts=_SORT_NAMES, page=page, query=query, since=since or "", until=until or "",
                 time_from=time_from or "", time_to=time_to or "")


@router.get("/rounds.csv")
def rounds_csv(request: Request, session: UI, reads: READS, scope: SCOPE, table: str | None = None,
               player: str | None = None,
               status: str | None = None, dealer: str | None = None, since: str | None = None,
               until: str | None = None, time_from: str | None = None, time_to: str | None = None,
               sort: str | None = None) -> Response:
    """Every round the rounds page's search matches (not only its page), as CSV."""
    q, _ = _round_query(table, player, status, dealer, since, until, time_from, time_to, sort, scope)
    with reads.views() as db:
        lines = list(data.round_csv(db, q))
    return csv_response("rounds", lines)


def csv_response(name: str, lines: Iterable[str]) -> Response:
    """A list as a CSV download (`NAME-YYYYMMDDTHHMMSSZ.csv`): every list of the console gives
    one this way (projections/csvtext.py writes the lines)."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return Response("".join(lines), media_type="text/csv; charset=utf-8",
                    headers={**SECURITY_HEADERS, "Content-Disposition": f'attachment; filename="{name}-{stamp}.csv"'})


_SORT_NAMES = {"-time": "newest first", "time": "oldest first", "table": "table and number",
               "-stake": "player's stake, highest first", "-net": "player's net, best first",
               "net": "player's net, worst first"}


def _round_query(table: str | None, player: str | None, status: str | None, dealer: str | None,
                 since: str | None, until: str | None, time_from: str | None, time_to: str | None,
                 sort: str | None, scope: OperatorScope) -> tuple[RoundQuery, dict[str, str]]:
    """The rounds search as the page's form sends it, checked; and its non-empty fields (for links)."""
    status, sort = _opt(status), _opt(sort) or "-time"
    if status is not None and status not in STATUSES:
        raise HTTPException(422, f"status must be one of {', '.join(STATUSES)}")
    if sort not in _SORT_NAMES or (sort.lstrip("-") in PLAYER_SORTS and not _opt(player)):
        raise HTTPException(422, f"sort must be one of {', '.join(_SORT_NAMES)} (by stake or net: with a player)")
    first, last = data.period(_day(since, "since"), _day(until, "until"))
    q = RoundQuery(player=scoped_search(scope, _opt(player)), scope=scope, table=_opt(table), status=status, dealer=_opt(dealer), since=first,
                   until=last, time_from=_time(time_from, "time_from"), time_to=_time(time_to, "time_to"), sort=sort)
    fields = (("player", _opt(player)), ("table", q.table), ("status", status), ("dealer", q.dealer), ("since", since),
              ("until", until), ("time_from", time_from), ("time_to", time_to),
              ("sort", sort if sort != "-time" else None))
    return q, {k: v for k, v in fields if v}


def _time(text: str | None, name: str) -> time | None:
    if not text or not text.strip():
        return None
    try:
        return time.fromisoformat(text.strip())
    except ValueError:
        raise HTTPException(422, f"{name}={text!r} is not a time of day (HH:MM)") from None


def _round_id(ref: str) -> Any:
    try:
        return queries.round_ref(ref)
    except Refusal as refusal:
        raise HTTPException(422, f"{refusal.code}: {refusal.message}") from None


def _document(reads: ReadService, ref: str, scope: OperatorScope) -> dict[str, Any]:
    """The round's replay document as GET /v1/rounds/{ref}/replay shows it to `scope` (another
    operator's bets only as a count and a total: projections/redaction.py), its players named
    as people read them."""
    return people_named(redact_document(_recorded(reads, ref), scope))


def _recorded(reads: ReadService, ref: str) -> dict[str, Any]:
    """The round's replay document (the read service's, as `ledger replay --json` prints it)."""
    replay = queries.round_replay(reads.log, _round_id(ref), ref=ref)
    if replay is None:
        raise HTTPException(404, f"no round {ref} in the store")
    return asdict(replay)


@router.get("/rounds/{ref:id}")
def round_page(request: Request, ref: str, session: UI, reads: READS, scope: SCOPE,
               step: Annotated[int | None, Query(ge=1, le=100_000)] = None) -> Response:
    doc = _document(reads, ref, scope)
    with reads.views() as db:
        players = page_queries.round_players(db, doc["round_id"])
    players = [p for p in dict.fromkeys([*players, *(p["player_id"] for p in doc.get("players") or [])])
               if scope.allows_key(p)]
    n = round_drawing.step_number(doc, step) if doc["steps"] else 0
    return _page(request, "round.html", session, doc=doc, ref=ref, n=n, rv=round_drawing,
                 hands=round_drawing.table_at(doc, n) if n else [], players=players,
                 results=[round_drawing.result_line(doc, c) for c in doc["results"]])


@router.get("/rounds/{ref:id}/proof")
def round_proof(request: Request, ref: str, session: UI, reads: READS, scope: SCOPE) -> Response:
    """The round's events in the audit chain, from the chain kept in the store (projections/
    chain_index.py: extended by the events recorded since the last page that asked); for a
    scope of some operators, the events of the round as it shows them."""

    doc = _document(reads, ref, scope)
    with reads.views() as db:
        doc["proof"] = _kept_proof(reads, db, doc)
    return _page(request, "proof.html", session, doc=doc, ref=ref)


def _kept_proof(reads: ReadService, db: Any, doc: dict[str, Any], as_json: bool = False) -> dict[str, Any]:
    """The round's proof from the chain kept in the store, extended first; a kept chain that
    disagrees with the store (or with its own head) is a finding to show, not a crash."""
    from projections import chain_index

    try:
        chain_index.extend(reads.log, db)
        proof: dict[str, Any] = chain_index.proof(db, {s["position"] for s in doc["steps"]})
    except chain_index.ChainMismatch as exc:
        raise HTTPException(409, f"the audit chain kept in the store cannot prove this round: {exc}") from None
    return json.loads(json.dumps(proof)) if as_json else proof  # the bundle's document: keys as text


_FILE_UNSAFE = re.compile(r"[^A-Za-z0-9_.@-]")  # `/` would make a folder, `:` a name Windows refuses


@router.get("/rounds/{ref:id}/bundle")
def round_bundle(request: Request, ref: str, session: UI, reads: READS, scope: SCOPE) -> Response:
    """The round's dispute bundle, proved from the chain kept in the store (as the proof page);
    for a scope of some operators, redacted as `ledger replay --bundle --operator` makes it (the
    other operators' events by their hashes only: ops/bundle/build.py)."""
    from ops.bundle.build import BundleError, write_bundle
    from projections.chain_index import ChainMismatch

    doc = _recorded(reads, ref)
    name = f"round-{_FILE_UNSAFE.sub('-', doc.get('round') or doc['round_id'])}.zip"
    with reads.views() as db, tempfile.TemporaryDirectory() as tmp:
        doc["proof"] = _kept_proof(reads, db, doc, as_json=True)
        try:
            write_bundle(Path(tmp) / name, reads.log, doc, views=db, scope=scope)
        except (BundleError, ChainMismatch) as exc:
            raise HTTPException(409, str(exc)) from None
        body = (Path(tmp) / name).read_bytes()
    return Response(body, media_type="application/zip",
                    headers={"Content-Disposition": f'attachment; filename="{quote(name)}"'})


# ------------------------------------------------------------------ players and tables
@router.get("/players/{player:id}")
def player_page(request: Request, player: str, session: UI, reads: READS, scope: SCOPE, since: str | None = None,
                until: str | None = None, page: Annotated[int, Query(ge=1, le=100_000)] = 1) -> Response:
    """The player as its operator names it (`?operator=`, else the operator picked; a key of every
    operator: the default operator's), as GET /v1/recall/{player}."""
    first, last = _day(since, "since"), _day(until, "until")
    key = scoped_player(scope, player)
    with reads.views() as db:
        story = data.player_story(db, key, first, last, page)
        balances = data.player_balances(db, key)
    refunds = [(r, f) for r in story.rounds for f in r.refunds]
    query = {k: v for k, v in (("since", since), ("until", until), ("operator", request.query_params.get("operator")))
             if v}
    return _page(request, "player.html", session, player=player, key=key, story=story, balances=balances,
                 refunds=refunds, since=since or "", until=until or "", page=page, query=query)


@router.get("/tables/{table:id}")
def table_page(request: Request, table: str, session: UI, reads: READS, scope: SCOPE) -> Response:
    """For a scope of some operators: their players' share of the GGR, their rounds and seats,
    and none of the monitor's charts (every operator's bets)."""
    facts = page_queries.table_facts(reads.log, table)
    with reads.views() as db:
        zones = gaming_zones(None)
        ggr = [r for r in reads.figures(f"ggr-{_scope_name(scope)}", lambda: queries.ggr(db, zones, scope=scope).rows)
               if r.table_id == table]
        report = reads.figures("monitor-None..None", lambda: data.monitor_report(db, zones)) if scope.everyone else None
        recent = data.round_page(db, RoundQuery(table_id=table, sort="-time", scope=scope), 1, 20).rounds
    if not (facts.configs or ggr or recent):
        raise HTTPException(404, f"no table {table} in the store" if scope.everyone else
                            f"no round at table {table} with a player of {', '.join(sorted(scope.operators or ()))}")
    seats = [s for s in (facts.seating.seating.get("held", []) if facts.seating else []) if scope.allows_key(s[1])]
    return _page(request, "table.html", session, table=table, facts=facts, recent=recent, seats=seats,
                 ggr_chart=ggr_chart(table, ggr), **_table_monitor(table, report))


def _table_monitor(table: str, report: data.MonitorReport | None) -> dict[str, Any]:
    if report is None:
        return {"rtp_chart": None, "deal_charts": []}
    monitor = [r for r in report.rtp_rows if r["table_id"] == table]
    deals = [r for r in report.deal_rows if r["table_id"] == table]
    return {"rtp_chart": rtp_chart(f"Return at {table}", monitor),
            "deal_charts": [deal_chart(level, f"table {table}", deals) for level in data.DEAL_LEVELS]}


def _scope_name(scope: OperatorScope) -> str:
    """A scope in a cache key of the read service's figures."""
    return "*" if scope.operators is None else ",".join(sorted(scope.operators))


def ggr_chart(table: str, rows: list[queries.GgrRow]) -> Any:
    from domain.money import format_minor

    rows = sorted(rows, key=lambda r: (r.currency, r.day))
    currencies = sorted({r.currency for r in rows})
    several = len(currencies) > 1
    return bar_chart(f"GGR per gaming day at {table}",
                     "Gross gaming revenue (staked minus paid minus refunded) per gaming day; a bar below "
                     "the line is a day the house lost.",
                     [r.day + (f" {r.currency}" if several else "") for r in rows],
                     [r.ggr_minor for r in rows], [format_minor(r.ggr_minor, r.currency) for r in rows],
                     ("Gaming day", "GGR"), money_tick(None if several else currencies[0] if rows else None),
                     ("GGR: the house won", "GGR: the house lost"),
                     ("GGR" + (" (each day in its currency)" if several else ""), "Gaming day"))


def rtp_chart(title: str, rows: list[dict[str, Any]]) -> Any:
    points = data.rtp_over_days(rows)
    return band_chart(title, "Observed return per unit staked, cumulated day by day, against the game's "
                      "expected return and a band of three standard deviations around it (tested bet types only).",
                      Series([p.day for p in points], [p.observed_ppm for p in points],
                             [p.expected_ppm for p in points], [p.band_ppm for p in points]),
                      [(p.day, percent(p.observed_ppm), percent(p.expected_ppm),
                        f"{percent(p.expected_ppm - p.band_ppm)} .. {percent(p.expected_ppm + p.band_ppm)}",
                        str(p.lines)) for p in points],
                      ("Day (cumulated to)", "Observed", "Expected", "Band (3 sd)", "Lines"),
                      ("Observed return, cumulated", "Expected return (game math)",
                       "Expected ± 3 standard deviations"),
                      ("Return per unit staked", "Day (cumulated to)"))


_DEAL_TEXTS = {
    "up_card": ("Up cards at {who}", "Share of rounds dealt each dealer up card against the shoe's composition "
                "(1/13 a rank, 4/13 ten-value cards), with a band of three standard deviations; the test counts "
                "aces and ten-value cards together.", "Share of rounds", "Shoe's composition"),
    "dealer_bust": ("Dealer busts by up card at {who}", "The dealer's bust rate after each up card against its exact "
                    "probability under the table's rules, with a band of three standard deviations (rounds in "
                    "which the dealer played out).", "Bust rate", "Exact probability"),
}
_RATE_TEXTS = {"void_rate": "Voided rounds", "human_error_rate": "Rounds with a human error"}


def deal_chart(level: str, who: str, rows: list[dict[str, Any]]) -> Any:
    title, desc, what, expected = _DEAL_TEXTS[level]
    return _rate_chart(title.format(who=who), desc, data.deal_points(rows, level),
                       ("Up card", what, "Expected", "Band (3 sd)", "Rounds"), (what, expected), "Up card")


def ops_chart(level: str, rows: list[dict[str, Any]], dealer: str | None) -> Any:
    """Every dealer's rate, so the tested one (marked) is seen among the others."""
    what = _RATE_TEXTS[level]
    return _rate_chart(f"{what} per dealer", f"{what} per dealer (each a bar) against the rate of the rest of "
                       "the studio as the test takes it (smoothed), with a band of three standard deviations for "
                       "that dealer's number of rounds.", data.rate_points(rows, level),
                       ("Dealer", "Rate", "Rest of the studio (smoothed)", "Band (3 sd)", "Rounds"),
                       (f"{what}, share of the dealer's rounds", "Rest of the studio (smoothed)"), "Dealer", dealer)


def _rate_chart(title: str, desc: str, points: list[data.RatePoint], headers: tuple[str, ...],
                names: tuple[str, str], x_title: str, marked: str | None = None) -> Any:
    """Rates per category as bars against their expected rate and band; the `marked` one
    (the dealer tested) named "(this test)" in the figures."""
    def label(p: data.RatePoint) -> str:
        return f"{p.label} (this test)" if p.label == marked else p.label

    return band_chart(title, desc, Series([p.label for p in points], [p.observed_ppm for p in points],
                                          [p.expected_ppm for p in points], [p.band_ppm for p in points],
                                          floor=0, ceiling=1_000_000),
                      [(label(p), percent(p.observed_ppm), percent(p.expected_ppm),
                        f"{percent(max(p.expected_ppm - p.band_ppm, 0))} .. "
                        f"{percent(min(p.expected_ppm + p.band_ppm, 1_000_000))}",
                        f"{p.count} of {p.trials}") for p in points], headers,
                      (names[0], names[1], "Expected ± 3 standard deviations"), (names[0], x_title),
                      categories=True, marked=marked)


def finding_chart(report: data.MonitorReport, f: Any) -> Any:
    """The chart of one monitor test, from the view rows behind it."""
    rows = data.rows_of_finding(report, f)
    if f.level in data.DEAL_LEVELS:
        return deal_chart(f.level, _finding_who(f), rows)
    if f.level in data.OPS_LEVELS:
        return ops_chart(f.level, rows, f.dealer_id)
    return rtp_chart(_finding_title(f), rows)


# ------------------------------------------------------------------ monitor, rejections
MONITOR_KINDS = {"table": "Return of a table", "dealer": "Return of a dealer",
                 "table_bet_type": "Return of a bet type at a table", "bet_type": "Return of a bet type, studio-wide",
                 "up_card": "Up cards", "dealer_bust": "Dealer busts", "void_rate": "Voided rounds",
                 "human_error_rate": "Human errors"}


@router.get("/monitor")
def monitor_page(request: Request, session: UI, reads: READS, all: str = "", table: str | None = None, kind: str | None = None,
                 since: str | None = None, until: str | None = None) -> Response:
    """The monitor's tests over the gaming days of play [since, until) (as `ledger monitor`,
    every day by default): the flagged ones, or every one (`all=1`; the filter's form sends
    `all=` for the flagged only), of one kind, at one table; an index links to each."""
    every_operator_only(session, "the monitor")
    every, table, kind = all.strip().lower() in ("1", "true", "on", "yes"), _opt(table), _opt(kind)
    if kind is not None and kind not in MONITOR_KINDS:
        raise HTTPException(422, f"kind must be one of {', '.join(MONITOR_KINDS)}")
    first, last = _gaming_days(since, until)
    zones = gaming_zones(None)
    period = f"{first}..{last}"
    with reads.views() as db:
        report = reads.figures(f"monitor-{period}", lambda: data.monitor_report(db, zones, first, last))
    listed = [f for f in report.findings if every or f.flagged]
    charts = reads.figures(f"monitor-charts-{every}-{period}", lambda: {_finding_key(f): finding_chart(report, f)
                                                                       for f in listed})
    shown = [f for f in listed if (table is None or f.table_id == table) and (kind is None or f.level == kind)]
    empty = None if report.rtp_rows or report.ops_rows or report.deal_rows else queries.empty_period(
        reads.log, first, last, zones)
    return _page(request, "monitor.html", session,
                 findings=[(f, charts.get(_finding_key(f)), _finding_anchor(f)) for f in shown],
                 total=len(report.findings), flagged=sum(f.flagged for f in report.findings),
                 untested=[u for u in report.untested if table is None or u.table_id == table], show_all=every,
                 tables=sorted({f.table_id for f in report.findings if f.table_id} |
                               {u.table_id for u in report.untested}),
                 kinds=MONITOR_KINDS, table=table or "", kind=kind or "", filtered=len(shown) < len(listed),
                 since=since or "", until=until or "", empty=empty, zone=str(zones.fallback))


def _gaming_days(since: str | None, until: str | None) -> tuple[str | None, str | None]:
    """A form's [since, until) as the first and last gaming day included (until exclusive, as
    `--until` on the command line)."""
    first, end = _day(since, "since"), _day(until, "until")
    if first and end and first >= end:
        raise HTTPException(422, f"since={since} is not before until={until}")
    return (first.isoformat() if first else None,
            (end - timedelta(days=1)).isoformat() if end and end > date.min else None)


def _finding_anchor(f: Any) -> str:
    """The id of a test's section: the same for the same test whatever the filter (a link to
    it can be kept), and a plain id whatever text the table or dealer holds."""
    return "test-" + sha256(repr(_finding_key(f)).encode()).hexdigest()[:12]


def _finding_key(f: Any) -> tuple[str, str | None, str | None, str | None]:
    return (f.level, f.table_id, f.dealer_id, f.bet_type)


def _finding_who(f: Any) -> str:
    who = " ".join(x for x in (f.table_id and f"table {f.table_id}", f.dealer_id and f"dealer {f.dealer_id}",
                               f.bet_type and f"bet type {f.bet_type}") if x)
    return who or "the studio"


def _finding_title(f: Any) -> str:
    return f"Return of {_finding_who(f)}"


@router.get("/rejections")
def rejections_page(request: Request, session: UI, reads: READS, scope: SCOPE, code: str | None = None,
                    table: str | None = None,
                    since: str | None = None, until: str | None = None,
                    after: Annotated[int, Query(ge=0, le=2**62)] = 0) -> Response:
    rows, next_after = page_queries.rejection_rows(reads.log, _opt(code), _opt(table), _day(since, "since"),
                                                   _day(until, "until"), after, data.PAGE_ROWS, scope)
    query = {k: v for k, v in (("code", code), ("table", table), ("since", since), ("until", until)) if v}
    with reads.views() as db:
        rounds_paged, tables_paged = page_queries.with_pages(db, rows)
    return _page(request, "rejections.html", session, rows=rows, next_after=next_after, query=query,
                 code=code or "", table=table or "", since=since or "", until=until or "",
                 rounds_paged=rounds_paged, tables_paged=tables_paged)


@router.get("/rejections.csv")
def rejections_csv(request: Request, session: UI, reads: READS, scope: SCOPE, code: str | None = None,
                   table: str | None = None,
                   since: str | None = None, until: str | None = None) -> Response:
    """Every refused command the rejections page's filters match, as CSV."""
    rows = page_queries.every_rejection(reads.log, _opt(code), _opt(table), _day(since, "since"),
                                        _day(until, "until"), scope)
    return csv_response("rejections", csv_lines(_REJECTION_CSV, ([r.get(c) for c in _REJECTION_CSV] for r in rows)))


_REJECTION_CSV = ("id", "received_at", "code", "type", "command_id", "table_id", "round_no", "message")


# ------------------------------------------------------------------ reconcile
@router.get("/reconcile")
def reconcile_page(request: Request, session: UI) -> Response:
    return _page(request, "reconcile.html", session, report=None, error=None)


@router.post("/reconcile")
def reconcile_upload(request: Request, session: UI, reads: READS, scope: SCOPE, wallet: Annotated[UploadFile, File()],
                     csrf: Annotated[str | None, Form(max_length=200)] = None) -> Response:
    report = _reconciled(request, session, reads, scope, wallet, csrf)
    if isinstance(report, Response):
        return report
    return _page(request, "reconcile.html", session, report=report, error=None, operator=scope.only(),
                 filename=wallet.filename or "wallet.csv", wallet_rows=sum(report.counts.values()))


def _reconciled(request: Request, session: Session, reads: ReadService, scope: OperatorScope, wallet: UploadFile,
                csrf: str | None) -> queries.Reconciliation | Response:
    """The uploaded wallet file reconciled (the page and its CSV button), or the form again with
    why the file cannot be read (422). A scope of one operator: its wallet file, its players
    named by their own ids (as POST /v1/reconcile?operator=)."""
    from projections.reconcile import WalletFormatError

    checked_form(request, session, csrf)
    if not scope.everyone and scope.only() is None:
        raise HTTPException(403, "a wallet file is one operator's: pick the operator (at the top of the page) first")
    with tempfile.TemporaryDirectory() as tmp:
        path = _save(wallet, Path(tmp) / "wallet.csv")
        try:
            return queries.reconcile_wallet(reads.log, path, scope=scope)
        except (WalletFormatError, UnicodeDecodeError, ValueError) as exc:
            return _page(request, "reconcile.html", session, status=422, report=None,
                         error=str(exc).replace(str(path), wallet.filename or "wallet"))


@router.post("/reconcile.csv")
def reconcile_csv(request: Request, session: UI, reads: READS, scope: SCOPE, wallet: Annotated[UploadFile, File()],
                  csrf: Annotated[str | None, Form(max_length=200)] = None) -> Response:
    """The upload form's other button: every finding of the wallet file as CSV (the page keeps
    no upload, so the file is sent again)."""
    from projections.reconcile import finding_text

    report = _reconciled(request, session, reads, scope, wallet, csrf)
    if isinstance(report, Response):
        return report
    rows = ([*(f.get(c) for c in _FINDING_CSV[:-1]), finding_text(f)] for f in report.findings)
    return csv_response("reconcile-findings", csv_lines(_FINDING_CSV, rows))


_FINDING_CSV = ("category", "day", "table_id", "round", "player", "type", "reference", "currency", "details")


def _save(upload: UploadFile, path: Path) -> Path:
    body = upload.file.read(UPLOAD_BYTES_MAX + 1)
    if len(body) > UPLOAD_BYTES_MAX:
        raise HTTPException(413, f"{upload.filename}: larger than {UPLOAD_BYTES_MAX} bytes")
    path.write_bytes(body)
    return path


# ------------------------------------------------------------------ audit
@router.get("/audit")
def audit_page(request: Request, session: UI, reads: READS) -> Response:
    if not session.may_audit:
        return _forbidden(request, session, "the audit pages (auditor or admin keys only)")
    return _page(request, "audit.html", session, verified=None, head=reads.log.head(),
                 zone=str(gaming_zones(None).fallback))


@router.post("/audit/export")
def audit_export(request: Request, session: UI, reads: READS, scope: SCOPE,
                 csrf: Annotated[str | None, Form(max_length=200)] = None,
                 since: Annotated[str | None, Form(max_length=10)] = None,
                 until: Annotated[str | None, Form(max_length=10)] = None,
                 days: Annotated[Literal["played", "recorded"], Form()] = "played") -> Response:
    """The chain's stretch of the events played on the gaming days [since, until) (`ledger audit
    export --played-since/--played-until`), or of those recorded on the UTC days (`--since/--until`); for
    a scope of some operators (an auditor key of operators), the other operators' events redacted,
    their hashes kept (`ledger audit export --operator`)."""
    from ops import version
    from projections.audit_export import Window, export
    from projections.redaction import LinkRedactor

    if not session.may_audit:
        return _forbidden(request, session, "the audit export (auditor or admin keys only)")
    checked_form(request, session, csrf)
    log = reads.log
    exported_at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    zones = gaming_zones(None)
    first, last = _gaming_days(since, until)
    if days == "played":
        window = Window(played_from=first, played_to=last, zone=zones.fallback)
    else:
        window = Window(since=_instant(_day(since, "since")), until=_instant(_day(until, "until")))
    with tempfile.TemporaryDirectory() as tmp:
        result = export(tmp, log.stored(1, log.head(), page_size=5000), exported_at=exported_at,
                        window=window, software_version=version(),
                        shown=None if scope.everyone else LinkRedactor(scope))
        if not result.manifest["count"]:
            why = (queries.empty_period(log, first, last, zones).message if days == "played"
                   else "no event was recorded on those UTC days")
            return _page(request, "audit.html", session, status=422, verified=None, head=log.head(),
                         error=f"Nothing exported: {why}.", zone=str(zones.fallback))
        body = _zip_folder(Path(tmp))
    name = f"audit-export-{days}-{since or 'start'}-{until or 'head'}.zip"
    return Response(body, media_type="application/zip", headers={"Content-Disposition": f'attachment; filename="{name}"'})


def _instant(day: date | None) -> datetime | None:
    return None if day is None else datetime(day.year, day.month, day.day, tzinfo=UTC)


def _zip_folder(folder: Path) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(folder.iterdir()):
            zf.write(path, path.name)
    return buffer.getvalue()


@router.post("/audit/verify")
def audit_verify(request: Request, session: UI, reads: READS, scope: SCOPE, export: Annotated[UploadFile, File()],
                 csrf: Annotated[str | None, Form(max_length=200)] = None,
                 against_store: Annotated[bool, Form()] = False) -> Response:
    """Verify an export as the export page gives it (a zip of events.jsonl, events.csv and manifest.json)."""
    from projections.audit_export import EVENTS_CSV, EVENTS_JSONL, MANIFEST

    if not session.may_audit:
        return _forbidden(request, session, "the audit verification (auditor or admin keys only)")
    checked_form(request, session, csrf)
    log = reads.log
    with tempfile.TemporaryDirectory() as tmp:
        try:
            with zipfile.ZipFile(_save(export, Path(tmp) / "export.zip")) as zf:
                for name in (EVENTS_JSONL, EVENTS_CSV, MANIFEST):  # only these names: nothing else is written
                    if name in zf.namelist():
                        (Path(tmp) / name).write_bytes(zf.read(name))
        except zipfile.BadZipFile:
            return _page(request, "audit.html", session, status=422, verified=None, head=log.head(),
                         error=f"{export.filename}: not a zip file (upload the export as the export button gives it)")
        verified = queries.verify_export(tmp, log if against_store else None, scope)
    return _page(request, "audit.html", session, head=log.head(), filename=export.filename, verified=verified)


def mount(api: FastAPI) -> None:
    """Add the console's routes to the service."""
    api.include_router(router)


# ------------------------------------------------------------------ wallet delivery
@router.get("/wallet")
def wallet_page(request: Request, session: UI, reads: READS, scope: SCOPE) -> Response:
    """Payouts to the operators' wallets (docs/wallet.md): per operator, transactions by status,
    failed calls and the oldest one waiting; the dead letters and retries with the wallet's
    answers; the decisions taken. The same as `ledger wallet status`."""
    return _page(request, "wallet.html", session, delivery=read_status(reads.log, scope))
