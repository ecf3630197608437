"""A seeded, deterministic studio simulator: the demo, the benchmark load and
the fault-test driver.

`simulate(tables, rounds, seed, fault_rate)` yields the feed of a whole studio
as JSON lines (ledger/commands.py), byte for byte the same for the same
arguments. Every rule set of `simulated_rule_sets()` gets tables;
each table plays `rounds` rounds from its own seeded shoe, and every round is
driven by the pure domain model (`new_round`, `next_card_target`,
`legal_decisions`, `pending_follows`), so the feed is legal unless a fault
was injected on purpose. Faults (`fault_rate` per round, see `FAULT_KINDS`):
timeouts, disconnects, host interruptions, dealer errors, pauses, duplicate
deliveries, voids delivered before their round opened, bad commands, late
side bets and settlement reversals.

Tables interleave by studio time (a fixed epoch, never the wall clock).
"""
from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from fractions import Fraction

from domain.registry import all_rule_sets
from domain.ruleset import RuleSet
from ops.sim.core import as_rate, player_pool
from ops.sim.operators import operator_ids, with_operators
from ops.sim.table import FAULT_KINDS, TableSim

TABLES_MAX = 500
ROUNDS_MAX = 1_000_000
PLAYERS_PER_TABLE = 8
PLAYER_POOL_MIN = 12

_PREFIXES = {
    "blackjack/live-8d": "bj-live",
    "blackjack/spielbank": "bj-spielbank",
    "blackjack/casino-tour": "bj-tour",
    "baccarat/live-8d": "bacc",
    "teen-patti/20-20": "tp",
}


@dataclass
class SimStats:
    """What a run produced, filled in while the feed is consumed."""

    lines: int = 0
    rounds: Counter[str] = field(default_factory=Counter)  # by rule set id
    faults: Counter[str] = field(default_factory=Counter)  # by fault kind
    faulty_rounds: int = 0
    tables: list[str] = field(default_factory=list)

    @property
    def rounds_total(self) -> int:
        return sum(self.rounds.values())


def simulated_rule_sets(published: list[RuleSet] | None = None) -> list[RuleSet]:
    """The rule sets a default studio plays, in registry order: the first version of each rule
    set. A later version is played where a studio is given it (`Studio(rule_sets=...)`), never by
    default, so publishing one (a new side bet's version) leaves the simulated day, its benchmarks
    and tests what they were, with no change here. Some later versions the simulated players
    cannot follow anyway: live-8d v2 keeps seats across rounds (domain/seating.py) while the
    simulated players pick a seat every round and sit out at random, so its feeds would be refused
    `seat_held` / `player_already_seated`; spielbank v2 differs from v1 only by the other players'
    own insurance, which they never take."""
    rule_sets = all_rule_sets() if published is None else published
    first = {r.id: min(o.version for o in rule_sets if o.id == r.id) for r in rule_sets}
    return [r for r in rule_sets if r.version == first[r.id]]


def table_prefix(rules: RuleSet, versions_of_id: int) -> str:
    base = _PREFIXES.get(rules.id, rules.id.replace("/", "-"))
    return f"{base}-v{rules.version}" if versions_of_id > 1 else base


def plan_tables(tables: int, rule_sets: list[RuleSet] | None = None) -> list[tuple[str, RuleSet]]:
    """Exactly `tables` table ids, the rule sets dealt round-robin (fewer tables than rule
    sets: the first ones in registry order; asked for 3, a studio has 3, never 5)."""
    rule_sets = list(rule_sets if rule_sets is not None else simulated_rule_sets())
    count = tables
    versions = Counter(r.id for r in rule_sets)
    numbers: Counter[str] = Counter()
    plan = []
    for k in range(count):
        rules = rule_sets[k % len(rule_sets)]
        prefix = table_prefix(rules, versions[rules.id])
        numbers[prefix] += 1
        plan.append((f"{prefix}-{numbers[prefix]}", rules))
    return plan


class Studio:
    """One simulated studio; iterate `lines()` once, then read `stats`."""

    def __init__(
        self,
        tables: int,
        rounds: int,
        seed: int,
        fault_rate: Fraction | int | str = 0,
        *,
        rule_sets: list[RuleSet] | None = None,
        fault_kinds: tuple[str, ...] = FAULT_KINDS,
        biased_tables: frozenset[str] = frozenset(),
        operators: int | None = None,
    ) -> None:
        if not 1 <= tables <= TABLES_MAX:
            raise ValueError(f"tables must be 1..{TABLES_MAX}, got {tables}")
        if not 1 <= rounds <= ROUNDS_MAX:
            raise ValueError(f"rounds must be 1..{ROUNDS_MAX}, got {rounds}")
        unknown = set(fault_kinds) - set(FAULT_KINDS)
        if unknown:
            raise ValueError(f"unknown fault kinds {sorted(unknown)}; known: {', '.join(FAULT_KINDS)}")
        self.rounds = rounds
        self.seed = seed
        self.fault_rate = as_rate(fault_rate)
        self.plan = plan_tables(tables, rule_sets)
        self.players = player_pool(max(PLAYER_POOL_MIN, PLAYERS_PER_TABLE * len(self.plan) // 2))
        self.stats = SimStats(tables=[t for t, _ in self.plan])
        self.fault_kinds = fault_kinds
        unknown_tables = biased_tables - set(self.stats.tables)
        if unknown_tables:
            raise ValueError(f"no table {', '.join(sorted(unknown_tables))} to bias; tables: "
                             f"{', '.join(self.stats.tables)}")
        self.biased_tables = biased_tables
        self.operators = operators  # None: bets name no operator (the default operator's)
        if operators is not None:
            operator_ids(operators)  # the count checked now, not when the feed is read

    def _table_stream(self, index: int, table_id: str, rules: RuleSet) -> Iterator[tuple[int, int, int, bytes]]:
        sim = TableSim(
            table_id=table_id,
            rules=rules,
            seed=self.seed,
            start_ms=index * 7_000,  # tables open staggered, a few seconds apart
            players=self.players,
            fault_rate=self.fault_rate,
            fault_kinds=self.fault_kinds,
            biased=table_id in self.biased_tables,
        )
        n = 0
        for round_no in range(1, self.rounds + 1):
            played = sim.play_round(round_no)
            self.stats.rounds[rules.id] += 1
            if played.faults:
                self.stats.faulty_rounds += 1
                self.stats.faults.update(played.faults)
            for t_ms, line in played.lines:
                n += 1
                yield (t_ms, index, n, line)

    def lines(self) -> Iterator[bytes]:
        """The whole studio's feed, tables interleaved by studio time (with operators: their
        configurations first, every player's commands naming the player's operator)."""
        streams = [self._table_stream(i, t, r) for i, (t, r) in enumerate(self.plan)]
        merged: Iterator[bytes] = (line for _t, _i, _n, line in heapq.merge(*streams))
        if self.operators is not None:
            merged = with_operators(merged, self.operators, self.seed)
        for line in merged:
            self.stats.lines += 1
            yield line


def simulate(
    tables: int,
    rounds: int,
    seed: int,
    fault_rate: Fraction | int | str = 0,
    *,
    rule_sets: list[RuleSet] | None = None,
    fault_kinds: tuple[str, ...] = FAULT_KINDS,
) -> Iterator[bytes]:
    """The feed as bytes lines (newline-terminated). `fault_rate`: a Fraction, or an int per mille."""
    return Studio(tables, rounds, seed, fault_rate, rule_sets=rule_sets, fault_kinds=fault_kinds).lines()
