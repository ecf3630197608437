"""View `balances`: every account's balance from the postings, per currency.

Accounts (docs/events.md): `player:<id>`, `round:<round id>` (stakes held
while the round runs), `house:<table>`. Every event's legs sum to zero
(checked again here), so all accounts of a currency sum to zero.

`funds_on_game_minor` (players only): what the player has put into rounds
that are not closed yet (stakes and stake moves of open, paused or reversed
rounds). The per-round amounts live in `proj_balance_holds` so a settlement,
void or reversal can release or restore them exactly.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from domain.errors import require
from domain.operators import EVERY_OPERATOR, OperatorScope
from ledger.records import (
    BetPlaced,
    DecisionTaken,
    FollowDecided,
    Postings,
    Record,
    Settled,
    SettlementReversed,
    Voided,
    postings_of,
)
from projections.folding import Rows, View, postings_delta
from projections.operators import key_clause
from projections.rounds import ROUNDS
from projections.sql import Db, Table, columns_of

AccountKind = Literal["player", "round", "house"]


@dataclass(frozen=True)
class BalanceRow:
    """A row of `proj_balances`, as `queries.balances` answers it (the table's columns are its fields)."""

    account: str
    currency: str
    kind: AccountKind
    owner: str | None
    balance_minor: int
    funds_on_game_minor: int
    last_position: int


BALANCES = Table("proj_balances", key=("account", "currency"), columns=columns_of(BalanceRow))
HOLDS = Table(
    "proj_balance_holds",
    key=("round_id",),
    columns=(("round_id", "text"), ("currency", "text"), ("holds", "json"), ("is_open", "int")),
)

_BALANCES, _HOLDS, _ROUNDS = BALANCES.name, HOLDS.name, ROUNDS.name
STAKE_EVENTS: frozenset[type] = frozenset({BetPlaced, DecisionTaken, FollowDecided})
CLOSE_EVENTS: frozenset[type] = frozenset({Settled, Voided})
PLAYER_PREFIX = "player:"


def fold(rows: Rows, ev: Record) -> None:
    postings = postings_of(ev)
    event_type = type(ev)
    stake = event_type in STAKE_EVENTS
    if not postings and stake:  # hit / stand / a declined follow: no money moved
        return
    if stake and len(postings) == 2:  # a bet or a stake move: one leg out, one in (most events here)
        (first, amount), (second, other) = postings
        if type(amount) is int and type(other) is int and amount + other == 0 and first != second:
            _two_legs(rows, ev, first, amount, second, other)
            return
    _any_legs(rows, ev, postings, event_type, stake)


def _any_legs(rows: Rows, ev: Record, postings: Postings, event_type: type, stake: bool) -> None:
    """`fold` of any event with postings (settlements, voids, reversals, other stakes)."""
    delta = postings_delta(postings)
    round_id = ev.originator_id
    info = rows.get(_ROUNDS, (round_id,))
    if info is None or info["currency"] is None:
        require(not postings, f"postings for a round never opened: {round_id} at {ev.position}")
        return
    currency = info["currency"]
    holds_row = rows.edit(_HOLDS, (round_id,))
    if holds_row is None:
        holds_row = {"round_id": round_id, "currency": currency, "holds": {}, "is_open": 1}
        rows.put(_HOLDS, holds_row)
    holds: dict[str, int] = holds_row["holds"]
    on_game: dict[str, int] = {}  # player account -> change of funds on game

    if stake:
        for player, amount in postings:
            if amount < 0 and player.startswith(PLAYER_PREFIX):
                holds[player] = holds.get(player, 0) - amount
                on_game[player] = on_game.get(player, 0) - amount
    elif event_type in CLOSE_EVENTS and holds_row["is_open"]:
        holds_row["is_open"] = 0
        for player, held in holds.items():
            on_game[player] = -held
    elif event_type is SettlementReversed and not holds_row["is_open"]:
        holds_row["is_open"] = 1  # the stakes are in the round again until the void or resettlement
        on_game = holds.copy()

    position = ev.position
    # Stake events: players on game are among the accounts with legs (no sort needed: one row per key).
    accounts = delta.keys() if stake else sorted(delta.keys() | on_game.keys())
    for account in accounts:
        moved = delta.get(account, 0)
        held = on_game.get(account, 0) if on_game else 0
        _move(rows, account, currency, moved, held, position)


def _two_legs(rows: Rows, ev: Record, first: str, amount: int, second: str, other: int) -> None:
    """`fold` of a stake event with two legs that balance (checked by the caller, as
    `postings_delta` checks them): the same rows changed the same way, without the
    general path's dicts of deltas and funds on game: stakes are most of the events this
    view folds."""
    round_id = ev.originator_id
    info = rows.get(_ROUNDS, (round_id,))
    if info is None or info["currency"] is None:
        require(False, f"postings for a round never opened: {round_id} at {ev.position}")
        return
    currency = info["currency"]
    holds_row = rows.edit(_HOLDS, (round_id,))
    if holds_row is None:
        holds_row = {"round_id": round_id, "currency": currency, "holds": {}, "is_open": 1}
        rows.put(_HOLDS, holds_row)
    holds: dict[str, int] = holds_row["holds"]
    position = ev.position
    for account, moved in ((first, amount), (second, other)):
        held = 0
        if moved < 0 and account.startswith(PLAYER_PREFIX):
            held = -moved
            holds[account] = holds.get(account, 0) + held
        _move(rows, account, currency, moved, held, position)


def _move(rows: Rows, account: str, currency: str, moved: int, held: int, position: int) -> None:
    """One account's balance row moved by `moved` and its funds on game by `held` (made when new)."""
    row = rows.edit(_BALANCES, (account, currency))
    if row is None:
        kind, _, owner = account.partition(":")
        rows.put(_BALANCES, {"account": account, "currency": currency, "kind": kind, "owner": owner,
                             "balance_minor": moved, "funds_on_game_minor": held, "last_position": position})
    else:
        row["balance_minor"] += moved
        if held:
            row["funds_on_game_minor"] += held
        row["last_position"] = position


def balance_rows(db: Db, accounts: list[str], kind: str | None, nonzero: bool, *, limit: int | None = None,
                 after: tuple[Any, ...] | None = None, scope: OperatorScope = EVERY_OPERATOR) -> list[dict[str, Any]]:
    """Accounts (all, or those named), of one kind (player | round | house) or all, in display
    order (kind, account, currency), at most `limit`, those after the sort key `after` alone;
    for a scope of operators, only their players' accounts (rounds and the house are the studio's)."""
    cols = BALANCES.column_names
    clauses: list[str] = []
    params: list[Any] = []
    if not scope.everyone:
        clause, more = key_clause("owner", scope)
        clauses.append(f"kind = 'player' AND {clause}")
        params += more
    if accounts:
        clauses.append(f"account IN ({', '.join(['?'] * len(accounts))})")
        params += accounts
    if kind:
        clauses.append("kind = ?")
        params.append(kind)
    if nonzero:
        clauses.append("(balance_minor <> 0 OR funds_on_game_minor <> 0)")
    if after is not None:
        clauses.append("(kind, account, currency) > (?, ?, ?)")
        params.extend(after)
    where = " WHERE " + " AND ".join(clauses) if clauses else ""
    cut = f" LIMIT {int(limit)}" if limit is not None else ""
    found = db.query(f"SELECT {', '.join(cols)} FROM {BALANCES.name}{where} ORDER BY kind, account, currency{cut}",
                     params)
    return [dict(zip(cols, r)) for r in found]


def balance_totals(db: Db) -> dict[str, int]:
    """The sum of every account per currency (zero when the books balance)."""
    found = db.query(f"SELECT currency, SUM(balance_minor) FROM {BALANCES.name} GROUP BY currency")
    return {c: int(t) for c, t in found}


VIEW = View(
    name="balances",
    version=1,
    tables=(BALANCES, HOLDS),
    handles=STAKE_EVENTS | CLOSE_EVENTS | {SettlementReversed},
    fold=fold,
    reads=("rounds",),
)
