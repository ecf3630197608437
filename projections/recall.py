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
from collections.abc import Callable, Sequence
from datetime import UTC, tzinfo
from operator import attrgetter
from typing import Any

from domain.errors import require
from domain.model import StakeMove
from ledger.records import (
    SHORT_NAMES,
    BetPlaced,
    BettingClosed,
    CardDealt,
    DecisionTaken,
    FollowDecided,
    Interrupted,
    Opened,
    Paused,
    Posting,
    Record,
    Refund,
    Resumed,
    Settled,
    SettlementLine,
    SettlementReversed,
    Voided,
    postings_of,
)
from projections.balances import BALANCES, PLAYER_PREFIX
from projections.rounds import ROUNDS
from projections.sql import Db, Table
from projections.state import (
    Rows,
    View,
    Zones,
    as_zones,
    gaming_day,
    iso,
    studio_utc_text,
)

RECALL_ROUNDS = Table(
    "proj_recall_rounds",
    key=("round_id",),
    columns=(("round_id", "text"), ("status", "text"), ("timeline", "json")),
)
RECALL = Table(
    "proj_recall",
    # Keyed by round first: the key's own index serves "a round's players" (the console's round
    # list), so the view keeps two indexes, not three.
    key=("round_id", "player_id"),
    columns=(
        ("player_id", "text"), ("round_id", "text"), ("seq", "int"), ("table_id", "text"),
        ("round_no", "int"), ("game", "text"), ("currency", "text"), ("played_at", "text"),
        ("studio_at", "text"), ("status", "text"), ("bets", "json"), ("stake_moves", "json"), ("results", "json"),
        ("refunds", "json"), ("staked_minor", "int"), ("returned_minor", "int"), ("refunded_minor", "int"),
        ("balance_before_minor", "int"), ("balance_after_minor", "int"), ("timezone", "text"),
    ),
    # (lower(player_id), seq): the rounds search by a player id's start in any case
    # (projections/round_search.py, Db.prefix_match) reads a range of it.
    indexes=(("player_id", "seq"), ("lower(player_id)", "seq")),
)
RECALL_LAST_DEFAULT = 10
RECALL_LAST_MIN = 10
RECALL_LAST_MAX = 1000

_RECALL_ROUNDS = RECALL_ROUNDS.name
_RECALL = RECALL.name
_ROUNDS = ROUNDS.name
_BALANCES = BALANCES.name

_STATUS: dict[type, str] = {Voided: "voided", Settled: "settled", SettlementReversed: "reversed"}
# Timeline entry per event: which fields to keep.
_TIMELINE_FIELDS: dict[type, tuple[str, ...]] = {
    Opened: ("table_id", "round_no", "game", "ruleset_id", "ruleset_version", "shoe_id", "dealer_id"),
    BetPlaced: ("bet_id", "player_id", "bet_type", "spot", "stake_minor", "mode"),
    BettingClosed: (),
    CardDealt: ("seq_no", "card", "target"),
    DecisionTaken: ("hand", "action", "source", "amount_minor", "stake_moves"),
    FollowDecided: ("bet_id", "kind", "accept", "stake_moves"),
    Paused: ("cause", "by", "note", "flag_code"),
    Interrupted: ("cause", "by", "note", "player_id", "action"),
    Resumed: ("by", "note"),
    Voided: ("cause", "by", "note"),
    Settled: ("settlement_no", "ruleset_id", "ruleset_version"),
    SettlementReversed: ("settlement_no", "by", "reason"),
}
_FIELDS_BY_SHORT = {SHORT_NAMES[kind]: fields for kind, fields in _TIMELINE_FIELDS.items()}
_MOVES_AT = {kind: fields.index("stake_moves") for kind, fields in _TIMELINE_FIELDS.items() if "stake_moves" in fields}


def _values_getter(kind: type) -> Callable[[Record], Sequence[Any]]:
    """record -> its timeline values, in `_TIMELINE_FIELDS` order (stake moves as stored dicts).
    Most kinds get the bare attrgetter (a tuple, no Python call per event)."""
    fields = _TIMELINE_FIELDS[kind]
    if not fields:
        return lambda ev: ()
    get = attrgetter(*fields)
    if len(fields) == 1:
        return lambda ev: (get(ev),)
    moves_at = _MOVES_AT.get(kind)
    if moves_at is None:
        return get

    def values(ev: Record) -> list[Any]:
        out = list(get(ev))
        out[moves_at] = [m._asdict() for m in out[moves_at]]
        return out

    return values


_TIMELINE_VALUES = {kind: _values_getter(kind) for kind in _TIMELINE_FIELDS}


def expand_timeline(compact: list[list[Any]]) -> list[dict[str, Any]]:
    """Stored compact facts -> the timeline entries `ledger recall` shows:
    `{"version", "event", "at", <the event's fields>}` in the original order."""
    out = []
    for version, event, at, *values in compact:
        entry = {"version": version, "event": event, "at": at}
        entry.update(zip(_FIELDS_BY_SHORT[event], values))
        out.append(entry)
    return out


PlayerLine = StakeMove | SettlementLine | Refund


def _lines_by_player(ev: Record) -> dict[str, list[PlayerLine]]:
    """The event's stake moves / results / refunds grouped by player (one pass)."""
    lines: tuple[PlayerLine, ...]
    match ev:
        case DecisionTaken() | FollowDecided():
            lines = ev.stake_moves
        case Settled():
            lines = ev.results
        case Voided():
            lines = ev.refunds
        case _:
            lines = ()
    out: dict[str, list[PlayerLine]] = {}
    for line in lines:
        out.setdefault(line.player_id, []).append(line)
    return out


def _new_player_row(rows: Rows, ev: Record, info: dict[str, Any], player_id: str,
                    postings: tuple[Posting, ...]) -> dict[str, Any]:
    """The player's first row in the round; `postings` are the event's (its legs on the
    player's account are taken out of the balance, which already includes them)."""
    account = PLAYER_PREFIX + player_id
    currency = info["currency"]
    # their sum is checked by the balances view
    balance = _balance(rows, player_id, currency)
    for leg, amount in postings:  # a loop, not sum() over a generator: this runs per new row
        if leg == account:
            balance -= amount
    return {
        "player_id": player_id, "round_id": ev.originator_id, "seq": ev.position,
        "table_id": info["table_id"], "round_no": info["round_no"], "game": info["game"],
        "currency": currency, "played_at": iso(ev.timestamp),
        "studio_at": studio_utc_text(ev.studio_time, ev.timestamp), "status": "open",
        "bets": [], "stake_moves": [], "results": [], "refunds": [],
        "staked_minor": 0, "returned_minor": 0, "refunded_minor": 0,
        "balance_before_minor": balance, "balance_after_minor": None, "timezone": info.get("timezone"),
    }


def _balance(rows: Rows, player_id: str, currency: str) -> int:
    row = rows.get(_BALANCES, (PLAYER_PREFIX + player_id, currency))
    return row["balance_minor"] if row else 0


def _reversed_players(ev: SettlementReversed) -> list[str]:
    """The players a reversal touches, unique, in first-seen order (its postings name them)."""
    return list(dict.fromkeys(p.account[len(PLAYER_PREFIX):] for p in ev.postings
                              if p.account.startswith(PLAYER_PREFIX)))


def fold_timelines(rows: Rows, events: list[Record]) -> None:
    """View `timeline`, a page at a time: each round's compact facts, one
    appended per event to the page's own copy of the round's row.

    A round's row exists from its Opened event on; without it the round
    never opened (a tombstone void): nothing to show."""
    mine: dict[str, dict[str, Any] | None] = {}  # round id -> the page's row (None: never opened)
    values_of, short = _TIMELINE_VALUES, SHORT_NAMES
    # The events of one ledger batch share one timestamp object: its text is made once per run.
    at, at_text = None, ""
    for ev in events:
        round_id, kind = ev.originator_id, type(ev)
        row = mine.get(round_id, _UNSEEN)
        if row is _UNSEEN:
            row = mine[round_id] = rows.edit(_RECALL_ROUNDS, (round_id,))
        if row is None:
            if kind is not Opened:
                continue
            row = mine[round_id] = {"round_id": round_id, "status": "open", "timeline": []}
            rows.put(_RECALL_ROUNDS, row)
        if ev.timestamp is not at:
            at = ev.timestamp
            at_text = iso(at)
        row["timeline"].append([ev.originator_version, short[kind], at_text, *values_of[kind](ev)])
        status = _STATUS.get(kind)
        if status is not None:
            row["status"] = status


_UNSEEN: dict[str, Any] = {}  # a round not looked up yet in this page (`fold_timelines`)


def fold_timeline(rows: Rows, ev: Record) -> None:
    fold_timelines(rows, [ev])


def fold(rows: Rows, ev: Record) -> None:
    """View `recall`: the player rows of the events that touch players."""
    kind = type(ev)
    if kind is BetPlaced:
        _bet_placed(rows, ev)  # type: ignore[arg-type]
        return
    round_id = ev.originator_id
    if (kind is DecisionTaken or kind is FollowDecided) and not ev.stake_moves:  # type: ignore[union-attr]
        return  # hit, stand, a declined follow
    info = rows.get(_ROUNDS, (round_id,))
    if info is None or info["table_id"] is None:  # tombstone void
        return
    status = _STATUS.get(kind)
    by_player = _lines_by_player(ev)
    # Unique, in first-seen order: the players with lines (a reversal has none: its postings name them).
    players = list(by_player) if kind is not SettlementReversed else _reversed_players(ev)  # type: ignore[arg-type]
    apply = _APPLY[kind]
    for player_id in players:
        row = rows.edit(_RECALL, (round_id, player_id))
        if row is None:
            row = _new_player_row(rows, ev, info, player_id, postings_of(ev))
            rows.put(_RECALL, row)
        apply(row, by_player.get(player_id, _NO_LINES))
        if status is not None:
            row["status"] = status
            row["balance_after_minor"] = _balance(rows, player_id, info["currency"])


_NO_LINES: list[Any] = []  # never changed


def _bet_placed(rows: Rows, ev: BetPlaced) -> None:
    """The player's row after a bet (the most frequent player event)."""
    info = rows.get(_ROUNDS, (ev.originator_id,))
    if info is None or info["table_id"] is None:  # tombstone void
        return
    row = rows.edit(_RECALL, (ev.originator_id, ev.player_id))
    if row is None:
        row = _new_player_row(rows, ev, info, ev.player_id, ev.postings)
        rows.put(_RECALL, row)
    row["bets"].append({"bet_id": ev.bet_id, "bet_type": ev.bet_type, "spot": ev.spot, "stake_minor": ev.stake_minor})
    row["staked_minor"] += ev.stake_minor


# How an event's lines for one player change the page's own copy of the player's row
# (one per event kind, picked once per event: no match per player). Bets: `_bet_placed`.
def _moved(row: dict[str, Any], mine: list[Any]) -> None:
    staked = 0
    moves = row["stake_moves"]
    for m in mine:
        moves.append({"bet_id": m.bet_id, "amount_minor": m.amount_minor, "reason": m.reason})
        staked += m.amount_minor
    row["staked_minor"] += staked


def _settled(row: dict[str, Any], mine: list[Any]) -> None:
    returned = 0
    results = []
    for r in mine:
        results.append({"bet_id": r.bet_id, "bet_type": r.bet_type, "outcome": r.outcome,
                        "staked_minor": r.staked_minor, "returned_minor": r.returned_minor,
                        "explanation": r.explanation})
        returned += r.returned_minor
    row["results"] = results  # a resettlement replaces reversed lines
    row["returned_minor"] = returned


def _reversed(row: dict[str, Any], mine: list[Any]) -> None:
    row["results"] = []
    row["returned_minor"] = 0


def _refunded(row: dict[str, Any], mine: list[Any]) -> None:
    refunded = 0
    refunds = row["refunds"]
    for r in mine:
        refunds.append({"bet_id": r.bet_id, "amount_minor": r.amount_minor})
        refunded += r.amount_minor
    row["refunded_minor"] += refunded


_APPLY: dict[type, Callable[[dict[str, Any], list[Any]], None]] = {
    DecisionTaken: _moved, FollowDecided: _moved, Settled: _settled, SettlementReversed: _reversed, Voided: _refunded,
}


def recall_rounds(db: Db, player_id: str, last: int = RECALL_LAST_DEFAULT,
                  zone: tzinfo | Zones = UTC) -> list[dict[str, Any]]:
    """The player's `last` rounds, oldest first, each with the round's timeline and its
    gaming `day` (the studio time's day in the zone of the round's table configuration, else `zone`)."""
    zones = as_zones(zone)
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
        row["day"] = gaming_day(row["studio_at"], zones.of(row.pop("timezone")))
        out.append(row)
    return out


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


VIEW = View(
    name="recall",
    version=7,  # 2: the round timelines moved to view `timeline`; 3: studio time (studio_at) kept;
    # 4: timezone of the table configuration the round opened under; 5: index by round;
    # 6: keyed (round_id, player_id), the index by round dropped; 7: index by folded player id
    tables=(RECALL,),
    handles=frozenset({BetPlaced, DecisionTaken, FollowDecided, Settled, Voided, SettlementReversed}),
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
