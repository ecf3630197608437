"""The back-office summary `ledger demo` prints, as a list of report sections.

Every section is a function `(DemoData) -> Section`, registered in
`SECTIONS`, printed in that order.
Everything is computed by reading the recorded events (read-only) as typed
records through the ledger's `EventLog`; nothing here writes an event.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from domain.money import format_minor
from ledger.eventlog import EventLog
from ledger.records import (
    BetPlaced,
    DecisionTaken,
    FollowDecided,
    Opened,
    Record,
    Settled,
    SettlementReversed,
    Voided,
    event_name,
    is_round,
    postings_of,
)


@dataclass
class Section:
    title: str
    lines: list[str]
    ok: bool = True  # False fails the demo (exit status 1)


@dataclass
class DemoData:
    """What the demo produced: the app to read, the feed's stats and the ingest results."""

    app: Any
    db_url: str
    feed: Any  # ops.sim.simulator.SimStats
    results: list[Any]  # ledger.app.Result per feed line
    seconds: dict[str, float] = field(default_factory=dict)
    _events: list[Record] | None = None
    _ledger: LedgerFacts | None = None
    _log: EventLog | None = None

    @property
    def log(self) -> EventLog:
        """The reader of the demo's store (made once)."""
        if self._log is None:
            self._log = EventLog(self.app)
        return self._log

    @property
    def events(self) -> list[Record]:
        if self._events is None:
            self._events = list(self.log.records(page_size=5_000))
        return self._events

    @property
    def facts(self) -> LedgerFacts:
        if self._ledger is None:
            self._ledger = LedgerFacts.of(self.events)
        return self._ledger


@dataclass
class RoundFacts:
    ruleset_id: str = "(never opened)"  # a tombstone: its void arrived before open_round
    phase: str = "open"  # open | settled | voided | reversed
    settled_once: bool = False
    reversed: bool = False
    void_cause: str | None = None
    refunded_minor: int = 0


@dataclass
class LedgerFacts:
    """One pass over the events: rounds, accounts and broken postings."""

    rounds: dict[str, RoundFacts]
    balances: Counter[str]
    unbalanced: list[str]
    staked_minor: int
    returned_minor: int
    refunded_minor: int
    reversed_minor: int
    remainders: int  # settlement lines whose payout was rounded down
    event_counts: Counter[str]  # by stored event name

    @staticmethod
    def of(events: list[Record]) -> LedgerFacts:
        facts = LedgerFacts({}, Counter(), [], 0, 0, 0, 0, 0, Counter())
        for ev in events:
            facts._take(ev)
        return facts

    def _take(self, ev: Record) -> None:
        self.event_counts[event_name(ev)] += 1
        postings = postings_of(ev)
        total = sum(p.amount_minor for p in postings)
        if total != 0:
            self.unbalanced.append(f"{event_name(ev)} at position {ev.position} sums to {total}")
        for p in postings:
            self.balances[p.account] += p.amount_minor
        if not is_round(ev):
            return
        r = self.rounds.setdefault(ev.originator_id, RoundFacts())
        match ev:
            case Opened():
                r.ruleset_id = ev.ruleset_id
            case BetPlaced():
                self.staked_minor += ev.stake_minor
            case DecisionTaken() | FollowDecided():
                self.staked_minor += sum(m.amount_minor for m in ev.stake_moves)
            case Settled():
                r.phase, r.settled_once = "settled", True
                self.returned_minor += sum(x.returned_minor for x in ev.results)
                self.remainders += sum(1 for x in ev.results if x.remainder_num)
            case SettlementReversed():
                r.phase, r.reversed = "reversed", True
                self.reversed_minor += sum(p.amount_minor for p in ev.postings if p.account.startswith("player:"))
            case Voided():
                r.phase, r.void_cause = "voided", ev.cause
                refund = sum(x.amount_minor for x in ev.refunds)
                r.refunded_minor += refund
                self.refunded_minor += refund

    def round_balance(self, round_id: str) -> int:
        return self.balances.get(f"round:{round_id}", 0)


# ---------------------------------------------------------------- sections


def _table(rows: list[list[str]], right_from: int = 1) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for row in rows:
        cells = [c.rjust(w) if i >= right_from else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))]
        out.append("  " + "  ".join(cells).rstrip())
    return out


def feed_section(d: DemoData) -> Section:
    s = d.feed
    statuses = Counter(r.status for r in d.results)
    faults = ", ".join(f"{k} {v}" for k, v in sorted(s.faults.items())) or "none"
    lines = [
        f"  tables {len(s.tables)}, rounds {s.rounds_total}, commands {s.lines}; "
        f"rounds with an injected fault: {s.faulty_rounds}",
        f"  faults injected: {faults}",
        "  ingest: " + ", ".join(f"{k} {statuses.get(k, 0)}" for k in ("accepted", "duplicate", "refused", "conflict")),
        f"  events recorded: {len(d.events)} in {d.db_url}",
    ]
    timing = ", ".join(f"{k} {v:.1f}s" for k, v in d.seconds.items())
    if timing:
        lines.append(f"  time: {timing}")
    return Section("Feed and ingest", lines)


def rounds_section(d: DemoData) -> Section:
    by: dict[str, Counter[str]] = defaultdict(Counter)
    for r in d.facts.rounds.values():
        by[r.ruleset_id][r.phase] += 1
        if r.reversed:
            by[r.ruleset_id]["of which reversed"] += 1
    cols = ["settled", "voided", "open", "of which reversed"]
    rows = [["rule set", *cols, "total"]]
    for ruleset_id in sorted(by):
        c = by[ruleset_id]
        rows.append([ruleset_id, *(str(c.get(k, 0)) for k in cols),
                     str(sum(v for k, v in c.items() if k != "of which reversed"))])
    note = "  ('of which reversed': a settlement was reversed, then the round was voided or resettled)"
    return Section("Rounds by game and outcome", _table(rows) + [note])


def voids_section(d: DemoData) -> Section:
    count: Counter[str] = Counter()
    refunded: Counter[str] = Counter()
    for r in d.facts.rounds.values():
        if r.void_cause:
            count[r.void_cause] += 1
            refunded[r.void_cause] += r.refunded_minor
    if not count:
        return Section("Voids by cause", ["  no voids"])
    rows = [["cause", "rounds", "refunded"]]
    rows += [[c, str(count[c]), format_minor(refunded[c])] for c in sorted(count)]
    rows.append(["total", str(sum(count.values())), format_minor(sum(refunded.values()))])
    return Section("Voids by cause, with refunds", _table(rows))


def money_section(d: DemoData) -> Section:
    f = d.facts
    held = sum(v for a, v in f.balances.items() if a.startswith("round:"))
    house = sum(v for a, v in f.balances.items() if a.startswith("house:"))
    rows = [
        ["staked (bets, doubles, splits, insurance, follows)", format_minor(f.staked_minor)],
        ["returned by settlements (stake back + winnings)", format_minor(f.returned_minor)],
        ["refunded by voids", format_minor(f.refunded_minor)],
        ["reversed settlements (player side)", format_minor(f.reversed_minor)],
        ["held in open rounds", format_minor(held)],
        ["house result (gross gaming revenue)", format_minor(house)],
        ["settlement lines rounded down", str(f.remainders)],
    ]
    return Section("Money (EUR)", _table(rows))


def refusals_section(d: DemoData) -> Section:
    codes = Counter(r.code for r in d.results if r.status == "refused")
    if not codes:
        return Section("Refusals by code", ["  none"])
    rows = [["code", "commands"]] + [[c or "?", str(n)] for c, n in codes.most_common()]
    return Section("Refusals by code (kept in the rejections log)", _table(rows))


def invariants_section(d: DemoData) -> Section:
    f = d.facts
    problems = list(f.unbalanced[:5])
    open_closed = [
        f"round {rid} ({r.phase}) holds {format_minor(f.round_balance(rid))}"
        for rid, r in f.rounds.items()
        if r.phase in ("settled", "voided") and f.round_balance(rid) != 0
    ]
    problems += open_closed[:5]
    total = sum(f.balances.values())
    if total != 0:
        problems.append(f"all accounts sum to {format_minor(total)}, not zero")
    postings_events = sum(1 for e in d.events if postings_of(e))
    closed = sum(1 for r in f.rounds.values() if r.phase in ("settled", "voided"))
    lines = [
        f"  every event's postings sum to zero: {'OK' if not f.unbalanced else 'FAILED'} "
        f"({postings_events} events with postings)",
        f"  every closed round's account is zero: {'OK' if not open_closed else 'FAILED'} ({closed} closed rounds)",
        f"  all accounts sum to zero: {'OK' if total == 0 else 'FAILED'} ({len(f.balances)} accounts)",
    ]
    ok = not problems
    lines.append("  invariant check: OK" if ok else "  invariant check: FAILED")
    lines += [f"    - {p}" for p in problems]
    return Section("Invariants", lines, ok=ok)


SectionFn = Callable[[DemoData], Section]
SECTIONS: list[SectionFn] = [
    feed_section, rounds_section, voids_section, money_section, refusals_section, invariants_section,
]


def build_report(d: DemoData, sections: list[SectionFn] | None = None) -> list[Section]:
    return [fn(d) for fn in (sections if sections is not None else SECTIONS)]


def render(sections: list[Section]) -> str:
    out: list[str] = []
    for s in sections:
        out.append(s.title)
        out.append("-" * len(s.title))
        out.extend(s.lines)
        out.append("")
    return "\n".join(out)
