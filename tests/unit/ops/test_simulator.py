"""The studio simulator: deterministic, schema-valid, every rule set, faults at
the configured rate, and a clean feed that the pure domain models accept."""
from __future__ import annotations

import json
from collections import Counter, defaultdict
from fractions import Fraction

import pytest

from domain.cards import CardCounter, parse_card
from domain.errors import InvariantBroken, Refusal
from domain.model import Bet
from domain.registry import get_rule_set, new_round
from ledger.commands import parse_command
from ops.sim.core import as_rate
from ops.sim.simulator import Studio, plan_tables, simulate, simulated_rule_sets
from ops.sim.table import FAULT_KINDS


def feed(tables: int = 5, rounds: int = 8, seed: int = 1, fault_rate: int | Fraction = 0) -> list[bytes]:
    return list(simulate(tables, rounds, seed, fault_rate))


def test_same_seed_same_bytes_and_other_seed_other_bytes() -> None:
    a = b"".join(feed(seed=11, fault_rate=100))
    assert a == b"".join(feed(seed=11, fault_rate=100))
    assert a != b"".join(feed(seed=12, fault_rate=100))


def test_lines_are_canonical_json_and_parse_as_commands() -> None:
    for line in feed(fault_rate=150):
        assert line.endswith(b"\n") and line.count(b"\n") == 1
        data = json.loads(line)
        assert line == json.dumps(data, sort_keys=True, separators=(",", ":")).encode() + b"\n"
        parse_command(line)


def test_every_rule_set_gets_tables_and_plays_every_round() -> None:
    studio = Studio(7, 6, seed=3)
    lines = [json.loads(x) for x in studio.lines()]
    opened = Counter(x["ruleset_id"] for x in lines if x["type"] == "open_round")
    ids = {r.id for r in simulated_rule_sets()}
    assert set(opened) == ids
    tables = {x["table_id"] for x in lines}
    assert len(tables) == 7 and {"bj-live-1", "bacc-1", "tp-1", "bj-spielbank-1", "bj-tour-1"} <= tables
    assert studio.stats.rounds_total == 7 * 6 == sum(opened.values())


def test_fewer_tables_than_rule_sets_is_honoured() -> None:
    rule_sets = simulated_rule_sets()
    for tables in range(1, len(rule_sets) + 2):
        plan = plan_tables(tables)
        assert len(plan) == len({t for t, _ in plan}) == tables
        assert [r for _, r in plan][: len(rule_sets)] == rule_sets[:tables]


def test_tables_interleave_by_studio_time() -> None:
    lines = [json.loads(x) for x in feed(tables=5, rounds=4)]
    times = [x["studio_time"] for x in lines]
    assert times == sorted(times)
    assert times[0] == "2026-11-21T12:00:00.000+00:00"
    first_five = [x["table_id"] for x in lines[:60]]
    assert len(set(first_five)) >= 3, "tables must interleave, not run one after another"


def test_clean_feed_has_unique_command_ids_and_stakes_within_limits() -> None:
    lines = [json.loads(x) for x in feed(tables=10, rounds=10, seed=5)]
    ids = [x["command_id"] for x in lines]
    assert len(ids) == len(set(ids))
    rules_of = {x["table_id"]: get_rule_set(x["ruleset_id"], x["ruleset_version"])
                for x in lines if x["type"] == "open_round"}
    for x in lines:
        if x["type"] != "place_bet":
            continue
        rules = rules_of[x["table_id"]]
        key = "behind" if x["spot"].startswith("behind:") else x["bet_type"]
        limit = rules.limit_for(key)
        assert type(x["stake_minor"]) is int and limit.min_minor <= x["stake_minor"] <= limit.max_minor
        if getattr(rules, "stake_divisible_by_min", False):
            assert x["stake_minor"] % limit.min_minor == 0


def test_feed_shows_the_rich_parts_of_the_games() -> None:
    lines = [json.loads(x) for x in feed(tables=10, rounds=40, seed=8)]
    types = Counter(x["type"] for x in lines)
    actions = Counter(x["action"] for x in lines if x["type"] == "decide")
    spots = Counter(x["spot"].split(":")[0] for x in lines if x["type"] == "place_bet")
    bet_types = Counter(x["bet_type"] for x in lines if x["type"] == "place_bet")
    for action in ("hit", "stand", "double", "split", "insurance", "no_insurance"):
        assert actions[action] > 0, action
    assert types["follow"] > 0 and spots["behind"] > 0 and spots["box"] > 0
    assert {"pair", "player_pair", "pair_plus_a", "six_card_bonus", "lucky_six"} <= set(bet_types)
    assert any(x.get("mode") == "no_commission" for x in lines)
    assert any(x.get("seat_no") is not None for x in lines)
    burns = [x for x in lines if x["type"] == "deal_card" and x["target"] == "burn"]
    assert burns and burns[0]["round_no"] == 1


@pytest.mark.parametrize("rate", [0, 100, 300])
def test_faults_at_the_configured_rate(rate: int) -> None:
    studio = Studio(10, 40, seed=21, fault_rate=rate)
    list(studio.lines())
    rounds = studio.stats.rounds_total
    expected = rounds * rate / 1000
    if rate == 0:
        assert studio.stats.faulty_rounds == 0 and not studio.stats.faults
    else:
        # a few picked faults find no occasion (a timeout in a round without decisions)
        assert 0.6 * expected <= studio.stats.faulty_rounds <= 1.3 * expected, (studio.stats.faulty_rounds, expected)


def test_every_fault_kind_shows_up_in_the_feed() -> None:
    studio = Studio(10, 30, seed=4, fault_rate=Fraction(1, 2))
    lines = [json.loads(x) for x in studio.lines()]
    for kind in FAULT_KINDS:
        if kind != "late_side_bet":  # only after round 50 of a baccarat shoe
            assert studio.stats.faults[kind] > 0, kind
    types = Counter(x["type"] for x in lines)
    assert types["pause"] and types["resume"] and types["void"] and types["reverse_settlement"]
    causes = Counter(x["cause"] for x in lines if x["type"] in ("pause", "void"))
    assert causes["host_interruption"] and causes["player_connection_lost"]
    assert any(x["type"] == "decide" and x["source"] == "timeout" and x["action"] == "auto" for x in lines)
    raw = [json.dumps(x, sort_keys=True) for x in lines]
    assert len(raw) > len(set(raw)), "duplicate deliveries repeat a line"
    first_type: dict[tuple[str, int], str] = {}
    for x in lines:
        first_type.setdefault((x["table_id"], x["round_no"]), x["type"])
    assert "void" in set(first_type.values()), "a void delivered before its open_round"


def test_fault_rate_accepts_per_mille_and_fractions() -> None:
    assert as_rate(50) == Fraction(1, 20) == as_rate(Fraction(1, 20)) == as_rate("1/20")
    with pytest.raises(InvariantBroken):
        as_rate(1001)
    with pytest.raises(ValueError):
        Studio(0, 1, seed=1)


# ------------------------------------------------------------ pure-domain replay


def replay_refusals(lines: list[bytes]) -> tuple[list[str], int]:
    """Drive the pure domain models with the feed, as a ledger would; return the
    refusals (as text) and the number of rounds that ended complete."""
    models: dict[tuple[str, int], object] = {}
    rounds_in_shoe: Counter[tuple[str, str]] = Counter()
    shoe_seen: dict[tuple[str, str], CardCounter] = {}
    shoe_of: dict[tuple[str, int], tuple[str, str]] = {}
    refusals: list[str] = []
    for raw in lines:
        c = parse_command(raw)
        key = (c.table_id, c.round_no)
        try:
            if c.type == "open_round":
                rules = get_rule_set(c.ruleset_id, c.ruleset_version)
                shoe = (c.table_id, c.shoe_id)
                rounds_in_shoe[shoe] += 1
                shoe_seen.setdefault(shoe, CardCounter(rules.decks))
                shoe_of[key] = shoe
                models[key] = new_round(rules, round_in_shoe=rounds_in_shoe[shoe])
                continue
            m = models[key]
            if c.type == "place_bet":
                m.place_bet(Bet(c.bet_id, c.player_id, c.spot, c.bet_type, c.stake_minor, c.mode, c.seat_no))
            elif c.type == "close_betting":
                m.close_betting()
            elif c.type == "deal_card":
                card = parse_card(c.card)
                if m.rules.game != "teen-patti":
                    shoe_seen[shoe_of[key]].take(card)  # never an impossible card across the shoe
                m.deal(card, c.target)
            elif c.type == "decide":
                m.decide(c.hand, c.action, c.source, c.amount_minor)
            elif c.type == "follow":
                m.follow(c.bet_id, c.kind, c.accept)
            else:
                refusals.append(f"{c.command_id}: unexpected {c.type} in a clean feed")
        except Refusal as refusal:
            refusals.append(f"{c.command_id}: {refusal}")
    complete = sum(1 for m in models.values() if m.is_complete())
    for m in models.values():
        if m.is_complete():
            m.settle()
    return refusals, complete


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_clean_feed_is_accepted_by_a_pure_domain_replay(seed: int) -> None:
    lines = feed(tables=10, rounds=25, seed=seed)
    refusals, complete = replay_refusals(lines)
    assert refusals == []
    assert complete == 10 * 25


def test_faulty_feed_is_refused_by_the_domain_only_where_a_fault_was_injected() -> None:
    lines = feed(tables=10, rounds=20, seed=9, fault_rate=200)
    clean_refusals, _ = replay_refusals(feed(tables=10, rounds=20, seed=9))
    assert clean_refusals == []
    # a domain-only replay sees no pauses or voids; it only needs to not crash
    refusals, _ = replay_refusals([x for x in lines if json.loads(x)["type"] not in
                                   ("pause", "resume", "void", "reverse_settlement")])
    assert refusals, "injected faults must produce refusals"


def test_stats_rounds_by_rule_set() -> None:
    studio = Studio(5, 3, seed=2)
    per_table = defaultdict(int)
    for x in studio.lines():
        d = json.loads(x)
        if d["type"] == "open_round":
            per_table[d["table_id"]] += 1
    assert set(per_table.values()) == {3}
    assert sum(studio.stats.rounds.values()) == 15
