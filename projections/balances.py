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

from typing import Any

from domain.errors import require
from projections.reader import RecordedEvent
from projections.rounds import round_row
from projections.sql import Table
from projections.state import Change, Put, Rows, View, postings_delta

BALANCES = Table(
    "proj_balances",
    key=("account", "currency"),
    columns=(
        ("account", "text"), ("currency", "text"), ("kind", "text"), ("owner", "text"),
        ("balance_minor", "int"), ("funds_on_game_minor", "int"), ("last_position", "int"),
    ),
)
HOLDS = Table(
    "proj_balance_holds",
    key=("round_id",),
    columns=(("round_id", "text"), ("currency", "text"), ("holds", "json"), ("is_open", "int")),
)

STAKE_EVENTS = frozenset({"Round.BetPlaced", "Round.DecisionTaken", "Round.FollowDecided"})
CLOSE_EVENTS = frozenset({"Round.Settled", "Round.Voided"})
PLAYER_PREFIX = "player:"


def account_row(rows: Rows, account: str, currency: str) -> dict[str, Any] | None:
    return rows.get(BALANCES.name, (account, currency))


def fold(rows: Rows, ev: RecordedEvent) -> list[Change]:
    postings = ev.fields.get("postings") or []
    if not postings and ev.name in STAKE_EVENTS:  # hit / stand / a declined follow: no money moved
        return []
    delta = postings_delta(postings)
    info = round_row(rows, ev.originator_id)
    if info is None or info["currency"] is None:
        require(not postings, f"postings for a round never opened: {ev.originator_id} at {ev.position}")
        return []
    currency = info["currency"]
    holds_row = rows.get(HOLDS.name, (ev.originator_id,))
    holds: dict[str, int] = dict(holds_row["holds"]) if holds_row else {}
    is_open = holds_row["is_open"] if holds_row else 1
    on_game: dict[str, int] = {}  # player account -> change of funds on game

    if ev.name in STAKE_EVENTS:
        for leg in postings:
            if leg["account"].startswith(PLAYER_PREFIX) and leg["amount_minor"] < 0:
                player = leg["account"]
                holds[player] = holds.get(player, 0) - leg["amount_minor"]
                on_game[player] = on_game.get(player, 0) - leg["amount_minor"]
    elif ev.name in CLOSE_EVENTS and is_open:
        is_open = 0
        for player, held in holds.items():
            on_game[player] = on_game.get(player, 0) - held
    elif ev.name == "Round.SettlementReversed" and not is_open:
        is_open = 1  # the stakes are in the round again until the void or resettlement
        for player, held in holds.items():
            on_game[player] = on_game.get(player, 0) + held

    changes: list[Change] = []
    for account in sorted(delta.keys() | on_game.keys()):
        old = account_row(rows, account, currency)
        kind, _, owner = account.partition(":")
        changes.append(Put(BALANCES.name, {
            "account": account, "currency": currency, "kind": kind, "owner": owner,
            "balance_minor": (old["balance_minor"] if old else 0) + delta.get(account, 0),
            "funds_on_game_minor": (old["funds_on_game_minor"] if old else 0) + on_game.get(account, 0),
            "last_position": ev.position,
        }))
    changes.append(Put(HOLDS.name, {"round_id": ev.originator_id, "currency": currency, "holds": holds,
                                    "is_open": is_open}))
    return changes


VIEW = View(
    name="balances",
    version=1,
    tables=(BALANCES, HOLDS),
    handles=STAKE_EVENTS | CLOSE_EVENTS | {"Round.SettlementReversed"},
    fold=fold,
    reads=("rounds",),
)
