"""The monitor's tests: is a table, dealer or bet type returning what the game
math says, and is a dealer voiding or erring more than the studio? (In ops/:
p-values are floats; the view they read, projections/monitor.py, is exact.)

RTP. A group of settlement lines (a table, a dealer, a bet type studio-wide,
a bet type at a table) returns R = sum of (returned + rounding remainder);
under the game math each line of stake s returns s*X with X of the bet
type's exact mean m and variance v, so E[R] = sum m*s and Var[R] = sum v*s².
Two one-sided p-values, the smaller one doubled (two-sided, capped at 1):
- house side (R too low, e.g. a shoe stacked against the players): normal
  approximation, z = (R - E[R]) / sd. Every tested bet's return is either
  nearly symmetric (Player, Banker, A, B) or skewed to the right (rare big
  pays), which makes the normal lower tail conservative (the true one is
  lighter);
- player side (R too high, e.g. collusion): Bennett's inequality, an exact
  upper bound for any independent bounded returns (b = the largest stake
  times the largest excess return), so a single jackpot on a thinly played
  side bet does not pass for an anomaly as a normal tail would make it.
Bet types without exact math (blackjack main, insurance: projections/
monitor_math.py says why) are left out of every group.

Blackjack deals (every rule set; projections/monitor_deal.py): tests that do
not depend on the players' decisions, per table and per dealer (across
tables), counted from the `proj_monitor_deals` view:
- `up_card`: the number of rounds whose dealer up card is an ace or a
  ten-value card against the shoe's composition (5/13 of the cards), every
  settled round: Binomial(n, 5/13), tested with its exact two-sided tail;
- `dealer_bust`: the number of rounds in which the dealer busted against the
  exact bust probability of each round's up card (S17/H17 and the shoe's
  decks), over the rounds in which the dealer played out.
The bust count is a sum of independent indicators with probabilities p below
1/2 (at most 0.43), different by up card, so it is tested like a return: the lower tail by the
normal approximation (a sum of such indicators is skewed to the right, its
lower tail lighter than the normal's), the upper tail by Bennett's bound
(b = the largest 1 - p). A shoe stacked for the house shows more strong up
cards (upper tail) and fewer dealer busts (lower tail); one stacked for the
players the other way. They join the RTP family in the Holm correction.

Operations. A dealer's voided rounds and rounds with a human error are
tested against the rest of the studio: the exact binomial upper tail of the
dealer's count given the studio's rate without that dealer (Laplace-smoothed,
(k+1)/(n+2), so one void where others have none is not a certainty).

Multiple tests: Holm's step-down correction over all RTP tests together and,
separately, over all operational tests, each family at `alpha`; a test is
flagged when its Holm-adjusted p-value is at most alpha, so a fair studio is
flagged (at all) with probability at most alpha per family.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

from domain.money import format_minor
from projections.monitor_deal import (
    NOT_PLAYED_OUT,
    dealer_key,
    dealer_outcome_probabilities,
    up_card_probability,
)
from projections.monitor_math import bet_math

ALPHA_DEFAULT = 0.001


@dataclass
class Group:
    """Figures of one tested group, folded from view rows."""

    table_id: str | None
    dealer_id: str | None
    bet_type: str | None  # `<rule set>/<bet type>` studio-wide; None: every tested bet type
    level: str
    lines: int = 0
    staked: int = 0
    returned: Fraction = field(default_factory=Fraction)
    expected: Fraction = field(default_factory=Fraction)
    variance: Fraction = field(default_factory=Fraction)
    tail: Fraction = field(default_factory=Fraction)  # b of Bennett's bound
    currencies: set[str] = field(default_factory=set)  # of the stakes: text shows them with their code

    def add(self, row: dict[str, Any]) -> None:
        m = bet_math(row["ruleset_id"], row["ruleset_version"], row["bet_type"])
        if m is None:
            return
        self.currencies.add(row.get("currency") or "")
        kept = row["rounding_kept"]
        self.lines += row["lines"]
        self.staked += row["staked_minor"]
        self.returned += row["returned_minor"] + (Fraction(kept) if isinstance(kept, str) else kept)
        self.expected += m.mean * row["staked_minor"]
        self.variance += m.variance * row["stake_sq_sum"]
        self.tail = max(self.tail, (m.top - m.mean) * row["stake_max"])


@dataclass(frozen=True)
class Finding:
    level: str  # table | dealer | bet_type | table_bet_type | void_rate | human_error_rate
    table_id: str | None
    dealer_id: str | None
    bet_type: str | None
    p_value: float  # as computed (before the correction)
    p_adjusted: float = 1.0  # Holm
    flagged: bool = False
    detail: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"level": self.level, "table_id": self.table_id, "dealer_id": self.dealer_id,
                "bet_type": self.bet_type, "p_value": self.p_value, "p_adjusted": self.p_adjusted,
                "flagged": self.flagged, **self.detail}


# ------------------------------------------------------------------ RTP
def groups(rows: Iterable[dict[str, Any]]) -> list[Group]:
    """View rows (any days) -> the tested groups: each table, each dealer, each
    bet type studio-wide, each bet type at each table."""
    found: dict[tuple[str, str | None, str | None, str | None], Group] = {}

    def group(level: str, table: str | None, dealer: str | None, bet: str | None) -> Group:
        key = (level, table, dealer, bet)
        if key not in found:
            found[key] = Group(table, dealer, bet, level)
        return found[key]

    tables_of: dict[str, set[str]] = {}
    for row in rows:
        bet_type = f"{row['ruleset_id']}/{row['bet_type']}"
        tables_of.setdefault(bet_type, set()).add(row["table_id"])
        group("table", row["table_id"], None, None).add(row)
        group("dealer", None, row["dealer_id"], None).add(row)
        group("bet_type", None, None, bet_type).add(row)
        group("table_bet_type", row["table_id"], None, bet_type).add(row)
    # A bet type played at one table only is the same test twice: keep the table's.
    return [g for g in found.values()
            if g.variance > 0 and not (g.level == "bet_type" and len(tables_of[g.bet_type or ""]) < 2)]


def rtp_p_value(g: Group) -> float:
    """Two-sided: twice the smaller of the normal lower tail and Bennett's upper bound."""
    sd = math.sqrt(g.variance)
    t = float(g.returned - g.expected)
    low = 0.5 * math.erfc(-(t / sd) / math.sqrt(2))
    high = bennett(t, float(g.variance), float(g.tail)) if t > 0 else 1.0
    return min(1.0, 2 * min(low, high))


def bennett(t: float, variance: float, b: float) -> float:
    """P(sum - mean >= t) <= exp(-(v/b²) h(bt/v)), h(u) = (1+u)ln(1+u) - u."""
    if b <= 0:
        return 0.0 if t > 0 else 1.0
    u = b * t / variance
    return math.exp(-(variance / (b * b)) * ((1 + u) * math.log1p(u) - u))


def rtp_findings(rows: Iterable[dict[str, Any]]) -> list[Finding]:
    out = []
    for g in groups(rows):
        observed = g.returned / g.staked if g.staked else Fraction(0)
        out.append(Finding(g.level, g.table_id, g.dealer_id, g.bet_type, rtp_p_value(g), detail={
            "lines": g.lines, "staked_minor": g.staked,
            # one code, or None when a dealer or bet type spans tables of several currencies
            "currency": next(iter(g.currencies)) if len(g.currencies) == 1 else None,
            "observed_rtp": round(float(observed), 6),
            "theoretical_rtp": round(float(g.expected / g.staked), 6) if g.staked else None,
            "z": round(float(g.returned - g.expected) / math.sqrt(g.variance), 3)}))
    return out


# ------------------------------------------------------------------ blackjack deals
STRONG_UP = ("A", "T")  # the up cards that favour the dealer most


def _indicator_group(level: str, table: str | None, dealer: str | None) -> Group:
    return Group(table, dealer, None, level)


def _add_indicators(g: Group, rounds: int, hits: int, p: Fraction) -> None:
    """`rounds` independent indicators of probability p, `hits` of them 1 (Group's fields:
    returned = hits, expected = sum of p, variance = sum of p(1-p), tail = the largest 1-p)."""
    g.lines += rounds
    g.staked += rounds
    g.returned += hits
    g.expected += p * rounds
    g.variance += p * (1 - p) * rounds
    g.tail = max(g.tail, 1 - p)


def deal_groups(rows: Iterable[dict[str, Any]]) -> list[Group]:
    """View rows of proj_monitor_deals -> `up_card` and `dealer_bust` groups per table and
    per dealer. Rows of a rule set without exact dealer math count for `up_card` only.
    Rounds and hits are counted per group and probability first, then each probability's
    exact terms added once: the same sums as row by row (exact arithmetic), in a few
    Fraction operations per group instead of a few per row."""
    strong = sum((up_card_probability(u) for u in STRONG_UP), Fraction(0))
    chances: dict[Any, Fraction] = {"strong": strong}
    counts: dict[tuple[str, str | None, str | None], dict[Any, list[int]]] = {}
    for row in rows:
        key = dealer_key(row["ruleset_id"], row["ruleset_version"])
        probs = dealer_outcome_probabilities(*key) if key is not None else None
        n, up, outcome = row["rounds"], row["up"], row["outcome"]
        for table, dealer in ((row["table_id"], None), (None, row["dealer_id"])):
            _count(counts, ("up_card", table, dealer), "strong", n, n if up in STRONG_UP else 0)
            if probs is not None and outcome != NOT_PLAYED_OUT:
                if (key, up) not in chances:
                    chances[(key, up)] = probs[up]["bust"]
                _count(counts, ("dealer_bust", table, dealer), (key, up), n, n if outcome == "bust" else 0)
    found = []
    for (level, table, dealer), per_chance in counts.items():
        g = _indicator_group(level, table, dealer)
        for chance, (rounds, hits) in per_chance.items():
            _add_indicators(g, rounds, hits, chances[chance])
        found.append(g)
    return [g for g in found if g.variance > 0]


def _count(counts: dict[tuple[str, str | None, str | None], dict[Any, list[int]]],
           group: tuple[str, str | None, str | None], chance: Any, rounds: int, hits: int) -> None:
    tally = counts.setdefault(group, {}).setdefault(chance, [0, 0])
    tally[0] += rounds
    tally[1] += hits


def binomial_two_sided(k: int, n: int, p: float) -> float:
    """Twice the tail of Binomial(n, p) on k's side of the mean, capped at 1 (exact, log space).
    From k outward the terms only shrink (k is at or past the mode), so the sum stops once
    they no longer count: a million rounds cost a few hundred terms, not a million."""
    if n == 0:
        return 1.0
    if k < n * p:  # the lower tail of X is the upper tail of n - X
        k, p = n - k, 1 - p
    if p <= 0:
        return 1.0 if k <= 0 else 0.0
    if p >= 1:
        return 1.0
    lp, lq = math.log(p), math.log1p(-p)

    def term(i: int) -> float:
        return math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * lp + (n - i) * lq

    first = term(k)
    total = 0.0
    for i in range(k, n + 1):
        x = math.exp(term(i) - first)
        total += x
        if x < 1e-17 * total:
            break
    return min(1.0, 2 * math.exp(first) * total)


def deal_findings(rows: Iterable[dict[str, Any]]) -> list[Finding]:
    out = []
    strong = float(sum((up_card_probability(u) for u in STRONG_UP), Fraction(0)))
    for g in deal_groups(rows):
        p = binomial_two_sided(int(g.returned), g.lines, strong) if g.level == "up_card" else rtp_p_value(g)
        out.append(Finding(g.level, g.table_id, g.dealer_id, None, p, detail={
            "rounds": g.lines, "count": int(g.returned), "rate": round(float(g.returned) / g.lines, 6),
            "expected_rate": round(float(g.expected) / g.lines, 6),
            "z": round(float(g.returned - g.expected) / math.sqrt(g.variance), 3)}))
    return out


@dataclass(frozen=True)
class Untested:
    """A table the monitor has no test for, and why."""

    table_id: str
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return {"level": "untested", "table_id": self.table_id, "dealer_id": None, "bet_type": None,
                "p_value": None, "p_adjusted": None, "flagged": False, "reason": self.reason}


def untested_tables(rtp_rows: Iterable[dict[str, Any]], deal_rows: Iterable[dict[str, Any]],
                    ops: Iterable[dict[str, Any]], findings: Iterable[Finding]) -> list[Untested]:
    """Every table seen in the views (rounds opened, settled or dealt) with no test of its own."""
    tested = {f.table_id for f in findings if f.table_id is not None}
    seen: dict[str, set[str]] = {}  # table -> why-nots, by rule set and bet type
    for row in ops:
        seen.setdefault(row["table_id"], set())
    for row in rtp_rows:
        why = seen.setdefault(row["table_id"], set())
        if bet_math(row["ruleset_id"], row["ruleset_version"], row["bet_type"]) is None:
            why.add(f"{row['ruleset_id']} v{row['ruleset_version']} {row['bet_type']}: no exact math "
                    "(shown, not tested)")
    for row in deal_rows:
        why = seen.setdefault(row["table_id"], set())
        key = dealer_key(row["ruleset_id"], row["ruleset_version"])
        if key is None or dealer_outcome_probabilities(*key) is None:
            why.add(f"{row['ruleset_id']} v{row['ruleset_version']}: no exact dealer math")
    out = []
    for table, why in sorted(seen.items()):
        if table in tested:
            continue
        reason = "; ".join(sorted(why)) if why else "no settled round in the period"
        out.append(Untested(table, reason))
    return out


# ------------------------------------------------------------------ operations
def binomial_upper(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p), exactly (summed in log space)."""
    if k <= 0:
        return 1.0
    if p <= 0:
        return 0.0
    if p >= 1:
        return 1.0
    lp, lq = math.log(p), math.log1p(-p)
    terms = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * lp + (n - i) * lq
             for i in range(k, n + 1)]
    top = max(terms)
    return min(1.0, math.exp(top) * sum(math.exp(x - top) for x in terms))


def ops_findings(rows: Iterable[dict[str, Any]]) -> list[Finding]:
    """Per dealer: void rate and human-error rate against the rest of the studio."""
    per: dict[str, list[int]] = {}
    for row in rows:
        c = per.setdefault(row["dealer_id"], [0, 0, 0])
        c[0] += row["rounds"]
        c[1] += row["voided"]
        c[2] += row["human_errors"]
    rounds = sum(c[0] for c in per.values())
    out = []
    for dealer, (n, voided, errors) in sorted(per.items()):
        for level, k, total in (("void_rate", voided, sum(c[1] for c in per.values())),
                                ("human_error_rate", errors, sum(c[2] for c in per.values()))):
            others, others_k = rounds - n, total - k
            rate = (others_k + 1) / (others + 2)
            out.append(Finding(level, None, dealer, None, binomial_upper(k, n, rate), detail={
                "rounds": n, "count": k, "rate": round(k / n, 6) if n else None,
                "studio_rate": round(others_k / others, 6) if others else None}))
    return out


# ------------------------------------------------------------------ correction
def holm(findings: Sequence[Finding], alpha: float) -> list[Finding]:
    """Holm's step-down adjusted p-values (family-wise error at most alpha); same order as given."""
    m = len(findings)
    order = sorted(range(m), key=lambda i: findings[i].p_value)
    adjusted = [1.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * findings[i].p_value))
        adjusted[i] = running
    return [replace(f, p_adjusted=a, flagged=a <= alpha) for f, a in zip(findings, adjusted)]


def evaluate(rtp_rows: Iterable[dict[str, Any]], ops: Iterable[dict[str, Any]],
             alpha: float = ALPHA_DEFAULT, deals: Iterable[dict[str, Any]] = ()) -> list[Finding]:
    """Every test, Holm-corrected per family (game math: RTP and blackjack deals; operations)."""
    return holm(rtp_findings(rtp_rows) + deal_findings(deals), alpha) + holm(ops_findings(ops), alpha)


_RATES = {"observed_rtp": "observed RTP", "theoretical_rtp": "theoretical RTP", "rate": "rate", "expected_rate": "expected rate",
          "studio_rate": "studio rate"}


def detail_text(detail: dict[str, Any]) -> str:
    """A test's figures as people read them: the stake as money with its currency, RTPs and
    rates as percentages (`--json` keeps `staked_minor` and the ratios)."""
    parts = []
    for key, value in detail.items():
        if key == "currency":
            continue
        if key == "staked_minor":
            parts.append(f"staked {format_minor(value, detail.get('currency') or '(several currencies)')}")
        elif key in _RATES:
            parts.append(f"{_RATES[key]} {'-' if value is None else f'{value * 100:.2f}%'}")
        else:
            parts.append(f"{key} {value}")
    return ", ".join(parts)
