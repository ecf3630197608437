"""The read service: one typed query per read that the command line and the HTTP service answer.

Each query returns a frozen dataclass (the HTTP routes use them as response models; the
CLI prints them), so `ledger X --json` and GET /v1/X give the same data. View queries
take the views' `Db` caught up by the caller (a Projector); store queries take an EventLog.

Queries (result types in parentheses):
- `round_detail(log, round_id, ref)` (RoundDetail | None): one round's facts, events and story
  (`ledger round show`, GET /v1/rounds/{ref})
- `round_replay(log, round_id, at, ref)` (RoundReplay | None): the round replayed, settlement
  recomputed (`ledger replay --json`'s document, GET /v1/rounds/{ref}/replay)
- `round_list(db, status, table_id, since, until, limit)` (RoundList) (`ledger round list`, GET /v1/rounds)
- `balances(db, accounts, kind, nonzero)` (Balances) (`ledger balances`, GET /v1/balances)
- `refunds(db, day_from, day_to, zone, totals_only)` (Refunds) (`ledger refunds`, GET /v1/refunds)
- `recall(db, player_id, last, zone)` (Recall) (`ledger recall`, GET /v1/recall/{player})
- `player_story(db, player_id, since, until, page, rows, zone)` (PlayerStory): a page of the player's
  rounds with the running balance and the period's totals (the console's player page)
- `ggr(db, zone, day_from, day_to)` (Ggr) (`ledger ggr`, GET /v1/ggr)
- `rejections(log, code, after, limit)` (list[Rejection]) (`ledger rejections`, GET /v1/rejections)
- `reconcile_wallet(log, path, zone)` (Reconciliation) (POST /v1/reconcile), `reconcile_rows(log,
  wallet_rows, zone)` (Reconciliation) for rows already read (`ledger reconcile`)
- `verify_export(directory, log)` (ExportCheck) (POST /v1/audit/verify)
- `audit_export_lines(log, start, stop)` (Iterator[str]): events.jsonl (GET /v1/audit/export)
- `projection_lag(log)` (int): events not yet folded into every view (/metrics)
- `empty_period(log, day_from, day_to, zone)` (PeriodNote): why a period asked for holds nothing
  (`ledger monitor`, `ledger ggr`, `ledger audit export`, the console's monitor and audit export)
- `round_ref(ref)` (UUID): a round UUID or TABLE#ROUND_NO (`Refusal` bad_round_ref otherwise)
"""
from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from fractions import Fraction
from pathlib import Path
from typing import Any
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError

from domain.errorcodes import EmptyPeriod
from domain.errors import require
from ledger.eventlog import EventLog
from projections.audit_store import parse_round_ref
from projections.runner import TRACKING
from projections.sql import Db
from projections.state import Zones, as_zones, day_bounds, fraction_text, parse_fraction, utc_text

JsonObject = dict[str, Any]


def _plain(value: Any) -> Any:
    """Plain JSON values (what `json.dumps(default=str)` writes): the free-form parts of a
    round (event fields, a model's view) carry UUIDs, tuples and fractions."""
    return json.loads(json.dumps(value, default=str))


def round_ref(ref: str) -> UUID:
    """A round UUID, or TABLE#ROUND_NO; raises Refusal(bad_round_ref) for anything else."""
    return parse_round_ref(ref)


# ---------------------------------------------------------------- one round

@dataclass(frozen=True)
class RoundBet:
    bet_id: str
    player_id: str
    spot: str | None
    bet_type: str
    stake_minor: int
    mode: str | None


@dataclass(frozen=True)
class RoundCard:
    seq_no: int
    card: str
    target: str


@dataclass(frozen=True)
class RoundStory:
    """What is in force (projections/round_story.py), the same the dispute page shows."""

    status: str
    phase: str
    in_force: str | None
    settlements: list[JsonObject]
    void: JsonObject | None
    bets: list[JsonObject]
    players: list[JsonObject]
    headline: JsonObject
    outcome: JsonObject | None
    tombstone: JsonObject | None


@dataclass(frozen=True)
class RoundDetail:
    """One round from its aggregate: facts, bets, cards, settlements and every event (each
    with its fields), and its story."""

    round_id: str
    table_id: str | None
    round_no: int | None
    game: str | None
    ruleset: str | None
    currency: str | None
    table_config: JsonObject | None
    shoe_id: str | None
    round_in_shoe: int | None
    phase: str | None
    paused: JsonObject | None
    voided: JsonObject | None
    balance_minor: int
    bets: list[RoundBet]
    cards: list[RoundCard]
    settlements: list[JsonObject]
    view: JsonObject | None
    events: list[JsonObject]
    story: RoundStory


_EVENT_COMMON = {"originator_id", "originator_version", "timestamp", "command_id", "studio_time"}


def round_detail(log: EventLog, round_id: UUID, ref: str | None = None) -> RoundDetail | None:
    """The round (None when the store has none of that id); `ref` is the TABLE#NO asked
    for, the only name a void that came before its round has."""
    from projections.replay import recompute
    from projections.round_story import round_story

    app = log.app
    try:
        rnd = app.get_round(round_id)
    except AggregateNotFoundError:
        return None
    events = []
    e: Any
    for e in app.repository.event_store.get(round_id):
        fields = {k: v for k, v in vars(e).items() if k not in _EVENT_COMMON}
        events.append({"version": e.originator_version, "event": type(e).__name__, "command_id": e.command_id,
                       "studio_time": e.studio_time, "recorded_at": e.timestamp.isoformat(), **fields})
    records = log.round_records(round_id)
    story = _plain(round_story(round_id, records, recompute(records).outcome, ref))
    return RoundDetail(
        round_id=str(rnd.id), table_id=rnd.table_id, round_no=rnd.round_no, game=rnd.game,
        ruleset=f"{rnd.rules.id} v{rnd.rules.version}" if rnd.rules else None, currency=rnd.currency,
        table_config=(_plain({"version": rnd.table_config[0], "hash": rnd.table_config[1],
                              "settings": rnd.table_settings.as_dict() if rnd.table_settings else {}})
                      if rnd.table_config else None),
        shoe_id=rnd.shoe_id, round_in_shoe=rnd.round_in_shoe, phase=rnd.phase, paused=_plain(rnd.paused),
        voided=_plain(rnd.voided), balance_minor=rnd.balance_minor,
        bets=[RoundBet(b.bet_id, b.player_id, b.spot, b.bet_type, b.stake_minor, b.mode) for b in rnd.bets.values()],
        cards=[RoundCard(s, c, t) for s, c, t in rnd.cards],
        settlements=_plain(rnd.settlements), view=_plain(rnd.model.view()) if rnd.model else None,
        events=_plain(events), story=RoundStory(**story))


@dataclass(frozen=True)
class RoundReplay:
    """The replay document (projections/replay_view.py): the timeline with the state after
    each step, the settlement recomputed on a fresh model, refunds, and the round's story."""

    round_id: str
    round: str | None
    table_id: str | None
    round_no: int | None
    game: str | None
    currency: str | None
    minor_exponent: int
    ruleset: JsonObject
    at: int | None
    steps: list[JsonObject]
    results: list[JsonObject]
    refunds: list[JsonObject]
    findings: list[JsonObject]
    proof: JsonObject | None
    status: str
    phase: str
    in_force: str | None
    settlements: list[JsonObject]
    void: JsonObject | None
    bets: list[JsonObject]
    players: list[JsonObject]
    headline: JsonObject
    outcome: JsonObject | None
    tombstone: JsonObject | None


def round_replay(log: EventLog, round_id: UUID, at: int | None = None, ref: str | None = None,
                 with_proof: bool = False) -> RoundReplay | None:
    """The round replayed up to its `at`-th event (all of them: None); None when the store
    has no event of that round."""
    from projections.replay_view import round_document

    document = round_document(log, round_id, at=at, ref=ref, with_proof=with_proof)
    return None if document is None else RoundReplay(**_plain(document))


# ---------------------------------------------------------------- rounds

@dataclass(frozen=True)
class RoundSummary:
    """A round as the `rounds` view has it; `round` is TABLE#ROUND_NO."""

    round: str
    round_id: str
    status: str
    game: str | None
    table_id: str
    round_no: int
    studio_time: str | None
    ruleset_id: str | None
    ruleset_version: int | None
    currency: str | None
    dealer_id: str | None
    settlement_no: int | None
    opened_at: str | None
    closed_at: str | None
    void_cause: str | None


@dataclass(frozen=True)
class RoundList:
    rounds: list[RoundSummary]


def round_list(db: Db, *, status: str | None = None, table_id: str | None = None, since: datetime | None = None,
               until: datetime | None = None, limit: int | None = None) -> RoundList:
    """Rounds that opened, in studio-time order, by status, table and studio time [since, until)."""
    from projections.rounds import round_list_rows

    rows = round_list_rows(db, status=status, table_id=table_id, since=since, until=until, limit=limit)
    return RoundList([RoundSummary(round=f"{r['table_id']}#{r['round_no']}",
                                   **{k: r[k] for k in _SUMMARY_FIELDS}) for r in rows])


_SUMMARY_FIELDS = tuple(name for name in RoundSummary.__dataclass_fields__ if name != "round")


# ---------------------------------------------------------------- money views

@dataclass(frozen=True)
class BalanceRow:
    account: str
    currency: str
    kind: str
    owner: str | None
    balance_minor: int
    funds_on_game_minor: int
    last_position: int


@dataclass(frozen=True)
class ShownTotal:
    balance_minor: int
    funds_on_game_minor: int


@dataclass(frozen=True)
class Balances:
    """`position`: the last event the views have folded; `shown_totals`: the accounts listed,
    summed per currency; `sum_by_currency`: every account (zero when the books balance)."""

    position: int
    accounts: list[BalanceRow]
    shown_totals: dict[str, ShownTotal]
    sum_by_currency: dict[str, int]


def balances(db: Db, accounts: Sequence[str] = (), kind: str | None = None, nonzero: bool = False) -> Balances:
    """Accounts (all, or those named), of one kind (player | round | house) or all."""
    from projections.balances import balance_rows, balance_totals

    rows = [BalanceRow(**r) for r in balance_rows(db, list(accounts), kind, nonzero)]
    shown: dict[str, list[int]] = {}
    for r in rows:
        total = shown.setdefault(r.currency, [0, 0])
        total[0] += r.balance_minor
        total[1] += r.funds_on_game_minor
    found = db.query(f"SELECT MAX(position) FROM {TRACKING.name}")
    position = int(found[0][0]) if found and found[0][0] is not None else 0
    return Balances(position=position, accounts=rows,
                    shown_totals={c: ShownTotal(b, f) for c, (b, f) in shown.items()},
                    sum_by_currency=balance_totals(db))


@dataclass(frozen=True)
class PeriodNote:
    """Why a period holds nothing: `reason` (domain/errorcodes.py `EmptyPeriod`), a sentence
    saying so, and when the store's last event was recorded (UTC; None: the store has none)."""

    reason: EmptyPeriod
    message: str
    last_recorded: str | None


@dataclass(frozen=True)
class RefundLine:
    position: int
    line_no: int
    round_id: str
    table_id: str | None
    round_no: int | None
    game: str | None
    currency: str
    bet_id: str
    player_id: str
    amount_minor: int
    cause: str
    voided_by: str
    note: str | None
    voided_at: str
    studio_at: str
    timezone: str | None
    day: str


@dataclass(frozen=True)
class RefundTotal:
    day: str
    cause: str
    currency: str
    refunds: int
    amount_minor: int


@dataclass(frozen=True)
class Refunds:
    refunds: list[RefundLine]
    totals: list[RefundTotal]
    empty: PeriodNote | None = None  # why there are none (asked with the store's log; None: there are)


def refunds(db: Db, day_from: str | None = None, day_to: str | None = None, zone: tzinfo | Zones = UTC,
            totals_only: bool = False, log: EventLog | None = None) -> Refunds:
    """Refunded bets and totals per gaming day, cause and currency, days [day_from, day_to];
    with `log`, why there are none."""
    from projections.refunds import refund_lines, refund_totals

    lines = [] if totals_only else [RefundLine(**r) for r in refund_lines(db, day_from, day_to, zone)]
    totals = [RefundTotal(**t) for t in refund_totals(db, day_from, day_to, zone)]
    return Refunds(lines, totals, _why_empty(log, totals, day_from, day_to, zone))


def _why_empty(log: EventLog | None, found: Sequence[Any], day_from: str | None, day_to: str | None,
               zone: tzinfo | Zones) -> PeriodNote | None:
    return empty_period(log, day_from, day_to, zone) if log is not None and not found else None


@dataclass(frozen=True)
class StoryRound:
    """One round of a player's story: bets, stake moves, results in force, refunds, the
    settlements reversed (`corrections`: each one's number and what it had returned the
    player; `correction`: the same said as money), and the round's own net (returned +
    refunded - staked: what it moved on the player's account) with the running balance
    around it (balance after = balance before + net; the next round's before is this after)."""

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
    bets: list[JsonObject]
    stake_moves: list[JsonObject]
    results: list[JsonObject]
    refunds: list[JsonObject]
    corrections: list[JsonObject]
    staked_minor: int
    returned_minor: int
    refunded_minor: int
    net_minor: int
    balance_before_minor: int
    balance_after_minor: int
    correction: str | None
    day: str


@dataclass(frozen=True)
class RecallRound(StoryRound):
    """A round of `ledger recall`: the story's round with the round's timeline."""

    timeline: list[JsonObject]


@dataclass(frozen=True)
class StoryTotal:
    """A player's period in one currency: its rounds' sums, the opening balance (the nets of
    the rounds before the period) and the closing one (opening + net)."""

    rounds: int
    staked_minor: int
    returned_minor: int
    refunded_minor: int
    net_minor: int
    opening_minor: int
    closing_minor: int


@dataclass(frozen=True)
class PlayerStory:
    """A page of a player's rounds in a period, oldest first; `totals` per currency over the
    whole period; `older`: rounds of the period before this page."""

    player_id: str
    rounds: list[StoryRound]
    totals: dict[str, StoryTotal]
    older: bool


@dataclass(frozen=True)
class Recall:
    """The player's last rounds, oldest first; `totals` per currency over the player's whole
    history (its closing balance is the account's); `older`: rounds before these."""

    player_id: str
    rounds: list[RecallRound]
    totals: dict[str, StoryTotal]
    older: bool


def recall(db: Db, player_id: str, last: int, zone: tzinfo | Zones = UTC) -> Recall:
    """The player's `last` rounds, oldest first (RECALL_LAST_MIN..RECALL_LAST_MAX), with timelines."""
    from projections.recall import RECALL_LAST_MAX, RECALL_LAST_MIN, player_story

    require(RECALL_LAST_MIN <= last <= RECALL_LAST_MAX, f"--last {last} outside {RECALL_LAST_MIN}..{RECALL_LAST_MAX}")
    page = player_story(db, player_id, limit=last, timelines=True, zone=zone)
    return Recall(player_id, [RecallRound(**r) for r in page.rounds],
                  {c: StoryTotal(**t) for c, t in page.totals.items()}, page.older)


def player_story(db: Db, player_id: str, since: datetime | None = None, until: datetime | None = None,
                 page: int = 1, rows: int = 50, zone: tzinfo | Zones = UTC) -> PlayerStory:
    """Page `page` (1: the newest rounds) of the player's rounds with studio time in [since, until)."""
    from projections.recall import player_story as story

    found = story(db, player_id, since=utc_text(since) if since else None, until=utc_text(until) if until else None,
                  offset=(max(1, page) - 1) * rows, limit=rows, zone=zone)
    return PlayerStory(player_id, [StoryRound(**r) for r in found.rounds],
                       {c: StoryTotal(**t) for c, t in found.totals.items()}, found.older)


@dataclass(frozen=True)
class GgrRow:
    """`rounding_kept`: the exact sum of the fractions of a minor unit cut by rounding down, as `n/d`."""

    day: str
    table_id: str
    game: str
    currency: str
    rounds_closed: int
    staked_minor: int
    paid_minor: int
    refunded_minor: int
    ggr_minor: int
    rounding_kept: str


@dataclass(frozen=True)
class GgrTotal:
    staked_minor: int
    paid_minor: int
    refunded_minor: int
    ggr_minor: int
    rounding_kept: str


@dataclass(frozen=True)
class Ggr:
    rows: list[GgrRow]
    totals: dict[str, GgrTotal]
    empty: PeriodNote | None = None  # why there are no rows (asked with the store's log; None: there are)


def ggr(db: Db, zone: tzinfo | Zones = UTC, day_from: str | None = None, day_to: str | None = None,
        log: EventLog | None = None) -> Ggr:
    """GGR per gaming day, table, game and currency, days [day_from, day_to], and totals per currency;
    with `log`, why there are no rows."""
    from projections.ggr import ggr_rows

    rows = [GgrRow(**r) for r in ggr_rows(db, zone)
            if (day_from is None or r["day"] >= day_from) and (day_to is None or r["day"] <= day_to)]
    sums: dict[str, tuple[list[int], Fraction]] = {}
    for r in rows:
        amounts, kept = sums.get(r.currency, ([0, 0, 0, 0], Fraction(0)))
        for i, value in enumerate((r.staked_minor, r.paid_minor, r.refunded_minor, r.ggr_minor)):
            amounts[i] += value
        sums[r.currency] = (amounts, kept + parse_fraction(r.rounding_kept))
    return Ggr(rows, {c: GgrTotal(staked_minor=amounts[0], paid_minor=amounts[1], refunded_minor=amounts[2],
                                  ggr_minor=amounts[3], rounding_kept=fraction_text(kept))
                      for c, (amounts, kept) in sums.items()}, _why_empty(log, rows, day_from, day_to, zone))


# ---------------------------------------------------------------- the store

@dataclass(frozen=True)
class Rejection:
    """A refused command as the rejections log keeps it (`payload`: the bytes as received, as text)."""

    id: int
    command_id: str | None
    table_id: str | None
    round_no: int | None
    type: str | None
    code: str
    message: str
    payload: str
    received_at: str


REJECTIONS_PAGE = 1000


def rejections(log: EventLog, code: str | None = None, after: int = 0, limit: int = 1000) -> list[Rejection]:
    """Refused commands after id `after`, oldest first, at most `limit`, of one code or all."""
    found: list[Rejection] = []
    while len(found) < limit:
        page = log.rejections(after_id=after, limit=min(REJECTIONS_PAGE, limit))
        if not page:
            break
        found.extend(Rejection(**r) for r in page if not code or r["code"] == code)
        after = page[-1]["id"]
    return found[:limit]


@dataclass(frozen=True)
class Reconciliation:
    """Wallet against ledger: counts per category, per gaming day and table, and every finding."""

    counts: dict[str, int]
    discrepancies: int
    by_day_and_table: list[dict[str, Any]]
    findings: list[JsonObject]


def reconcile_wallet(log: EventLog, wallet: str | Path, zone: tzinfo | Zones = UTC) -> Reconciliation:
    """Reconcile a wallet CSV with the movements the ledger expects; raises WalletFormatError
    (WalletEmpty for an empty file) for a file that is not a wallet file."""
    from projections.reconcile import read_wallet

    return reconcile_rows(log, read_wallet(wallet), zone)


def reconcile_rows(log: EventLog, wallet_rows: list[dict[str, Any]], zone: tzinfo | Zones = UTC) -> Reconciliation:
    """As `reconcile_wallet`, for the rows of a wallet file already read (`read_wallet`)."""
    from projections.reconcile import expected_movements, reconcile

    report = reconcile(wallet_rows, expected_movements(log.records(), zone)).as_dict()
    return Reconciliation(**_plain(report))


@dataclass(frozen=True)
class ExportFinding:
    kind: str
    position: int | None
    message: str

    def __str__(self) -> str:
        where = f"position {self.position}" if self.position is not None else "export"
        return f"{self.kind} at {where}: {self.message}"


@dataclass(frozen=True)
class ExportCheck:
    """An audit export verified from its files (and against the store when asked)."""

    count: int | None
    head_hash: str | None
    checked_store: bool
    findings: list[ExportFinding] = field(default_factory=list)
    events_read: int = 0  # the lines of events.jsonl read
    first_position: int | None = None  # as the manifest says
    last_position: int | None = None


def verify_export(directory: str | Path, log: EventLog | None = None) -> ExportCheck:
    """Verify the export in `directory` (events.jsonl, manifest.json, events.csv if there);
    with `log`, also against the events of the store up to the export's last position."""
    from projections.audit_export import verify_against_store, verify_files

    verified = verify_files(directory)
    findings = list(verified.findings)
    last = verified.manifest.get("last_position")
    if log is not None and verified.manifest:
        store = log.stored(1, last, page_size=5000) if isinstance(last, int) else iter(())
        findings += verify_against_store(verified, store)
    manifest = verified.manifest
    head = manifest.get("head_hash")
    return ExportCheck(count=_int(manifest.get("count")), head_hash=head if isinstance(head, str) else None,
                       checked_store=log is not None, findings=[ExportFinding(**f.as_dict()) for f in findings],
                       events_read=len(verified.links), first_position=_int(manifest.get("first_position")),
                       last_position=_int(last))


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def audit_export_lines(log: EventLog, start: int | None = None, stop: int | None = None) -> Iterator[str]:
    """The lines of events.jsonl (`ledger audit export`) for positions [start, stop]: the
    chain always starts at position 1."""
    from projections.audit import chain

    for link in chain(log.stored(1, stop, page_size=5000)):
        if start is None or link.position >= start:
            yield link.line() + "\n"


def projection_lag(log: EventLog) -> int:
    """Events recorded but not yet folded into every view (all of them before the first catch-up)."""
    head = log.head()
    db = Db.for_store(log.backend)
    try:
        rows = db.query(f"SELECT MIN(position) FROM {TRACKING.name}")
    except Exception:  # no views yet
        return head
    finally:
        db.close()
    low = rows[0][0] if rows and rows[0][0] is not None else 0
    return max(0, head - int(low))


def empty_period(log: EventLog, day_from: str | None, day_to: str | None, zone: tzinfo | Zones = UTC) -> PeriodNote:
    """Why the gaming days [day_from, day_to] hold no play: nothing recorded yet (the store's
    last event was recorded before the first day began, in `zone`'s fallback), or events are
    recorded but none was played on those days (a store ingested later records play of
    earlier days: the days are the play's, never the recording's)."""
    head = log.head()
    last = next(iter(log.records(head, 1)), None) if head else None
    if last is None:
        return PeriodNote(EmptyPeriod.NOTHING_RECORDED, "nothing recorded yet: the store holds no events", None)
    recorded = utc_text(last.timestamp)
    start, _ = day_bounds(day_from, None, as_zones(zone).fallback)
    if start is not None and recorded < start:
        return PeriodNote(EmptyPeriod.NOTHING_RECORDED, f"nothing recorded yet: the store's last event was "
                          f"recorded at {recorded}, before {day_from} began", recorded)
    days = " to ".join(dict.fromkeys((day_from or "the first day", day_to or "the last")))
    return PeriodNote(EmptyPeriod.NO_PLAY, f"no play on those gaming days ({days}, by studio time; the store's "
                      f"last event was recorded at {recorded})", recorded)
