"""Views `recall` and `timeline`: a player's last N rounds (game recall for
disputes and responsible-gaming screens).

`proj_recall_rounds` (view `timeline`) keeps each round's timeline in the
original order (bets, cards, decisions, follows, pauses, void, settlement,
reversal), one compact fact per event, `[version, event, at, *values]`
(`expand_timeline` turns them into the entries `ledger recall` shows).
`proj_recall` (view `recall`) has one row per (player, round): the
player's bets by type, stake moves, settlement lines (outcome, payout),
refunds, and the settlements reversed (what each had returned the player).
`seq` is the position of the player's first event in the round: the
player's rounds in the order they were played.

No balance is kept per row: a balance at a moment mixes in the movements of
the player's other rounds open at the same time, so the rows would not add up.
`player_story` makes the running balance when it is read: each round's own
net (returned + refunded - staked, what the round moved on the player's
account) added in ledger order.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, tzinfo
from operator import attrgetter
from typing import Any

from domain.model import StakeMove
from domain.money import format_minor
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
    Record,
    Refund,
    Resumed,
    Settled,
    SettlementLine,
    SettlementReversed,
    Voided,
)
from projections.balances import PLAYER_PREFIX
from projections.folding import (
    Rows,
    View,
    Zones,
    as_zones,
    gaming_day,
    iso,
    studio_utc_text,
)
from projections.rounds import ROUNDS
from projections.sql import Db, Table, columns_of

RECALL_ROUNDS = Table(
    "proj_recall_rounds",
    key=("round_id",),
    columns=(("round_id", "text"), ("status", "text"), ("timeline", "json")),
)
@dataclass(frozen=True)
class PlayerRound:
    """One player's round as the `recall` view keeps it: the fields `proj_recall` stores
    (`RecallRow`) and a round of the player's story answers (`StoryRound`, projections/queries.py,
    which adds what is made when read)."""

    player_id: str
    round_id: str
    seq: int
    table_id: str | None
    round_no: int | None
    game: str | None
    currency: str
    played_at: str | None
    studio_at: str
    status: str
    bets: list[dict[str, Any]]
    stake_moves: list[dict[str, Any]]
    results: list[dict[str, Any]]
    refunds: list[dict[str, Any]]
    corrections: list[dict[str, Any]]
    staked_minor: int
    returned_minor: int
    refunded_minor: int


@dataclass(frozen=True)
class RecallRow(PlayerRound):
    """A row of `proj_recall` (the table's columns are its fields): the player's round and the
    time zone of the table configuration it opened under (read into the answer's `day`)."""

    timezone: str | None


RECALL = Table(
    "proj_recall",
    # Keyed by round first: the key's own index serves "a round's players" (the console's round
    # list), so the view keeps two indexes, not three.
    key=("round_id", "player_id"),
    columns=columns_of(RecallRow),
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


def _new_player_row(ev: Record, info: dict[str, Any], player_id: str) -> dict[str, Any]:
    """The player's first row in the round."""
    return {
        "player_id": player_id, "round_id": ev.originator_id, "seq": ev.position,
        "table_id": info["table_id"], "round_no": info["round_no"], "game": info["game"],
        "currency": info["currency"], "played_at": iso(ev.timestamp),
        "studio_at": studio_utc_text(ev.studio_time, ev.timestamp), "status": "open",
        "bets": [], "stake_moves": [], "results": [], "refunds": [], "corrections": [],
        "staked_minor": 0, "returned_minor": 0, "refunded_minor": 0, "timezone": info.get("timezone"),
    }


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
            row = _new_player_row(ev, info, player_id)
            rows.put(_RECALL, row)
        apply(row, by_player.get(player_id, _NO_LINES), ev)
        if status is not None:
            row["status"] = status


_NO_LINES: list[Any] = []  # never changed


def _bet_placed(rows: Rows, ev: BetPlaced) -> None:
    """The player's row after a bet (the most frequent player event)."""
    info = rows.get(_ROUNDS, (ev.originator_id,))
    if info is None or info["table_id"] is None:  # tombstone void
        return
    row = rows.edit(_RECALL, (ev.originator_id, ev.player_id))
    if row is None:
        row = _new_player_row(ev, info, ev.player_id)
        rows.put(_RECALL, row)
    row["bets"].append({"bet_id": ev.bet_id, "bet_type": ev.bet_type, "spot": ev.spot, "stake_minor": ev.stake_minor})
    row["staked_minor"] += ev.stake_minor


# How an event's lines for one player change the page's own copy of the player's row
# (one per event kind, picked once per event: no match per player). Bets: `_bet_placed`.
def _moved(row: dict[str, Any], mine: list[Any], ev: Record) -> None:
    staked = 0
    moves = row["stake_moves"]
    for m in mine:
        moves.append({"bet_id": m.bet_id, "amount_minor": m.amount_minor, "reason": m.reason})
        staked += m.amount_minor
    row["staked_minor"] += staked


def _settled(row: dict[str, Any], mine: list[Any], ev: Record) -> None:
    returned = 0
    results = []
    for r in mine:
        results.append({"bet_id": r.bet_id, "bet_type": r.bet_type, "outcome": r.outcome,
                        "staked_minor": r.staked_minor, "returned_minor": r.returned_minor,
                        "explanation": r.explanation})
        returned += r.returned_minor
    row["results"] = results  # a resettlement replaces reversed lines
    row["returned_minor"] = returned


def _reversed(row: dict[str, Any], mine: list[Any], ev: Record) -> None:
    # What the reversed settlement had returned the player: the row can say what the correction changed.
    row["corrections"].append({"settlement_no": ev.settlement_no,  # type: ignore[union-attr]
                               "returned_minor": row["returned_minor"]})
    row["results"] = []
    row["returned_minor"] = 0


def _refunded(row: dict[str, Any], mine: list[Any], ev: Record) -> None:
    refunded = 0
    refunds = row["refunds"]
    for r in mine:
        refunds.append({"bet_id": r.bet_id, "amount_minor": r.amount_minor})
        refunded += r.amount_minor
    row["refunded_minor"] += refunded


_APPLY: dict[type, Callable[[dict[str, Any], list[Any], Record], None]] = {
    DecisionTaken: _moved, FollowDecided: _moved, Settled: _settled, SettlementReversed: _reversed, Voided: _refunded,
}


# The money a round moved on the player's account: stakes out, the settlement in force's returns
# and the void's refunds in (a reversal takes its settlement's returns out again).
_NET = "returned_minor + refunded_minor - staked_minor"


@dataclass(frozen=True)
class StoryPage:
    """A page of a player's story: `rounds` oldest first, each with its net and the running
    balance around it; `totals` per currency over the whole period (every page);
    `older`: rounds of the period before this page."""

    rounds: list[dict[str, Any]]
    totals: dict[str, dict[str, int]]
    older: bool


def player_story(db: Db, player_id: str, *, since: str | None = None, until: str | None = None,
                 offset: int = 0, limit: int = RECALL_LAST_DEFAULT, timelines: bool = False,
                 zone: tzinfo | Zones = UTC) -> StoryPage:
    """The player's rounds of the period (studio time [since, until), `utc_text` instants; either
    open), in ledger order (`seq`): the `limit` rounds after skipping the `offset` newest.

    The running balance is every earlier round's net added in ledger order, from the opening
    balance (the nets of the rounds played before `since`): each row's balance after is its
    balance before plus its net, and the next row's before is that after, on every page. Over the
    player's whole history the last after is the account's balance (the rounds are the only
    movements on a player's account)."""
    zones = as_zones(zone)
    within, within_params = _period(since, until)
    cols = _STORY_COLS + (("r.timeline",) if timelines else ())
    join = f" JOIN {RECALL_ROUNDS.name} r ON r.round_id = p.round_id" if timelines else ""
    found = db.query(f"SELECT {', '.join(cols)} FROM {RECALL.name} p{join} WHERE p.player_id = ? AND {within} "
                     f"ORDER BY p.seq DESC LIMIT {int(limit) + 1} OFFSET {int(offset)}",
                     [player_id, *within_params])
    rows = [_story_row(values, timelines, zones) for values in reversed(found[:limit])]
    totals, before = _totals(db, player_id, since, until, rows[0]["seq"] if rows else 0)
    for row in rows:
        row["balance_before_minor"] = before[row["currency"]]
        row["balance_after_minor"] = before[row["currency"]] = row["balance_before_minor"] + row["net_minor"]
    return StoryPage(rows, totals, len(found) > limit)


_STORY_COLS = tuple(f"p.{c}" for c in RECALL.column_names)


def _period(since: str | None, until: str | None, prefix: str = "p.") -> tuple[str, list[Any]]:
    where, params = ["1 = 1"], []
    for clause, value in ((f"{prefix}studio_at >= ?", since), (f"{prefix}studio_at < ?", until)):
        if value is not None:
            where.append(clause)
            params.append(value)
    return " AND ".join(where), params


def _story_row(values: Sequence[Any], timelines: bool, zones: Zones) -> dict[str, Any]:
    row = dict(zip(RECALL.column_names, values))
    for col in RECALL.json_columns:
        row[col] = _loads(row[col])
    if timelines:
        row["timeline"] = expand_timeline(_loads(values[-1]))
    row["day"] = gaming_day(row["studio_at"], zones.of(row.pop("timezone")))
    row["net_minor"] = row["returned_minor"] + row["refunded_minor"] - row["staked_minor"]
    row["correction"] = correction_text(row)
    return row


def _totals(db: Db, player_id: str, since: str | None, until: str | None,
            first_seq: int) -> tuple[dict[str, dict[str, int]], dict[str, int]]:
    """Per currency, one pass over the player's rows up to `until`: the period's totals (its
    opening balance: the nets of the rounds before `since`), and the balance before the
    round at `first_seq` (the opening plus the nets of the period's rounds before it)."""
    inside = "studio_at >= ?" if since is not None else "1 = 1"
    ask = [since] if since is not None else []
    sums = ", ".join(f"SUM(CASE WHEN {inside} THEN {what} ELSE 0 END)"
                     for what in ("1", "staked_minor", "returned_minor", "refunded_minor"))
    upto, upto_params = _period(None, until, prefix="")
    found = db.query(f"SELECT currency, {sums}, SUM(CASE WHEN {inside} THEN 0 ELSE {_NET} END), "
                     f"SUM(CASE WHEN {inside} AND seq < ? THEN {_NET} ELSE 0 END) FROM {RECALL.name} "
                     f"WHERE player_id = ? AND {upto} GROUP BY currency",
                     [*ask * 5, *ask, first_seq, player_id, *upto_params])
    totals, before = {}, {}
    for currency, *figures in found:
        rounds, staked, returned, refunded, opening, earlier = (int(f or 0) for f in figures)
        net = returned + refunded - staked
        totals[currency] = {"rounds": rounds, "staked_minor": staked, "returned_minor": returned,
                            "refunded_minor": refunded, "net_minor": net, "opening_minor": opening,
                            "closing_minor": opening + net}
        before[currency] = opening + earlier
    return totals, before


def correction_text(row: dict[str, Any]) -> str | None:
    """What the corrections of the round changed for the player, as money: each reversed
    settlement's return, then what is in force (None: never corrected)."""
    if not row["corrections"]:
        return None
    cur = row["currency"]
    was = "; ".join(f"settlement {c['settlement_no']} reversed (it had returned {format_minor(c['returned_minor'], cur)})"
                    for c in row["corrections"])
    if row["status"] == "voided":
        now = f"then voided: refunded {format_minor(row['refunded_minor'], cur)}"
    elif row["status"] == "settled":
        same = row["returned_minor"] == row["corrections"][-1]["returned_minor"]
        now = (f"settled again: returns {format_minor(row['returned_minor'], cur)}"
               + (" (no change for this player)" if same else ""))
    else:
        now = "no result in force yet (waiting for a void or a new settlement)"
    return f"corrected: {was}; {now}"


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


VIEW = View(
    name="recall",
    version=8,  # 2: the round timelines moved to view `timeline`; 3: studio time (studio_at) kept;
    # 4: timezone of the table configuration the round opened under; 5: index by round;
    # 6: keyed (round_id, player_id), the index by round dropped; 7: index by folded player id;
    # 8: balances before/after dropped (made when read: `player_story`), the reversed settlements
    # kept (`corrections`)
    tables=(RECALL,),
    handles=frozenset({BetPlaced, DecisionTaken, FollowDecided, Settled, Voided, SettlementReversed}),
    fold=fold,
    reads=("rounds",),
)

TIMELINE_VIEW = View(
    name="timeline",
    version=1,
    tables=(RECALL_ROUNDS,),
    handles=frozenset(_TIMELINE_FIELDS),
    fold=fold_timeline,
    fold_page=fold_timelines,  # reads only its own table: folded a page at a time
)
