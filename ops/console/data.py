"""What the console's pages compute from the read service's answers (projections/queries.py,
and projections/page_queries.py for the queries only the pages ask): a page of rounds and
their count and every round of a search as CSV, a player's rounds over a period with the
running balance, the monitor's tests with per-day figures for charts. The pages read only
through the read service, as the command line and the JSON API do; no SQL here.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from fractions import Fraction
from typing import Any

from ops.gamemath.monitor_stats import Group, evaluate, untested_tables
from projections import queries
from projections.balances import PLAYER_PREFIX
from projections.csvtext import csv_lines
from projections.folding import Zones
from projections.monitor import deal_rows, in_days, monitor_rows, ops_rows
from projections.monitor_deal import (
    NOT_PLAYED_OUT,
    UP_CLASSES,
    dealer_key,
    dealer_outcome_probabilities,
    up_card_probability,
)
from projections.round_search import RoundQuery, search
from projections.sql import Db

PAGE_ROWS = 50
PLAYER_ROUNDS_PAGE = 50


def period(since: date | None, until: date | None) -> tuple[datetime | None, datetime | None]:
    """The instants of a period of days asked for on a page: studio days, UTC, [since, until),
    as --since/--until of the commands. The one place the console turns days into times."""
    return _day_start(since), _day_start(until)


def _day_start(day: date | None) -> datetime | None:
    return None if day is None else datetime(day.year, day.month, day.day, tzinfo=UTC)


@dataclass(frozen=True)
class RoundPage:
    rounds: list[queries.RoundSummary]
    count: int  # every round (a row per matching player) the search matches
    page: int
    pages: int


def round_page(db: Db, q: RoundQuery, page: int = 1, rows: int = PAGE_ROWS) -> RoundPage:
    """One page of the search (projections/round_search.py), each round with its players, staked
    and paid, and by player the player's own figures; and how many pages there are."""
    found = queries.round_list(db, q, limit=rows, offset=(max(1, page) - 1) * rows)
    return RoundPage(found.rounds, found.count, page, max(1, -(-found.count // rows)))


def round_csv(db: Db, q: RoundQuery) -> Iterator[str]:
    """Every round the search matches as CSV lines (queries.ROUND_CSV), read a page at a time,
    each player as a person reads it (`p-17 (OP2)`, render.player_name), not by the ledger's key."""
    from ops.console.render import player_name

    at = queries.ROUND_CSV.index("player_id")
    return csv_lines(queries.ROUND_CSV, ([*row[:at], row[at] and player_name(row[at]), *row[at + 1:]]
                                         for row in _every_round(db, q)))


def _every_round(db: Db, q: RoundQuery) -> Iterator[list[Any]]:
    cursor: str | None = None
    while True:
        found = search(db, q, CSV_PAGE_ROWS, cursor=cursor)
        yield from queries.round_csv_rows(queries.round_summaries(db, found.rows))
        if found.cursor is None:
            return
        cursor = found.cursor


CSV_PAGE_ROWS = 2000


# ------------------------------------------------------------------ players
def player_story(db: Db, player: str, since: date | None, until: date | None, page: int = 1) -> queries.PlayerStory:
    """The player's rounds in the period (studio days, UTC, [since, until)), PLAYER_ROUNDS_PAGE a
    page, page 1 the newest, each in ledger order with the running balance (projections/recall.py
    `player_story`)."""
    return queries.player_story(db, player, _day_start(since), _day_start(until), page, PLAYER_ROUNDS_PAGE)


def player_balances(db: Db, player: str) -> list[queries.BalanceRow]:
    return queries.balances(db, [PLAYER_PREFIX + player]).accounts


# ------------------------------------------------------------------ tables


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


