"""The read service: one typed query per read that the command line and the HTTP service answer.

Each query returns a frozen dataclass (the HTTP routes use them as response models; the
CLI prints them), so `ledger X --json` and GET /v1/X give the same data. View queries
take the views' `Db` caught up by the caller (a Projector); store queries take an EventLog.

Queries (result types in parentheses):
- `round_detail(log, round_id, ref)` (RoundDetail | None): one round's facts, events and story
  (`ledger round show`, GET /v1/rounds/{ref})
- `round_replay(log, round_id, at, ref)` (RoundReplay | None): the round replayed, settlement
  recomputed (`ledger replay --json`'s document, GET /v1/rounds/{ref}/replay)
- `round_list(db, query, limit, offset, cursor)` (RoundList) (`ledger round list`, GET /v1/rounds, the
  console's rounds), `round_csv_rows(rounds)`: the rows of its CSV (ROUND_CSV)
- `balances(db, accounts, kind, nonzero, limit, cursor)` (Balances) (`ledger balances`, GET /v1/balances)
- `refunds(db, day_from, day_to, zone, totals_only)` (Refunds) (`ledger refunds`, GET /v1/refunds)
- `recall(db, player_id, last, zone)` (Recall) (`ledger recall`, GET /v1/recall/{player})
- `player_story(db, player_id, since, until, page, rows, zone)` (PlayerStory): a page of the player's
  rounds with the running balance and the period's totals (the console's player page)
- `ggr(db, zone, day_from, day_to)` (Ggr) (`ledger ggr`, GET /v1/ggr)
- `rejections(log, code, after, limit, since, until)` (list[Rejection]) (`ledger rejections`), and
  `rejection_page(log, code, limit, cursor, since, until)` (Rejections) (GET /v1/rejections)
- `reconcile_wallet(log, path, zone)` (Reconciliation) (POST /v1/reconcile), `reconcile_rows(log,
  wallet_rows, zone)` (Reconciliation) for rows already read (`ledger reconcile`)
- `verify_export(directory, log)` (ExportCheck) (POST /v1/audit/verify)
- `audit_export_lines(log, start, stop)` (Iterator[str]): events.jsonl (GET /v1/audit/export)
- `projection_lag(log)` (int): events not yet folded into every view (/metrics)
- `empty_period(log, day_from, day_to, zone)` (PeriodNote): why a period asked for holds nothing
  (`ledger monitor`, `ledger ggr`, `ledger audit export`, the console's monitor and audit export)
- `round_ref(ref)` (UUID): a round UUID or TABLE#ROUND_NO (`Refusal` bad_round_ref otherwise)

What every answer holds alike: every time is RFC 3339 UTC text with microseconds and `Z`
(`2026-11-21T12:00:07.817000Z`, `utc_text`), whatever form the studio sent (the audit
export's hashed lines alone keep what was stored); money is integer minor units beside its
currency, and an exact remainder is an `ExactMinor` (numerator and denominator), never an
`n/d` string. A list that pages answers `next_cursor`: pass it as `cursor` for the next page
(None: the list ends there); the cursor is opaque, and only the query that made it reads it.
"""
from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, tzinfo
from fractions import Fraction
from pathlib import Path
from typing import Any
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError

from domain.errorcodes import EmptyPeriod
from domain.errors import require
from domain.operators import EVERY_OPERATOR, OperatorScope
from ledger.eventlog import EventLog
from projections import round_search
from projections.audit_store import parse_round_ref
from projections.balances import BalanceRow as BalanceRow  # re-exported: the result type of `balances`
from projections.folding import Zones, as_zones, day_bounds, parse_fraction, utc_text
from projections.ggr import GgrSums
from projections.operators import zones_for
from projections.recall import PlayerRound
from projections.refunds import RefundRow
from projections.round_search import RoundQuery
from projections.rounds import LIST_LIMIT_MAX
from projections.rounds import RoundStatus as RoundStatus  # re-exported: a RoundSummary's status
from projections.runner import STOPS, TRACKING, Stop, read_stops
from projections.sql import Db

JsonObject = dict[str, Any]


def _plain(value: Any) -> Any:
    """Plain JSON values: the free-form parts of a round (event fields, a model's view) carry
    UUIDs, tuples, fractions and datetimes; their times written as every time is (`_times`)."""
    return _times(json.loads(json.dumps(value, default=_json_default)))


def _json_default(value: Any) -> Any:
    if isinstance(value, Fraction):  # exact, and not a string a client must parse
        return {"numerator": value.numerator, "denominator": value.denominator}
    if isinstance(value, datetime):
        return rfc3339(value)
    return str(value)


# The keys under which a read's free-form objects (events, steps, timelines) carry a time.
TIME_KEYS = frozenset({"studio_time", "recorded_at", "server_time", "at", "opened_at", "closed_at", "voided_at",
                       "studio_at", "played_at", "received_at"})


def rfc3339(at: str | datetime) -> str:
    """A time (ISO 8601 text or datetime; no offset: UTC) as every answer writes it: UTC, microseconds, `Z`."""
    moment = datetime.fromisoformat(at) if isinstance(at, str) else at
    return utc_text(moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment)


def _times(value: Any) -> Any:
    """`value` with the text under every TIME_KEYS key written by `rfc3339` (text that is no time is left as is)."""
    if isinstance(value, list):
        return [_times(v) for v in value]
    if not isinstance(value, dict):
        return value
    return {k: _time_text(v) if k in TIME_KEYS and isinstance(v, str) else _times(v) for k, v in value.items()}


def _time_text(text: str) -> str:
    try:
        return rfc3339(text)
    except (ValueError, OverflowError):  # no time, or one whose UTC form is past the calendar's end
        return text


BadCursor = round_search.BadCursor  # a `cursor` a query did not make (or made for other filters)


def _cursor(kind: str, key: Sequence[Any]) -> str:
    """An opaque page cursor: the list's kind and the sort key of the last item given."""
    return base64.urlsafe_b64encode(json.dumps([kind, *key]).encode()).decode().rstrip("=")


def _after(kind: str, cursor: str | None, size: int) -> list[Any] | None:
    """The sort key a cursor of `kind` carries (None without a cursor); BadCursor otherwise."""
    if cursor is None:
        return None
    try:
        found = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, TypeError):
        raise BadCursor("not a cursor this service made") from None
    if not (isinstance(found, list) and len(found) == size + 1 and found[0] == kind):
        raise BadCursor(f"not a cursor of {kind}")
    return found[1:]


def _page(items: list[Any], limit: int | None) -> tuple[list[Any], bool]:
    """The first `limit` of items fetched `limit + 1` at a time, and whether more follow."""
    if limit is None or len(items) <= limit:
        return items, False
    return items[:limit], True


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
    # For a read of some operators (a key limited to them): the other operators' bets in this
    # round, only as a count and a total (projections/redaction.py); None: every bet is shown.
    other_operators: JsonObject | None = None


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
class _ReplayFacts:
    """The replay document's own fields, before the story's (`RoundReplay`)."""

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


# The story's fields come after the replay's own (a dataclass takes its bases' fields last base
# first), as the document has always listed them. The docstring is the API's description.
@dataclass(frozen=True)
class RoundReplay(RoundStory, _ReplayFacts):
    """The replay document (projections/document.py): the timeline with the state after
    each step, the settlement recomputed on a fresh model, refunds, and the round's story."""

    other_operators: JsonObject | None = None  # as RoundDetail's


def round_replay(log: EventLog, round_id: UUID, at: int | None = None, ref: str | None = None,
                 with_proof: bool = False) -> RoundReplay | None:
    """The round replayed up to its `at`-th event (all of them: None); None when the store
    has no event of that round."""
    from projections.document import round_document

    document = round_document(log, round_id, at=at, ref=ref, with_proof=with_proof)
    return None if document is None else RoundReplay(**_plain(document))


# ---------------------------------------------------------------- rounds

_ROUND_TIMES = ("studio_time", "opened_at", "closed_at")


@dataclass(frozen=True)
class RoundSummary:
    """A round as the `rounds` view has it; `round` is TABLE#ROUND_NO. `reversals`: settlements
    reversed (more than 0: a corrected round). `players`, `staked_minor`, `paid_minor` (in
    force) and `refunded_minor`: the round's, all players. The `player_*` fields are set in a
    search by player only: that player's own stake, return, refund, net (once the round is
    settled or voided) and result (round_search.player_result)."""

    round: str
    round_id: str
    status: RoundStatus
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
    reversals: int
    players: int
    staked_minor: int
    paid_minor: int
    refunded_minor: int
    player_id: str | None = None
    player_staked_minor: int | None = None
    player_returned_minor: int | None = None
    player_refunded_minor: int | None = None
    player_net_minor: int | None = None
    player_result: str | None = None


@dataclass(frozen=True)
class RoundList:
    """`count`: every round (a row per matching player, in a search by player) the query
    matches, of which `rounds` is one page; `next_cursor`: the next page's cursor, None at the end."""

    count: int
    rounds: list[RoundSummary]
    next_cursor: str | None = None


def round_list(db: Db, query: RoundQuery | None = None, *, limit: int | None = None, offset: int = 0,
               cursor: str | None = None) -> RoundList:
    """Rounds that opened, by status, player, table, dealer and studio time, in the query's
    order (studio time by default); raises round_search.BadCursor for a cursor it did not give."""
    from projections.round_search import count, search

    query = query or RoundQuery()
    found = search(db, query, LIST_LIMIT_MAX if limit is None else limit, offset, cursor)
    return RoundList(count(db, query), round_summaries(db, found.rows), found.cursor)


def _row_times(row: JsonObject) -> dict[str, str | None]:
    return {k: row[k] and rfc3339(row[k]) for k in _ROUND_TIMES}


def round_summaries(db: Db, rows: list[JsonObject]) -> list[RoundSummary]:
    """The rows of round_search.search with each round's figures and the player's own."""
    from projections.round_search import NO_FIGURES, player_net, player_result, round_figures

    figures = round_figures(db, list(dict.fromkeys(r["round_id"] for r in rows)))
    out = []
    for r in rows:
        mine: JsonObject = {}
        if "player_id" in r:
            staked, returned, refunded = r["player_staked_minor"], r["player_returned_minor"], r["player_refunded_minor"]
            mine = {"player_id": r["player_id"], "player_staked_minor": staked, "player_returned_minor": returned,
                    "player_refunded_minor": refunded,
                    "player_net_minor": player_net(r["status"], staked, returned, refunded),
                    "player_result": player_result(r["status"], r["player_results"], refunded)}
        facts: JsonObject = ({k: r[k] for k in _SUMMARY_FIELDS} | _row_times(r) | figures.get(r["round_id"], NO_FIGURES)
                             | mine)
        out.append(RoundSummary(round=f"{r['table_id']}#{r['round_no']}", **facts))
    return out


_SUMMARY_FIELDS = ("round_id", "status", "game", "table_id", "round_no", "studio_time", "ruleset_id",
                   "ruleset_version", "currency", "dealer_id", "settlement_no", "opened_at", "closed_at",
                   "void_cause", "reversals")
ROUND_CSV = ("round", "round_id", "table_id", "game", "status", "reversals", "void_cause", "studio_time",
             "dealer_id", "currency", "players", "staked", "paid", "refunded", "player_id", "player_staked",
             "player_returned", "player_refunded", "player_net", "player_result")


def round_csv_rows(rounds: Sequence[RoundSummary]) -> Iterator[list[Any]]:
    """The rounds as CSV rows under ROUND_CSV: money as a plain decimal amount (`-12.50`) of the
    row's currency, the player's columns empty outside a search by player."""
    from projections.csvtext import amount

    for r in rounds:
        values = asdict(r)
        yield [amount(values[c + "_minor"]) if c + "_minor" in values else values[c] for c in ROUND_CSV]


# ---------------------------------------------------------------- money views

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
    next_cursor: str | None = None


def balances(db: Db, accounts: Sequence[str] = (), kind: str | None = None, nonzero: bool = False,
             limit: int | None = None, cursor: str | None = None, scope: OperatorScope = EVERY_OPERATOR) -> Balances:
    """Accounts (all, or those named), of one kind (player | round | house) or all, `limit` at a
    time from `cursor` (a Balances' next_cursor; `shown_totals` then sums the page)."""
    from projections.balances import balance_rows, balance_totals

    after = _after("balances", cursor, 3)
    found = [BalanceRow(**r) for r in balance_rows(db, list(accounts), kind, nonzero, limit=limit and limit + 1,
                                                   after=tuple(after) if after else None, scope=scope)]
    rows, cut = _page(found, limit)
    shown: dict[str, list[int]] = {}
    for r in rows:
        total = shown.setdefault(r.currency, [0, 0])
        total[0] += r.balance_minor
        total[1] += r.funds_on_game_minor
    head = db.query(f"SELECT MAX(position) FROM {TRACKING.name}")
    position = int(head[0][0]) if head and head[0][0] is not None else 0
    last = rows[-1] if rows and cut else None
    return Balances(position=position, accounts=rows,
                    shown_totals={c: ShownTotal(b, f) for c, (b, f) in shown.items()},
                    sum_by_currency=balance_totals(db),
                    next_cursor=_cursor("balances", (last.kind, last.account, last.currency)) if last else None)


@dataclass(frozen=True)
class PeriodNote:
    """Why a period holds nothing: `reason` (domain/errorcodes.py `EmptyPeriod`), a sentence
    saying so, and when the store's last event was recorded (UTC; None: the store has none)."""

    reason: EmptyPeriod
    message: str
    last_recorded: str | None


# A row of the refunds view (projections/refunds.py `RefundRow`) with its gaming day. (No
# docstring: a result type's docstring is its description in /openapi.json.)
@dataclass(frozen=True)
class RefundLine(RefundRow):
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
            totals_only: bool = False, log: EventLog | None = None, scope: OperatorScope = EVERY_OPERATOR) -> Refunds:
    """Refunded bets and totals per gaming day, cause and currency, days [day_from, day_to];
    with `log`, why there are none. For a scope of operators, their players' refunds (one
    configured operator: its gaming days)."""
    from projections.refunds import refund_lines, refund_totals

    zone = zones_for(db, scope, as_zones(zone))
    lines = [] if totals_only else [RefundLine(**_times(r)) for r in refund_lines(db, day_from, day_to, zone, scope)]
    totals = [RefundTotal(**t) for t in refund_totals(db, day_from, day_to, zone, scope)]
    return Refunds(lines, totals, _why_empty(log, totals, day_from, day_to, zone))


def _why_empty(log: EventLog | None, found: Sequence[Any], day_from: str | None, day_to: str | None,
               zone: tzinfo | Zones) -> PeriodNote | None:
    return empty_period(log, day_from, day_to, zone) if log is not None and not found else None


@dataclass(frozen=True)
class StoryRound(PlayerRound):
    """One round of a player's story: bets, stake moves, results in force, refunds, the
    settlements reversed (`corrections`: each one's number and what it had returned the
    player; `correction`: the same said as money), and the round's own net (returned +
    refunded - staked: what it moved on the player's account) with the running balance
    around it (balance after = balance before + net; the next round's before is this after)."""

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


def recall(db: Db, player_id: str, last: int, zone: tzinfo | Zones = UTC,
           scope: OperatorScope = EVERY_OPERATOR) -> Recall:
    """The player's `last` rounds, oldest first (RECALL_LAST_MIN..RECALL_LAST_MAX), with timelines
    (for a scope of some operators, the other operators' bets only as a count and a total)."""
    from projections.recall import RECALL_LAST_MAX, RECALL_LAST_MIN, player_story
    from projections.redaction import redact_timeline

    require(RECALL_LAST_MIN <= last <= RECALL_LAST_MAX, f"--last {last} outside {RECALL_LAST_MIN}..{RECALL_LAST_MAX}")
    page = player_story(db, player_id, limit=last, timelines=True, zone=zone)
    for r in page.rounds:
        r["timeline"] = redact_timeline(r["timeline"], scope)
    return Recall(player_id, [RecallRound(**_times(r)) for r in page.rounds],
                  {c: StoryTotal(**t) for c, t in page.totals.items()}, page.older)


def player_story(db: Db, player_id: str, since: datetime | None = None, until: datetime | None = None,
                 page: int = 1, rows: int = 50, zone: tzinfo | Zones = UTC) -> PlayerStory:
    """Page `page` (1: the newest rounds) of the player's rounds with studio time in [since, until)."""
    from projections.recall import player_story as story

    found = story(db, player_id, since=utc_text(since) if since else None, until=utc_text(until) if until else None,
                  offset=(max(1, page) - 1) * rows, limit=rows, zone=zone)
    return PlayerStory(player_id, [StoryRound(**_times(r)) for r in found.rounds],
                       {c: StoryTotal(**t) for c, t in found.totals.items()}, found.older)



@dataclass(frozen=True)
class ExactMinor:
    """An exact amount of minor units, numerator / denominator (reduced, denominator >= 1): a
    sum of fractions of a cent has no decimal form of fixed length (29/2 minor units of EUR:
    {"numerator": 29, "denominator": 2}, 0.145 EUR)."""

    numerator: int
    denominator: int

    @classmethod
    def of(cls, amount: Fraction) -> ExactMinor:
        return cls(amount.numerator, amount.denominator)

    @classmethod
    def of_text(cls, stored: str) -> ExactMinor:
        """An amount as the views store it, TEXT `n/d` (`rounding_kept`): the one place a stored
        remainder becomes an answer's."""
        return cls.of(parse_fraction(stored))

    def fraction(self) -> Fraction:
        return Fraction(self.numerator, self.denominator)


@dataclass(frozen=True)
class _GgrDay:
    """Which day a `GgrRow` sums: a gaming day (the stored quarter hours in their zones) of a
    table, game and currency."""

    day: str
    table_id: str
    game: str
    currency: str


# The sums are the view's own (projections/ggr.py `GgrSums`), after the day (a dataclass takes its
# bases' fields last base first), as the answer has always listed them.
@dataclass(frozen=True)
class GgrRow(GgrSums, _GgrDay):
    """`rounding_kept`: the exact sum of the fractions of a minor unit cut by rounding down."""

    rounding_kept: ExactMinor


@dataclass(frozen=True)
class GgrTotal:
    currency: str
    staked_minor: int
    paid_minor: int
    refunded_minor: int
    ggr_minor: int
    rounding_kept: ExactMinor


@dataclass(frozen=True)
class Ggr:
    rows: list[GgrRow]
    totals: dict[str, GgrTotal]
    empty: PeriodNote | None = None  # why there are no rows (asked with the store's log; None: there are)


def ggr(db: Db, zone: tzinfo | Zones = UTC, day_from: str | None = None, day_to: str | None = None,
        log: EventLog | None = None, scope: OperatorScope = EVERY_OPERATOR) -> Ggr:
    """GGR per gaming day, table, game and currency, days [day_from, day_to], and totals per currency;
    with `log`, why there are no rows. For a scope of operators, their players' share (one
    configured operator: its gaming days)."""
    from projections.ggr import ggr_rows

    rows = [GgrRow(**r | {"rounding_kept": ExactMinor.of_text(r["rounding_kept"])})
            for r in ggr_rows(db, zone, scope)
            if (day_from is None or r["day"] >= day_from) and (day_to is None or r["day"] <= day_to)]
    sums: dict[str, tuple[list[int], Fraction]] = {}
    for r in rows:
        amounts, kept = sums.get(r.currency, ([0, 0, 0, 0], Fraction(0)))
        for i, value in enumerate((r.staked_minor, r.paid_minor, r.refunded_minor, r.ggr_minor)):
            amounts[i] += value
        sums[r.currency] = (amounts, kept + r.rounding_kept.fraction())
    return Ggr(rows, {c: GgrTotal(currency=c, staked_minor=amounts[0], paid_minor=amounts[1],
                                  refunded_minor=amounts[2], ggr_minor=amounts[3], rounding_kept=ExactMinor.of(kept))
                      for c, (amounts, kept) in sums.items()}, _why_empty(log, rows, day_from, day_to, zone))


# ---------------------------------------------------------------- the store

@dataclass(frozen=True)
class Rejection:
    """A refused command as the rejections log keeps it (`payload`: the bytes as received, as
    text), with what the command says of itself where it says it: `round` (TABLE#ROUND_NO)
    and `studio_time`, beside the service's `received_at`."""

    id: int
    command_id: str | None
    table_id: str | None
    round_no: int | None
    type: str | None
    code: str
    message: str
    payload: str
    received_at: str
    round: str | None = None
    studio_time: str | None = None


@dataclass(frozen=True)
class Rejections:
    """A page of refused commands; `next_cursor`: the `cursor` of the next page (None: no more)."""

    rejections: list[Rejection]
    next_cursor: str | None = None


REJECTIONS_PAGE = 1000


def rejections(log: EventLog, code: str | None = None, after: int = 0, limit: int = 1000,
               since: datetime | None = None, until: datetime | None = None,
               scope: OperatorScope = EVERY_OPERATOR) -> list[Rejection]:
    """Refused commands after id `after`, oldest first, at most `limit`, of one code or all,
    received in [since, until) (the service's time: a refused command may have no studio time);
    for a scope of some operators, those naming one of them (projections/redaction.py)."""
    from projections.redaction import scoped_rejection

    found: list[Rejection] = []
    while len(found) < limit:
        page = log.rejections(after_id=after, limit=min(REJECTIONS_PAGE, limit))
        if not page:
            break
        found.extend(_rejection(shown) for r in page
                     if (not code or r["code"] == code) and _within(r, since, until)
                     and (shown := scoped_rejection(r, scope)) is not None)
        after = page[-1]["id"]
    return found[:limit]


def rejection_page(log: EventLog, code: str | None = None, limit: int = 1000, cursor: str | None = None,
                   since: datetime | None = None, until: datetime | None = None, after: int = 0,
                   scope: OperatorScope = EVERY_OPERATOR) -> Rejections:
    """`rejections`, `limit` at a time from `cursor` (a Rejections' next_cursor) or id `after`."""
    start = _after("rejections", cursor, 1)
    found = rejections(log, code, int(start[0]) if start else after, limit + 1, since, until, scope)
    rows, cut = _page(found, limit)
    return Rejections(rows, _cursor("rejections", (rows[-1].id,)) if cut else None)


def _within(row: dict[str, Any], since: datetime | None, until: datetime | None) -> bool:
    if since is None and until is None:
        return True
    at = datetime.fromisoformat(row["received_at"])
    at = at.replace(tzinfo=UTC) if at.tzinfo is None else at
    return (since is None or at >= since) and (until is None or at < until)


def _rejection(row: dict[str, Any]) -> Rejection:
    """The row, its times as every answer writes them, and the round and studio time its payload names."""
    try:
        sent = json.loads(row["payload"])
    except (ValueError, RecursionError):  # refused as bad_command: not JSON, or too deep to read
        sent = None
    studio_time = sent.get("studio_time") if isinstance(sent, dict) else None
    has_round = row["table_id"] is not None and row["round_no"] is not None
    return Rejection(**row | {"received_at": rfc3339(row["received_at"])},
                     round=f"{row['table_id']}#{row['round_no']}" if has_round else None,
                     studio_time=_time_text(studio_time) if isinstance(studio_time, str) else None)


@dataclass(frozen=True)
class Reconciliation:
    """Wallet against ledger: counts per category, per gaming day and table, and every finding."""

    counts: dict[str, int]
    discrepancies: int
    by_day_and_table: list[dict[str, Any]]
    findings: list[JsonObject]


def reconcile_wallet(log: EventLog, wallet: str | Path, zone: tzinfo | Zones = UTC,
                     scope: OperatorScope = EVERY_OPERATOR) -> Reconciliation:
    """Reconcile a wallet CSV with the movements the ledger expects; raises WalletFormatError
    (WalletEmpty for an empty file) for a file that is not a wallet file."""
    from projections.reconcile import read_wallet

    return reconcile_rows(log, read_wallet(wallet), zone, scope)


def reconcile_rows(log: EventLog, wallet_rows: list[dict[str, Any]], zone: tzinfo | Zones = UTC,
                   scope: OperatorScope = EVERY_OPERATOR) -> Reconciliation:
    """As `reconcile_wallet`, for the rows of a wallet file already read (`read_wallet`); for one
    operator's wallet file, that operator's players' movements only (named by its own ids)."""
    from projections.reconcile import expected_movements, reconcile

    report = reconcile(wallet_rows, expected_movements(log.records(), zone, scope)).as_dict()
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


def verify_export(directory: str | Path, log: EventLog | None = None,
                  scope: OperatorScope = EVERY_OPERATOR) -> ExportCheck:
    """Verify the export in `directory` (events.jsonl, manifest.json, events.csv if there);
    with `log`, also against the events of the store up to the export's last position (for a
    scope of some operators, the store's events redacted as its export is: a finding quotes
    nothing of the other operators' bets)."""
    from projections.audit_export import verify_against_store, verify_files
    from projections.redaction import LinkRedactor

    verified = verify_files(directory)
    findings = list(verified.findings)
    last = verified.manifest.get("last_position")
    if log is not None and verified.manifest:
        store = log.stored(1, last, page_size=5000) if isinstance(last, int) else iter(())
        findings += verify_against_store(verified, store, None if scope.everyone else LinkRedactor(scope))
    manifest = verified.manifest
    head = manifest.get("head_hash")
    return ExportCheck(count=_int(manifest.get("count")), head_hash=head if isinstance(head, str) else None,
                       checked_store=log is not None, findings=[ExportFinding(**f.as_dict()) for f in findings],
                       events_read=len(verified.links), first_position=_int(manifest.get("first_position")),
                       last_position=_int(last))


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class AuditRecord:
    """The record a line hashes: the event as stored (its name, its fields exactly as recorded,
    times as the studio sent them), its global `position`, its place `seq` in the chain, and the
    server's `timestamp` (RFC 3339 UTC, `Z`)."""

    event: str
    fields: JsonObject
    originator_id: str
    originator_version: int
    position: int
    seq: int
    timestamp: str


@dataclass(frozen=True)
class AuditLine:
    """One line of events.jsonl (docs/audit.md): `hash` = SHA-256(bytes of `prev` + the record's
    canonical JSON), hex; `prev`: the line before's hash (64 zeros before the first)."""

    hash: str
    prev: str
    record: AuditRecord


def audit_export_lines(log: EventLog, start: int | None = None, stop: int | None = None,
                       scope: OperatorScope = EVERY_OPERATOR) -> Iterator[str]:
    """The lines of events.jsonl (`ledger audit export`) for positions [start, stop]: the
    chain always starts at position 1. For a scope of some operators, each line as it may see
    it (projections/redaction.py `LinkRedactor`: hashes kept, the others' bets redacted)."""
    from projections.audit import chain
    from projections.redaction import LinkRedactor

    shown = LinkRedactor(scope)
    for link in chain(log.stored(1, stop, page_size=5000)):
        link = shown(link)  # every line, also before start: a bet named later is known from its BetPlaced
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


@dataclass(frozen=True)
class ViewState:
    """A view's position and, when it stopped at an event it could not fold or store, the stop
    (the view stays at the position before that event until a rebuild)."""

    view: str
    position: int
    stop: Stop | None


def view_states(log: EventLog) -> list[ViewState]:
    """Every view's state, by name (none before the first catch-up made the views)."""
    db = Db.for_store(log.backend)
    try:
        if not db.table_exists(TRACKING.name):
            return []
        stops = read_stops(db) if db.table_exists(STOPS.name) else {}
        positions = db.query(f"SELECT view, position FROM {TRACKING.name} ORDER BY view")
    finally:
        db.close()
    return [ViewState(name, int(position), stops.get(name)) for name, position in positions]


def stopped_views(log: EventLog) -> list[Stop]:
    """The views stopped at an event, kept in the store (none before the first catch-up)."""
    return [state.stop for state in view_states(log) if state.stop is not None]
