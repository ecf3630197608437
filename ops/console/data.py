"""What the console's pages show that the read service (projections/queries.py) has no
query for: a page of rounds with their players and money (by player from the recall view's
index), a player's rounds over a period with the running balance, a table's own events
(configurations and seats), the monitor's tests with per-day figures for charts, and the
rejections filtered by table and period. Everything else the pages read through the read
service, as the command line and the JSON API do.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from fractions import Fraction
from typing import Any

from domain.errors import require
from ledger.eventlog import EventLog
from ledger.records import TableConfigured, TableSeatingChanged
from ops.gamemath.monitor_stats import Group, evaluate, untested_tables
from projections import queries
from projections.balances import PLAYER_PREFIX
from projections.monitor import deal_rows, in_days, monitor_rows, ops_rows
from projections.monitor_deal import (
    NOT_PLAYED_OUT,
    UP_CLASSES,
    dealer_key,
    dealer_outcome_probabilities,
    up_card_probability,
)
from projections.recall import RECALL
from projections.rounds import ROUNDS, STATUSES
from projections.sql import Db
from projections.state import Zones

PAGE_ROWS = 50
PLAYER_ROUNDS_PAGE = 50
_ROUND_COLS = ("round_id", "table_id", "round_no", "game", "currency", "status", "studio_time", "dealer_id",
               "void_cause", "settlement_no")


@dataclass(frozen=True)
class RoundFilter:
    table: str | None = None
    player: str | None = None
    status: str | None = None
    dealer: str | None = None
    since: date | None = None  # studio days, UTC: [since, until), as --since/--until of the commands
    until: date | None = None

    def clauses(self, prefix: str) -> tuple[list[str], list[Any]]:
        where, params = [f"{prefix}table_id IS NOT NULL"], []
        for clause, value in ((f"{prefix}table_id = ?", self.table), (f"{prefix}status = ?", self.status),
                              (f"{prefix}dealer_id = ?", self.dealer),
                              (f"{prefix}studio_time >= ?", _day_text(self.since)),
                              (f"{prefix}studio_time < ?", _day_text(self.until))):
            if value is not None:
                where.append(clause)
                params.append(value)
        return where, params


def _day_text(day: date | None, plus_days: int = 0) -> str | None:
    """The studio-time text (projections/rounds.py `studio_text`) of a UTC day's start."""
    if day is None:
        return None
    start = datetime(day.year, day.month, day.day, tzinfo=UTC) + timedelta(days=plus_days)
    return start.isoformat(timespec="microseconds")


def round_page(db: Db, f: RoundFilter, page: int = 1, rows: int = PAGE_ROWS) -> tuple[list[dict[str, Any]], bool]:
    """One page of rounds, newest first, each with its players, staked and paid; and
    whether there is a next page. By player: the player's rounds from the recall view's
    (player_id, seq) index, newest first."""
    require(f.status is None or f.status in STATUSES, f"unknown status {f.status!r}")
    offset = (max(1, page) - 1) * rows
    if f.player:
        where, params = f.clauses("r.")
        text = (f"SELECT {', '.join('r.' + c for c in _ROUND_COLS)} FROM {RECALL.name} p "
                f"JOIN {ROUNDS.name} r ON r.round_id = p.round_id WHERE p.player_id = ? AND {' AND '.join(where)} "
                f"ORDER BY p.seq DESC LIMIT {rows + 1} OFFSET {offset}")
        params = [f.player, *params]
    else:
        where, params = f.clauses("")
        text = (f"SELECT {', '.join(_ROUND_COLS)} FROM {ROUNDS.name} WHERE {' AND '.join(where)} "
                f"ORDER BY studio_time DESC, table_id, round_no DESC LIMIT {rows + 1} OFFSET {offset}")
    found = [dict(zip(_ROUND_COLS, r)) for r in db.query(text, params)]
    more = len(found) > rows
    found = found[:rows]
    figures = round_figures(db, [r["round_id"] for r in found])
    for r in found:
        r.update(figures.get(r["round_id"], {"players": 0, "staked_minor": 0, "paid_minor": 0, "refunded_minor": 0}))
    return found, more


def round_search_sql(db: Db, player: str) -> tuple[str, list[Any]]:
    """The player search's statement (for EXPLAIN in the benchmark)."""
    where, params = RoundFilter(player=player).clauses("r.")
    return (f"SELECT r.round_id FROM {RECALL.name} p JOIN {ROUNDS.name} r ON r.round_id = p.round_id "
            f"WHERE p.player_id = ? AND {' AND '.join(where)} ORDER BY p.seq DESC LIMIT {PAGE_ROWS + 1}",
            [player, *params])


def round_figures(db: Db, round_ids: list[str]) -> dict[str, dict[str, int]]:
    """Per round: how many players, staked, paid (in force) and refunded, from the recall view."""
    if not round_ids:
        return {}
    found = db.query(f"SELECT round_id, COUNT(*), SUM(staked_minor), SUM(returned_minor), SUM(refunded_minor) "
                     f"FROM {RECALL.name} WHERE round_id IN ({', '.join('?' * len(round_ids))}) GROUP BY round_id",
                     round_ids)
    return {r[0]: {"players": int(r[1]), "staked_minor": int(r[2] or 0), "paid_minor": int(r[3] or 0),
                   "refunded_minor": int(r[4] or 0)} for r in found}


def round_players(db: Db, round_id: str) -> list[str]:
    return [r[0] for r in db.query(f"SELECT player_id FROM {RECALL.name} WHERE round_id = ? ORDER BY seq",
                                   (round_id,))]


# ------------------------------------------------------------------ players
def player_story(db: Db, player: str, since: date | None, until: date | None, page: int = 1) -> queries.PlayerStory:
    """The player's rounds in the period (studio days, UTC, [since, until)), PLAYER_ROUNDS_PAGE a
    page, page 1 the newest, each in ledger order with the running balance (projections/recall.py
    `player_story`)."""
    return queries.player_story(db, player, _day_start(since), _day_start(until), page, PLAYER_ROUNDS_PAGE)


def _day_start(day: date | None) -> datetime | None:
    return None if day is None else datetime(day.year, day.month, day.day, tzinfo=UTC)


def player_balances(db: Db, player: str) -> list[queries.BalanceRow]:
    return queries.balances(db, [PLAYER_PREFIX + player]).accounts


# ------------------------------------------------------------------ tables
@dataclass
class TableFacts:
    configs: list[TableConfigured]
    seating: TableSeatingChanged | None


def table_facts(log: EventLog, table_id: str) -> TableFacts:
    """The table's configuration versions and its last seating: the table aggregate's own
    events, read once by its id (EventLog.table_history reads the same rows, keeping the
    configurations only)."""
    configs: list[TableConfigured] = []
    seating = None
    for record in map(log.decode, log._rows_where("originator_id", _table_aggregate(table_id))):
        if isinstance(record, TableConfigured):
            configs.append(record)
        elif isinstance(record, TableSeatingChanged):
            seating = record
    return TableFacts(configs, seating)


def _table_aggregate(table_id: str) -> Any:
    from ledger.table import table_id_for

    return table_id_for(table_id)


def table_ggr_days(db: Db, table_id: str) -> list[queries.GgrRow]:
    return [r for r in queries.ggr(db).rows if r.table_id == table_id]


@dataclass(frozen=True)
class RtpPoint:
    day: str
    lines: int
    observed_ppm: int  # returned per staked, parts per million (a chart's y; never money)
    expected_ppm: int
    band_ppm: int  # three standard deviations of the observed return per staked


def rtp_over_days(rows: list[dict[str, Any]]) -> list[RtpPoint]:
    """Observed against expected return per unit staked, cumulated day by day over the
    given monitor rows (the tested bet types only: ops/gamemath/monitor_stats.py `Group`), with a
    band of three standard deviations around the expected."""
    group = Group(None, None, None, "chart")
    points = []
    for day in sorted({r["day"] for r in rows}):
        for r in rows:
            if r["day"] == day:
                group.add(r)
        if group.staked <= 0 or group.variance <= 0:
            continue
        sd = _isqrt_fraction(group.variance)
        points.append(RtpPoint(day, group.lines, _ppm(group.returned / group.staked),
                               _ppm(group.expected / group.staked), _ppm(3 * sd / group.staked)))
    return points


def _ppm(value: Any) -> int:
    return int(round(value * 1_000_000))


def _isqrt_fraction(value: Any) -> Any:
    """The square root of a non-negative Fraction, to a millionth of a minor unit (exact integers)."""
    from math import isqrt

    scale = 10**6
    return Fraction(isqrt(int(value * scale * scale)), scale)


# ------------------------------------------------------------------ monitor
@dataclass
class MonitorReport:
    findings: list[Any]
    untested: list[Any]
    rtp_rows: list[dict[str, Any]]
    deal_rows: list[dict[str, Any]] = field(default_factory=list)
    ops_rows: list[dict[str, Any]] = field(default_factory=list)


def monitor_report(db: Db, zones: Zones | None = None, first: str | None = None,
                   last: str | None = None) -> MonitorReport:
    """Every test of `ledger monitor` over the gaming days first..last (None: open; in each
    table's zone, else `zones`' fallback, UTC by default), and the tables it could not test."""
    zones = zones or Zones()
    rtp_rows, ops, deals = (in_days(rows, first, last)
                            for rows in (monitor_rows(db, zones), ops_rows(db, zones), deal_rows(db, zones)))
    findings = evaluate(rtp_rows, ops, deals=deals)
    return MonitorReport(findings, untested_tables(rtp_rows, deals, ops, findings), rtp_rows, deals, ops)


def rows_of_finding(report: MonitorReport, finding: Any) -> list[dict[str, Any]]:
    """The view rows behind a finding: the RTP rows of an RTP test, the deal rows of an
    `up_card` or `dealer_bust` test, every dealer's operations rows for a rate test (the
    dealer is tested against the others)."""
    if finding.level in OPS_LEVELS:
        return report.ops_rows
    rows = report.deal_rows if finding.level in DEAL_LEVELS else report.rtp_rows
    out = []
    for r in rows:
        if finding.table_id is not None and r["table_id"] != finding.table_id:
            continue
        if finding.dealer_id is not None and r["dealer_id"] != finding.dealer_id:
            continue
        if finding.bet_type is not None and f"{r['ruleset_id']}/{r['bet_type']}" != finding.bet_type:
            continue
        out.append(r)
    return out


DEAL_LEVELS = ("up_card", "dealer_bust")
OPS_LEVELS = {"void_rate": "voided", "human_error_rate": "human_errors"}  # the test -> its count's column


@dataclass(frozen=True)
class RatePoint:
    """An observed rate against the test's expected rate and a band of three standard
    deviations of the observed rate around it (all in parts per million: a chart's y)."""

    label: str
    count: int
    trials: int
    observed_ppm: int
    expected_ppm: int
    band_ppm: int


class _Tally:
    """Independent indicators: how many, how many hit, and the sum of p and of p(1 - p)."""

    def __init__(self) -> None:
        self.trials, self.hits = 0, 0
        self.expected, self.variance = Fraction(0), Fraction(0)

    def add(self, trials: int, hits: int, p: Fraction) -> None:
        self.trials += trials
        self.hits += hits
        self.expected += p * trials
        self.variance += p * (1 - p) * trials

    def point(self, label: str) -> RatePoint:
        n = self.trials
        return RatePoint(label, self.hits, n, _ppm(Fraction(self.hits, n)), _ppm(self.expected / n),
                         _ppm(3 * _isqrt_fraction(self.variance) / n))


def deal_points(rows: list[dict[str, Any]], level: str) -> list[RatePoint]:
    """Per up card, from deal rows: for `up_card` the share of rounds dealt that up card against
    the shoe's composition; for `dealer_bust` the dealer's bust rate after that up card against
    its exact probability (rule sets with exact dealer math, rounds played out), as the
    monitor's deal tests count them (ops/gamemath/monitor_stats.py `deal_groups`)."""
    tallies = {up: _Tally() for up in UP_CLASSES}
    if level == "up_card":
        total, dealt = sum(r["rounds"] for r in rows), dict.fromkeys(UP_CLASSES, 0)
        for r in rows:
            dealt[r["up"]] += r["rounds"]
        for up, t in tallies.items():
            t.add(total, dealt[up], up_card_probability(up))
    for r in rows if level == "dealer_bust" else ():
        key = dealer_key(r["ruleset_id"], r["ruleset_version"])
        probs = dealer_outcome_probabilities(*key) if key is not None else None
        if probs is not None and r["outcome"] != NOT_PLAYED_OUT:
            n = r["rounds"]
            tallies[r["up"]].add(n, n if r["outcome"] == "bust" else 0, probs[r["up"]]["bust"])
    return [t.point(up) for up, t in tallies.items() if t.trials and t.variance]


def rate_points(rows: list[dict[str, Any]], level: str) -> list[RatePoint]:
    """Per dealer, from operations rows: the dealer's rate of voided rounds (`void_rate`) or of
    rounds with a human error (`human_error_rate`) against the rest of the studio's rate, as
    the test takes it (Laplace-smoothed: ops/gamemath/monitor_stats.py `ops_findings`)."""
    column = OPS_LEVELS[level]
    per: dict[str, list[int]] = {}
    for r in rows:
        c = per.setdefault(r["dealer_id"], [0, 0])
        c[0] += r["rounds"]
        c[1] += r[column]
    rounds, count = sum(c[0] for c in per.values()), sum(c[1] for c in per.values())
    out = []
    for dealer, (n, k) in sorted(per.items()):
        if n:
            t = _Tally()
            t.add(n, k, Fraction(count - k + 1, rounds - n + 2))
            out.append(t.point(dealer))
    return out


# ------------------------------------------------------------------ rejections
def rejection_rows(log: EventLog, code: str | None, table: str | None, since: date | None, until: date | None,
                   after_id: int = 0, limit: int = PAGE_ROWS) -> tuple[list[dict[str, Any]], int | None]:
    """Refused commands matching the filters, oldest first, read a thousand at a time from
    `after_id`; and the id to continue after (None at the end)."""
    out: list[dict[str, Any]] = []
    while len(out) < limit:
        batch = log.rejections(after_id=after_id, limit=1000)
        if not batch:
            return out, None
        for row in batch:
            after_id = row["id"]
            if _rejection_matches(row, code, table, since, until):
                out.append(row)
                if len(out) == limit:
                    return out, after_id
    return out, after_id


def _rejection_matches(row: dict[str, Any], code: str | None, table: str | None,
                       since: date | None, until: date | None) -> bool:
    if code and row.get("code") != code:
        return False
    if table and row.get("table_id") != table:
        return False
    day = str(row.get("received_at") or row.get("server_time") or "")[:10]
    return not ((since and day < since.isoformat()) or (until and day >= until.isoformat()))
