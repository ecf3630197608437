"""Simulated studios folded straight into the monitor's view rows, without
the ledger: each table's rounds are played by ops/sim/table.TableSim and the
round model's own settlement is added up per table, dealer and bet type the
way the `monitor` view adds up `Settled` events (projections.monitor.settlement_sums).
Fast enough to run hundreds of fair studios in a test."""
from __future__ import annotations

import json
from typing import Any

from domain.blackjack_rules import BlackjackRules
from domain.ruleset import RuleSet
from ledger.records import SettlementLine
from ops.sim.core import player_pool
from ops.sim.simulator import PLAYER_POOL_MIN, plan_tables, simulated_rule_sets
from ops.sim.table import TableSim
from projections.monitor import Sums, settlement_sums
from projections.monitor_deal import NOT_PLAYED_OUT, deal_outcome, new_deal, on_card, on_decision

TESTED_RULE_SETS = ("baccarat/live-8d", "teen-patti/20-20", "blackjack/live-8d")  # where the monitor has exact math


def rule_sets(ids: tuple[str, ...] = TESTED_RULE_SETS) -> list[RuleSet]:
    return [r for r in simulated_rule_sets() if r.id in ids]


def _modes(lines: list[tuple[int, bytes]]) -> dict[str, str]:
    out = {}
    for _t, line in lines:
        command = json.loads(line)
        if command["type"] == "place_bet" and command.get("mode"):
            out[command["bet_id"]] = command["mode"]
    return out


def _deal_of(lines: list[tuple[int, bytes]]) -> dict[str, Any]:
    """The round's deal as the view folds it, from the commands (a clean feed: every card is recorded)."""
    deal = new_deal()
    for _t, line in lines:
        command = json.loads(line)
        if command["type"] == "deal_card":
            on_card(deal, command["card"], command["target"])
        elif command["type"] == "decide":
            on_decision(deal, command["hand"], command["action"])
    return deal


def studio_rows(seed: int, rounds: int, *, tables: int = 3, rules: list[RuleSet] | None = None,
                biased: frozenset[str] = frozenset()) -> list[dict[str, Any]]:
    """View-like rows (one per table, dealer, rule set, bet type) of a clean simulated studio."""
    return studio(seed, rounds, tables=tables, rules=rules, biased=biased)[0]


def studio(seed: int, rounds: int, *, tables: int = 3, rules: list[RuleSet] | None = None,
           biased: frozenset[str] = frozenset()) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(rows as `proj_monitor`, rows as `proj_monitor_deals`) of a clean simulated studio. The
    deal rows come from the commands through the view's own tracker, and whether the dealer
    played out is checked against the round model's own `dealer_mode`."""
    cells: dict[tuple[str, str, str, int, str], Sums] = {}
    deals: dict[tuple[str, str, str, int, str, str], int] = {}
    for index, (table_id, rs) in enumerate(plan_tables(tables, rules if rules is not None else rule_sets())):
        sim = TableSim(table_id=table_id, rules=rs, seed=seed, start_ms=index * 7_000,
                       players=player_pool(PLAYER_POOL_MIN), fault_rate=0, biased=table_id in biased)
        for round_no in range(1, rounds + 1):
            played = sim.play_round(round_no)
            ctx = sim.last_round
            assert ctx is not None and not ctx.ended
            results = tuple(SettlementLine(*r.as_dict().values()) for r in ctx.model.settle())
            dealer = json.loads(played.lines[0][1])["dealer_id"]
            if isinstance(rs, BlackjackRules):
                found = deal_outcome(_deal_of(played.lines), rs)
                assert found is not None
                state = ctx.model._s  # the model's own view of the dealer
                assert (found[1] != NOT_PLAYED_OUT) == (state.dealer_mode == "full"), (table_id, round_no, found)
                dkey = (table_id, dealer, rs.id, rs.version, *found)
                deals[dkey] = deals.get(dkey, 0) + 1
            for bet, s in settlement_sums(results, _modes(played.lines)).items():
                key = (table_id, dealer, rs.id, rs.version, bet)
                old = cells.get(key, Sums(0, 0, 0, s.kept * 0, 0, 0))
                cells[key] = Sums(old.lines + s.lines, old.staked + s.staked, old.returned + s.returned,
                                  old.kept + s.kept, old.stake_sq + s.stake_sq, max(old.stake_max, s.stake_max))
    return [{"table_id": k[0], "dealer_id": k[1], "ruleset_id": k[2], "ruleset_version": k[3], "bet_type": k[4],
             "lines": s.lines, "staked_minor": s.staked, "returned_minor": s.returned, "rounding_kept": s.kept,
             "stake_sq_sum": s.stake_sq, "stake_max": s.stake_max} for k, s in cells.items()], [
        {"table_id": k[0], "dealer_id": k[1], "ruleset_id": k[2], "ruleset_version": k[3], "day": "2026-01-01",
         "up": k[4], "outcome": k[5], "rounds": n} for k, n in deals.items()]
