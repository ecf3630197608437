"""View `rounds`: one row per round with its facts and where it stands.

The other views read a round's table, game and currency from here (the
Opened facts never change), so it folds every event first.

status: open | paused | settled | reversed (settlement reversed, awaiting
void or resettlement) | voided. A void that arrived before the round opened
(tombstone) gives a row with NULL table and game. `studio_time` is the
studio's time of the round's opening, in UTC (`studio_instant`), so rounds
can be listed in the order and period the studio played them
(projections/round_search.py, `ledger round list`). `void_cause` is the cause of the void
that closed a voided round (NULL otherwise). `reversals` counts the settlements
reversed (a corrected round: its status is `settled` or `voided` again once
resettled or voided, the count stays). `timezone` is the time zone of the
table configuration the round opened under (NULL at an unconfigured table):
its gaming days are days there.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, get_args

from ledger.records import Opened, Paused, Record, Resumed, Settled, SettlementReversed, TableApplied, Voided
from projections.folding import Rows, View, iso, utc_form
from projections.sql import Db, Table, columns_of
from projections.tables import config_row

RoundStatus = Literal["open", "paused", "settled", "reversed", "voided"]
STATUSES: tuple[RoundStatus, ...] = get_args(RoundStatus)


@dataclass(frozen=True)
class RoundRow:
    """A row of `proj_rounds` (the table's columns are its fields). The rounds search answers
    with `RoundSummary` (projections/queries.py), which cannot share these fields: its order
    (`round, round_id, status, game, table_id, ...`) is the API's and this is the stored table's,
    and a dataclass's subclass only appends fields (docs/projections.md, rounds)."""

    round_id: str
    table_id: str | None  # None: a tombstone, a void before the round opened
    round_no: int | None
    game: str | None
    ruleset_id: str | None
    ruleset_version: int | None
    currency: str | None
    shoe_id: str | None
    dealer_id: str | None
    status: RoundStatus
    settlement_no: int
    opened_at: str | None
    closed_at: str | None
    opened_position: int | None
    studio_time: str | None
    timezone: str | None
    void_cause: str | None
    reversals: int


ROUNDS = Table("proj_rounds", key=("round_id",), columns=columns_of(RoundRow),
               indexes=(("table_id", "round_no"), ("studio_time",)))
LIST_LIMIT_MAX = 1_000_000

_STATUS_BY_EVENT: dict[type, str] = {
    Paused: "paused",
    Resumed: "open",
    Voided: "voided",
    Settled: "settled",
    SettlementReversed: "reversed",
}


def studio_instant(studio_time: str) -> datetime:
    """A stored studio time (ISO 8601 text) as an aware UTC datetime; a time
    without an offset is read as UTC (the feed requires one)."""
    at = datetime.fromisoformat(studio_time)
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)


def studio_text(at: datetime) -> str:
    """The sortable text form of a UTC studio time (fixed width, microseconds)."""
    return at.astimezone(UTC).isoformat(timespec="microseconds")


def _studio_text_of(studio_time: str) -> str:
    """`studio_text(studio_instant(studio_time))`: the usual studio time is that text already."""
    return studio_time if utc_form(studio_time) else studio_text(studio_instant(studio_time))


def round_row(rows: Rows, round_id: str) -> dict[str, Any] | None:
    """The round's facts, for the other views (None if never seen)."""
    return rows.get(ROUNDS.name, (round_id,))


def fold(rows: Rows, ev: Record) -> None:
    if isinstance(ev, Opened):
        rows.put(ROUNDS.name, {
            "round_id": ev.originator_id, "table_id": ev.table_id, "round_no": ev.round_no,
            "game": ev.game, "ruleset_id": ev.ruleset_id, "ruleset_version": ev.ruleset_version,
            "currency": ev.currency, "shoe_id": ev.shoe_id, "dealer_id": ev.dealer_id,
            "status": "open", "settlement_no": 0, "opened_at": iso(ev.timestamp), "closed_at": None,
            "opened_position": ev.position, "studio_time": _studio_text_of(ev.studio_time),
            "timezone": None, "void_cause": None, "reversals": 0,
        })
        return
    if isinstance(ev, TableApplied):
        _table_applied(rows, ev)
        return
    row = rows.edit(ROUNDS.name, (ev.originator_id,))
    if row is None:  # tombstone void: the round never opened
        row = {c: None for c in ROUNDS.column_names} | {"round_id": ev.originator_id, "settlement_no": 0,
                                                        "reversals": 0}
        rows.put(ROUNDS.name, row)
    row["status"] = _STATUS_BY_EVENT[type(ev)]
    match ev:
        case Voided():
            row["closed_at"] = iso(ev.timestamp)
            row["void_cause"] = ev.cause  # why, beside the status: `ledger round list --status voided`
        case Settled():
            row["closed_at"] = iso(ev.timestamp)
            row["settlement_no"] = ev.settlement_no
        case SettlementReversed():
            row["closed_at"] = None
            row["reversals"] += 1  # kept after a resettlement or void: the round stays findable as corrected


def _table_applied(rows: Rows, ev: TableApplied) -> None:
    """The time zone of the configuration the round opened under: its gaming days are
    that zone's days, whatever the table is configured with later."""
    row = round_row(rows, ev.originator_id)
    if row is None or row["table_id"] is None:
        return  # misplaced settings: replay reports them (docs/audit.md)
    config = config_row(rows, row["table_id"], ev.config_version)
    mine = rows.edit(ROUNDS.name, (ev.originator_id,))  # the same row (read above), to change
    if mine is not None:
        mine["timezone"] = config and config["timezone"]


def tables_played(db: Db) -> dict[str, dict[str, Any]]:
    """Every table a round was opened at, by id: its rounds and the rule sets they were played
    under ("baccarat/live-8d v1"), whether or not the table was ever configured."""
    played: dict[str, dict[str, Any]] = {}
    for table_id, ruleset_id, version, rounds in db.query(
            f"SELECT table_id, ruleset_id, ruleset_version, count(*) FROM {ROUNDS.name} "
            "WHERE table_id IS NOT NULL GROUP BY table_id, ruleset_id, ruleset_version "
            "ORDER BY table_id, ruleset_id, ruleset_version"):
        seen = played.setdefault(table_id, {"rounds": 0, "rulesets": []})
        seen["rounds"] += rounds
        seen["rulesets"].append(f"{ruleset_id} v{version}")
    return played


VIEW = View(
    name="rounds",
    version=5,  # 2: studio_time; 3: timezone of the table configuration the round opened under; 4: void_cause;
    # 5: reversals
    tables=(ROUNDS,),
    handles=frozenset({Opened, TableApplied, *_STATUS_BY_EVENT}),
    fold=fold,
    reads=("tables",),
)
