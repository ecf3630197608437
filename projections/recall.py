"""Views `recall` and `timeline`: a player's last N rounds (game recall for
disputes and responsible-gaming screens).

`proj_recall_rounds` (view `timeline`) keeps each round's timeline in the
original order (bets, cards, decisions, follows, pauses, void, settlement,
reversal), one compact fact per event, `[version, event, at, *values]`
(`expand_timeline` turns them into the entries `ledger recall` shows).
`proj_recall` (view `recall`) has one row per (player, round): the
player's bets by type, stake moves, settlement lines (outcome, payout),
refunds, and the player's account balance before their first bet in the
round and after the event that closed it (in the round's currency; a
player playing several tables at once sees those movements too).
`seq` is the position of the player's first event in the round: the
player's rounds in the order they were played.

It reads `balances` (folded first), so the balance it sees already
includes the event being folded.
"""
from __future__ import annotations

import json
from typing import Any

from domain.errors import require
from projections.balances import PLAYER_PREFIX, account_row
from projections.reader import RecordedEvent
from projections.rounds import ROUNDS
from projections.sql import Db, Table
from projections.state import Change, Put, Rows, View, iso, postings_delta

RECALL_ROUNDS = Table(
    "proj_recall_rounds",
    key=("round_id",),
    columns=(("round_id", "text"), ("status", "text"), ("timeline", "json")),
)
RECALL = Table(
    "proj_recall",
    key=("player_id", "round_id"),
    columns=(
        ("player_id", "text"), ("round_id", "text"), ("seq", "int"), ("table_id", "text"),
        ("round_no", "int"), ("game", "text"), ("currency", "text"), ("played_at", "text"),
        ("status", "text"), ("bets", "json"), ("stake_moves", "json"), ("results", "json"),
        ("refunds", "json"), ("staked_minor", "int"), ("returned_minor", "int"), ("refunded_minor", "int"),
        ("balance_before_minor", "int"), ("balance_after_minor", "int"),
    ),
    indexes=(("player_id", "seq"),),
)
RECALL_LAST_DEFAULT = 10
RECALL_LAST_MIN = 10
RECALL_LAST_MAX = 1000

_RECALL_ROUNDS = RECALL_ROUNDS.name
_RECALL = RECALL.name
_ROUNDS = ROUNDS.name

_STATUS = {"Round.Voided": "voided", "Round.Settled": "settled", "Round.SettlementReversed": "reversed"}
# Timeline entry per event: which fields to keep.
_TIMELINE_FIELDS = {
    "Round.Opened": ("table_id", "round_no", "game", "ruleset_id", "ruleset_version", "shoe_id", "dealer_id"),
    "Round.BetPlaced": ("bet_id", "player_id", "bet_type", "spot", "stake_minor", "mode"),
    "Round.BettingClosed": (),
    "Round.CardDealt": ("seq_no", "card", "target"),
    "Round.DecisionTaken": ("hand", "action", "source", "amount_minor", "stake_moves"),
    "Round.FollowDecided": ("bet_id", "kind", "accept", "stake_moves"),
    "Round.Paused": ("cause", "by", "note", "flag_code"),
    "Round.Resumed": ("by", "note"),
    "Round.Voided": ("cause", "by", "note"),
    "Round.Settled": ("settlement_no", "ruleset_id", "ruleset_version"),
    "Round.SettlementReversed": ("settlement_no", "by", "reason"),
}


# Events that touch a player's row (the others only extend the round's timeline).
_PLAYER_EVENTS = frozenset({"Round.BetPlaced", "Round.DecisionTaken", "Round.FollowDecided", "Round.Settled",
                            "Round.Voided", "Round.SettlementReversed"})
_MOVE_EVENTS = frozenset({"Round.DecisionTaken", "Round.FollowDecided"})
_EVENT_SHORT = {name: name.partition(".")[2] for name in _TIMELINE_FIELDS}  # "Round.Settled" -> "Settled"
_FIELDS_BY_SHORT = {_EVENT_SHORT[name]: fields for name, fields in _TIMELINE_FIELDS.items()}


def timeline_entry(ev: RecordedEvent) -> list[Any]:
    """The compact fact stored per event: `[version, event, at, *values]`,
    values in `_TIMELINE_FIELDS` order (no repeated key names in the JSON)."""
    return [ev.originator_version, _EVENT_SHORT[ev.name], iso(ev.timestamp),
            *map(ev.fields.get, _TIMELINE_FIELDS[ev.name])]


def expand_timeline(compact: list[list[Any]]) -> list[dict[str, Any]]:
    """Stored compact facts -> the timeline entries `ledger recall` shows:
    `{"version", "event", "at", <the event's fields>}` in the original order."""
    out = []
    for version, event, at, *values in compact:
        entry = {"version": version, "event": event, "at": at}
        entry.update(zip(_FIELDS_BY_SHORT[event], values))
        out.append(entry)
    return out


def _lines_by_player(ev: RecordedEvent) -> dict[str, list[dict[str, Any]]]:
    """The event's stake moves / results / refunds grouped by player (one pass)."""
    f = ev.fields
    lines = f.get("stake_moves") or f.get("results") or f.get("refunds") or []
    out: dict[str, list[dict[str, Any]]] = {}
    for line in lines:
        out.setdefault(line["player_id"], []).append(line)
    return out


def _new_player_row(rows: Rows, ev: RecordedEvent, info: dict[str, Any], player_id: str,
                    deltas: dict[str, int]) -> dict[str, Any]:
    balance = _balance(rows, player_id, info["currency"])
    return {
        "player_id": player_id, "round_id": ev.originator_id, "seq": ev.position,
        "table_id": info["table_id"], "round_no": info["round_no"], "game": info["game"],
        "currency": info["currency"], "played_at": iso(ev.timestamp), "status": "open",
        "bets": [], "stake_moves": [], "results": [], "refunds": [],
        "staked_minor": 0, "returned_minor": 0, "refunded_minor": 0,
        "balance_before_minor": balance - deltas.get(PLAYER_PREFIX + player_id, 0),
        "balance_after_minor": None,
    }


def _balance(rows: Rows, player_id: str, currency: str) -> int:
    row = account_row(rows, PLAYER_PREFIX + player_id, currency)
    return row["balance_minor"] if row else 0


def _players_touched(ev: RecordedEvent) -> list[str]:
    f = ev.fields
    if ev.name == "Round.BetPlaced":
        return [f["player_id"]]
    if ev.name in ("Round.DecisionTaken", "Round.FollowDecided"):
        return [m["player_id"] for m in f["stake_moves"]]
    if ev.name == "Round.Settled":
        return [r["player_id"] for r in f["results"]]
    if ev.name == "Round.Voided":
        return [r["player_id"] for r in f.get("refunds") or []]
    if ev.name == "Round.SettlementReversed":
        return [p["account"][len(PLAYER_PREFIX):] for p in f["postings"] if p["account"].startswith(PLAYER_PREFIX)]
    return []


def fold_timelines(rows: Rows, events: list[RecordedEvent]) -> list[Change]:
    """View `timeline`, a page at a time: each round's compact facts, one
    appended per event, and one row written per round touched.

    A round's row exists from its Opened event on; without it the round
    never opened (a tombstone void): nothing to show."""
    touched: dict[str, dict[str, Any]] = {}  # round id -> its new row (lists are ours to extend)
    for ev in events:
        round_id, name = ev.originator_id, ev.name
        row = touched.get(round_id)
        if row is None:
            old = rows.get(_RECALL_ROUNDS, (round_id,))
            if old is not None:
                row = {"round_id": round_id, "status": old["status"], "timeline": list(old["timeline"])}
            elif name == "Round.Opened":
                row = {"round_id": round_id, "status": "open", "timeline": []}
            else:
                continue
            touched[round_id] = row
        row["timeline"].append([ev.originator_version, _EVENT_SHORT[name], iso(ev.timestamp),
                                *map(ev.fields.get, _TIMELINE_FIELDS[name])])
        status = _STATUS.get(name)
        if status is not None:
            row["status"] = status
    return [Put(_RECALL_ROUNDS, row) for row in touched.values()]


def fold_timeline(rows: Rows, ev: RecordedEvent) -> list[Change]:
    return fold_timelines(rows, [ev])


def fold(rows: Rows, ev: RecordedEvent) -> list[Change]:
    """View `recall`: the player rows of the events that touch players."""
    round_id, name = ev.originator_id, ev.name
    if name in _MOVE_EVENTS and not ev.fields["stake_moves"]:  # hit, stand, a declined follow
        return []
    info = rows.get(_ROUNDS, (round_id,))
    if info is None or info["table_id"] is None:  # tombstone void
        return []
    if name == "Round.BetPlaced":
        return [Put(_RECALL, _bet_placed(rows, ev, info, ev.fields["player_id"]))]
    status = _STATUS.get(name)
    changes: list[Change] = []
    players = list(dict.fromkeys(_players_touched(ev)))  # unique, first-seen order
    if not players:
        return changes
    deltas: dict[str, int] | None = None  # computed only when a player's first row needs it
    by_player = _lines_by_player(ev)
    for player_id in players:
        row = rows.get(_RECALL, (player_id, round_id))
        if row is None:
            if deltas is None:
                deltas = postings_delta(ev.fields.get("postings") or [])
            row = _new_player_row(rows, ev, info, player_id, deltas)
        else:
            row = dict(row)
        _apply(row, ev, by_player.get(player_id, ()))
        if status is not None:
            row["status"] = status
            row["balance_after_minor"] = _balance(rows, player_id, info["currency"])
        changes.append(Put(_RECALL, row))
    return changes


def _bet_placed(rows: Rows, ev: RecordedEvent, info: dict[str, Any], player_id: str) -> dict[str, Any]:
    """The player's row after a bet (the most frequent player event)."""
    f = ev.fields
    row = rows.get(_RECALL, (player_id, ev.originator_id))
    if row is None:
        row = _new_player_row(rows, ev, info, player_id, postings_delta(f.get("postings") or []))
    else:
        row = row.copy()
    row["bets"] = row["bets"] + [{"bet_id": f["bet_id"], "bet_type": f["bet_type"], "spot": f["spot"],
                                  "stake_minor": f["stake_minor"]}]
    row["staked_minor"] += f["stake_minor"]
    return row


def _apply(row: dict[str, Any], ev: RecordedEvent, mine: Any) -> None:
    """Update a fresh copy of the player's row with the event's lines for this
    player (lists are rebuilt, never mutated). Bets: `_bet_placed`."""
    if ev.name in ("Round.DecisionTaken", "Round.FollowDecided"):
        moves = [{"bet_id": m["bet_id"], "amount_minor": m["amount_minor"], "reason": m["reason"]} for m in mine]
        row["stake_moves"] = row["stake_moves"] + moves
        row["staked_minor"] += sum(m["amount_minor"] for m in moves)
    elif ev.name == "Round.Settled":
        row["results"] = [{k: r[k] for k in _RESULT_FIELDS} for r in mine]  # a resettlement replaces reversed lines
        row["returned_minor"] = sum(r["returned_minor"] for r in mine)
    elif ev.name == "Round.SettlementReversed":
        row["results"] = []
        row["returned_minor"] = 0
    elif ev.name == "Round.Voided":
        refunds = [{"bet_id": r["bet_id"], "amount_minor": r["amount_minor"]} for r in mine]
        row["refunds"] = row["refunds"] + refunds
        row["refunded_minor"] += sum(r["amount_minor"] for r in refunds)


_RESULT_FIELDS = ("bet_id", "bet_type", "outcome", "staked_minor", "returned_minor", "explanation")


def recall_rounds(db: Db, player_id: str, last: int = RECALL_LAST_DEFAULT) -> list[dict[str, Any]]:
    """The player's `last` rounds, oldest first, each with the round's timeline."""
    require(RECALL_LAST_MIN <= last <= RECALL_LAST_MAX, f"--last {last} outside {RECALL_LAST_MIN}..{RECALL_LAST_MAX}")
    cols = RECALL.column_names
    found = db.query(
        f"SELECT {', '.join('p.' + c for c in cols)}, r.timeline FROM {RECALL.name} p "
        f"JOIN {RECALL_ROUNDS.name} r ON r.round_id = p.round_id "
        "WHERE p.player_id = ? ORDER BY p.seq DESC LIMIT ?", (player_id, last))
    out = []
    for values in reversed(found):
        row = dict(zip(cols, values[:-1]))
        for col in RECALL.json_columns:
            row[col] = _loads(row[col])
        row["timeline"] = expand_timeline(_loads(values[-1]))
        out.append(row)
    return out


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


VIEW = View(
    name="recall",
    version=2,  # 2: the round timelines moved to view `timeline`
    tables=(RECALL,),
    handles=_PLAYER_EVENTS,
    fold=fold,
    reads=("rounds", "balances"),
)

TIMELINE_VIEW = View(
    name="timeline",
    version=1,
    tables=(RECALL_ROUNDS,),
    handles=frozenset(_TIMELINE_FIELDS),
    fold=fold_timeline,
    fold_page=fold_timelines,  # reads only its own table: folded a page at a time
)
