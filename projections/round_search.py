"""Searching the rounds (`ledger round list`, GET /v1/rounds, the console's rounds page):
one statement over the `rounds` view, or over `recall` joined to it when a player is asked
for (one row per round and matching player: the player's own stake, return and refund).

Player and table match as case-insensitive prefixes (`p00`, `BJ-live`) through indexes of
the folded ids (`Db.prefix_match`); status `reversed` finds every corrected round (a
settlement reversed: awaiting its resettlement or void, or since resettled or voided).
A period is studio time [since, until) and a time of day [time_from, time_to) in UTC
(`period_clauses`, the one place that reads them). Pages are an offset (the console's
page numbers) or a cursor: the sort key of the last row, for the next page.
"""
from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, time
from typing import Any

from domain.errors import require
from domain.operators import EVERY_OPERATOR, OperatorScope
from projections.operators import key_clause
from projections.recall import RECALL
from projections.rounds import ROUNDS, STATUSES, studio_text
from projections.sql import Db

_ORDER = ("r.studio_time", "r.table_id", "r.round_no")
_NET = "(p.returned_minor + p.refunded_minor - p.staked_minor)"
# sort name -> its key; a player search adds the player id (two players of a round may match).
SORT_KEYS: dict[str, tuple[str, ...]] = {
    "time": _ORDER,
    "table": ("r.table_id", "r.round_no"),
    "stake": ("p.staked_minor", *_ORDER),
    "net": (_NET, *_ORDER),
}
PLAYER_SORTS = ("stake", "net")  # the player's own figures: a search by player only
SORTS = tuple(f"{sign}{name}" for name in SORT_KEYS for sign in ("", "-"))
ROUND_COLUMNS = ("round_id", "table_id", "round_no", "game", "ruleset_id", "ruleset_version", "currency",
                 "dealer_id", "status", "settlement_no", "opened_at", "closed_at", "studio_time", "void_cause",
                 "reversals")
PLAYER_COLUMNS = ("player_id", "staked_minor", "returned_minor", "refunded_minor", "results")
CLOSED = ("settled", "voided")  # a player's net is known once the round is closed


@dataclass(frozen=True)
class RoundQuery:
    """What to list: every field optional. `sort` names a key of SORT_KEYS, `-` first for
    descending (`-time`: newest first)."""

    player: str | None = None  # a case-insensitive prefix of a player id: that player's rounds
    table: str | None = None  # a case-insensitive prefix of a table id
    table_id: str | None = None  # exactly this table
    status: str | None = None  # one of STATUSES; `reversed`: every round with a settlement reversed
    dealer: str | None = None
    since: datetime | None = None  # studio time [since, until)
    until: datetime | None = None
    time_from: time | None = None  # time of day, UTC, [time_from, time_to); past midnight when from > to
    time_to: time | None = None
    sort: str = "time"
    scope: OperatorScope = EVERY_OPERATOR  # rounds where these operators' players played (`player`: theirs)

    def checked(self) -> RoundQuery:
        require(self.status is None or self.status in STATUSES, f"unknown status {self.status!r}")
        require(self.sort in SORTS, f"unknown sort {self.sort!r}")
        require(self.player or self.sort.lstrip("-") not in PLAYER_SORTS,
                f"sort {self.sort} needs a player (it is the player's own figure)")
        return self


@dataclass(frozen=True)
class Found:
    rows: list[dict[str, Any]]
    more: bool  # rows after these
    cursor: str | None  # the next page's cursor when `more`


def search(db: Db, q: RoundQuery, limit: int, offset: int = 0, cursor: str | None = None) -> Found:
    """Up to `limit` rounds from `offset` (or after `cursor`) in the query's order."""
    q.checked()
    source, where, params = _source(db, q)
    keys, descending = _sort(q)
    if cursor is not None:
        after = decode_cursor(cursor, len(keys))
        where.append(f"({', '.join(keys)}) {'<' if descending else '>'} ({', '.join('?' * len(keys))})")
        params += after
    columns = [f"r.{c}" for c in ROUND_COLUMNS] + ([f"p.{c}" for c in PLAYER_COLUMNS] if q.player else [])
    direction = " DESC" if descending else ""
    text = (f"SELECT {', '.join(columns + list(keys))} FROM {source} WHERE {' AND '.join(where)} "
            f"ORDER BY {', '.join(k + direction for k in keys)} LIMIT {int(limit) + 1} OFFSET {int(offset)}")
    found = db.query(text, params)
    names = [c.removeprefix("r.").removeprefix("p.") for c in columns]
    names = [f"player_{n}" if i >= len(ROUND_COLUMNS) and n != "player_id" else n for i, n in enumerate(names)]
    rows = [dict(zip(names, values)) for values in found[:limit]]
    more = len(found) > limit
    last = found[limit - 1][len(columns):] if more and limit else None
    return Found(rows, more, encode_cursor(list(last)) if last is not None else None)


def count(db: Db, q: RoundQuery) -> int:
    """How many rows the query lists in all."""
    source, where, params = _source(db, q.checked())
    return int(db.query(f"SELECT COUNT(*) FROM {source} WHERE {' AND '.join(where)}", params)[0][0])


def search_sql(db: Db, q: RoundQuery, limit: int) -> tuple[str, list[Any]]:
    """The page's statement without its columns (for EXPLAIN in the benchmark)."""
    source, where, params = _source(db, q.checked())
    keys, descending = _sort(q)
    direction = " DESC" if descending else ""
    return (f"SELECT r.round_id FROM {source} WHERE {' AND '.join(where)} "
            f"ORDER BY {', '.join(k + direction for k in keys)} LIMIT {int(limit) + 1}", params)


def _source(db: Db, q: RoundQuery) -> tuple[str, list[str], list[Any]]:
    """FROM and WHERE: tombstones (no table) are never listed."""
    where: list[str] = ["r.table_id IS NOT NULL"]
    params: list[Any] = []
    source = f"{ROUNDS.name} r"
    if q.player:
        # The player's rows first, by the folded index, then their rounds: PostgreSQL otherwise may
        # walk every round newest first, probing each for the player (97 ms at 1M events, against
        # a few ms). A subquery with an OFFSET is planned on its own on both stores.
        match, values = db.prefix_match("p.player_id", q.player)
        fence = "LIMIT ALL OFFSET 0" if db.dialect == "postgres" else "LIMIT -1 OFFSET 0"
        source = (f"(SELECT * FROM {RECALL.name} p WHERE {match} {fence}) p "
                  f"JOIN {ROUNDS.name} r ON r.round_id = p.round_id")
        params.extend(values)
    if not q.scope.everyone:
        if q.player:
            clause, values = key_clause("p.player_id", q.scope)
            _add(where, params, clause, values)
        else:
            clause, values = key_clause("s.player_id", q.scope)
            _add(where, params, f"EXISTS (SELECT 1 FROM {RECALL.name} s WHERE s.round_id = r.round_id AND {clause})",
                 values)
    if q.table:
        _add(where, params, *db.prefix_match("r.table_id", q.table))
    for clause, value in (("r.table_id = ?", q.table_id), ("r.dealer_id = ?", q.dealer)):
        if value is not None:
            _add(where, params, clause, [value])
    if q.status == "reversed":
        where.append("r.reversals > 0")
    elif q.status is not None:
        _add(where, params, "r.status = ?", [q.status])
    clauses, values = period_clauses(q)
    return source, where + clauses, params + values


def period_clauses(q: RoundQuery) -> tuple[list[str], list[Any]]:
    """The period asked for, on the round's studio time (fixed-width UTC text: its
    characters 12-19 are the time of day). The one function that reads a period."""
    where: list[str] = []
    params: list[Any] = []
    for clause, at in (("r.studio_time >= ?", q.since), ("r.studio_time < ?", q.until)):
        if at is not None:
            _add(where, params, clause, [studio_text(at)])
    start, end = (t.isoformat(timespec="seconds") if t else None for t in (q.time_from, q.time_to))
    of_day = "substr(r.studio_time, 12, 8)"
    if start and end and start > end:  # 22:00 to 02:00: the night across midnight
        _add(where, params, f"({of_day} >= ? OR {of_day} < ?)", [start, end])
    else:
        for clause, value in ((f"{of_day} >= ?", start), (f"{of_day} < ?", end)):
            if value:
                _add(where, params, clause, [value])
    return where, params


def _add(where: list[str], params: list[Any], clause: str, values: Sequence[Any]) -> None:
    where.append(clause)
    params.extend(values)


def _sort(q: RoundQuery) -> tuple[tuple[str, ...], bool]:
    name = q.sort.lstrip("-")
    keys = SORT_KEYS[name] + (("p.player_id",) if q.player else ())
    return keys, q.sort.startswith("-")


def encode_cursor(values: list[Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(values, separators=(",", ":")).encode()).decode().rstrip("=")


class BadCursor(ValueError):
    """A cursor this search did not give (or of another sort)."""


def decode_cursor(cursor: str, keys: int) -> list[Any]:
    try:
        values = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, binascii.Error):
        raise BadCursor(f"cursor {cursor[:40]!r} is not one this list gave") from None
    if not isinstance(values, list) or len(values) != keys or not all(
            isinstance(v, (str, int)) and not isinstance(v, bool) for v in values):
        raise BadCursor(f"cursor {cursor[:40]!r} is not one of this sort (or not one this list gave)")
    return values


# ------------------------------------------------------------------ per round and per player
def round_figures(db: Db, round_ids: list[str]) -> dict[str, dict[str, int]]:
    """Per round: how many players, staked, paid (in force) and refunded, from the recall view
    (by its key's index, 500 rounds a statement)."""
    out: dict[str, dict[str, int]] = {}
    for start in range(0, len(round_ids), 500):
        ids = round_ids[start:start + 500]
        found = db.query(f"SELECT round_id, COUNT(*), SUM(staked_minor), SUM(returned_minor), SUM(refunded_minor) "
                         f"FROM {RECALL.name} WHERE round_id IN ({', '.join('?' * len(ids))}) GROUP BY round_id", ids)
        out.update({r[0]: {"players": int(r[1]), "staked_minor": int(r[2] or 0), "paid_minor": int(r[3] or 0),
                           "refunded_minor": int(r[4] or 0)} for r in found})
    return out


NO_FIGURES = {"players": 0, "staked_minor": 0, "paid_minor": 0, "refunded_minor": 0}


def player_result(status: str, results: str | list[dict[str, Any]] | None, refunded_minor: int) -> str:
    """The player's result in a round: the outcomes of their bets in force (`win`, `lose, push`),
    `refunded` for a void, else where the round stands (`open`, `reversed`...)."""
    lines = json.loads(results) if isinstance(results, str) else (results or [])
    if status == "voided":
        return "refunded" if refunded_minor else "voided"
    outcomes = list(dict.fromkeys(str(line.get("outcome")) for line in lines))
    return ", ".join(outcomes) if outcomes and status == "settled" else status


def player_net(status: str, staked: int, returned: int, refunded: int) -> int | None:
    """What the round did to the player's account (returned and refunded less staked),
    once it is closed (None while open, paused or reversed)."""
    return returned + refunded - staked if status in CLOSED else None
