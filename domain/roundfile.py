"""Play one round from plain facts (the `ledger settle` round file), purely.

A round file is a dict (JSON): rule set id and version, the round's place
in the shoe, the bets, and the steps in the order they happened:

    {"ruleset_id": "baccarat/live-8d", "ruleset_version": 1, "round_in_shoe": 12,
     "bets": [{"bet_id": "b1", "player_id": "p1", "spot": "table",
               "bet_type": "banker", "stake_minor": 1000, "mode": "no_commission"}],
     "steps": ["9H", "KD", {"card": "2C", "to": "player"},
               {"decide": "hit", "hand": "seat:1", "source": "player"},
               {"follow": "b7", "kind": "split", "accept": true}]}

A bare string step is a card dealt where the rules say the next card goes.
See docs/rounds.md for the full format and an example per game.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from domain.cards import parse_card
from domain.errors import Refusal, refuse
from domain.model import Bet, BetResult, RoundModel, StakeMove
from domain.outcome import RoundOutcome
from domain.refusals import RefusalCode
from domain.registry import get_rule_set, new_round, unknown_rule_set
from domain.ruleset import RuleSet
from domain.tableconfig import check_settings, effective_rules, settings_from_file, settings_hash

BET_FIELDS = ("bet_id", "player_id", "spot", "bet_type", "stake_minor", "mode", "seat_no")
STEPS_MAX = 500


@dataclass
class Played:
    """What playing a round file produced: the results, or the refusal and where."""

    ruleset_id: str
    ruleset_version: int
    ruleset_hash: str
    results: list[BetResult] = field(default_factory=list)
    stake_moves: list[StakeMove] = field(default_factory=list)
    refusal: Refusal | None = None
    refused_at: str | None = None  # "bet b3" | "step 7"
    complete: bool = False
    view: dict[str, Any] = field(default_factory=dict)
    outcome: RoundOutcome | None = None  # what happened (hands, totals, winner), once complete
    table: dict[str, Any] | None = None  # the file's `table` object as applied: table_id, settings, settings_hash


def parse_bet(raw: object) -> Bet:
    if not isinstance(raw, dict):
        raise refuse(RefusalCode.BAD_ROUND_FILE, "bet-not-object", bet=raw)
    unknown = set(raw) - set(BET_FIELDS)
    if unknown:
        raise refuse(
            RefusalCode.BAD_ROUND_FILE, "bet-fields", unknown=sorted(unknown), allowed=', '.join(BET_FIELDS))
    try:
        return Bet(**raw)
    except TypeError as exc:
        raise refuse(RefusalCode.BAD_ROUND_FILE, "bet", bet_id=raw.get('bet_id', '?'), error=exc) from None


def apply_step(model: RoundModel, step: object) -> list[StakeMove]:
    """Apply one step (card, decision or follow) to a round model."""
    if isinstance(step, str):
        step = {"card": step}
    if not isinstance(step, dict):
        raise refuse(RefusalCode.BAD_ROUND_FILE, step=step)
    if "card" in step:
        target = step.get("to") or model.next_card_target()
        if target is None:
            raise refuse(RefusalCode.CARD_NOT_EXPECTED, "round-file", card=step['card'])
        model.deal(parse_card(step["card"]), target)
        return []
    if "decide" in step:
        return model.decide(step["hand"], step["decide"], step.get("source", "player"), step.get("amount_minor"))
    if "follow" in step:
        return model.follow(step["follow"], step["kind"], bool(step["accept"]))
    raise refuse(RefusalCode.BAD_ROUND_FILE, "unknown-step", step=step)


def _rule_set(data: dict[str, object]) -> RuleSet:
    ruleset_id, version = data.get("ruleset_id"), data.get("ruleset_version")
    if not (isinstance(ruleset_id, str) and isinstance(version, int)):
        raise unknown_rule_set(ruleset_id, version)  # as the registry answers any other unknown pair
    return get_rule_set(ruleset_id, version)


def play(data: object, *, outcome: bool = True) -> Played:
    """Play a round file (parsed JSON) to its settlement, or to the first refusal.
    `outcome=False` skips describing what happened: the settlement benchmark measures
    play and settle only, and a description is no part of settling."""
    if not isinstance(data, dict):
        raise refuse(RefusalCode.BAD_ROUND_FILE, "not-object")
    rules = _rule_set(data)
    played = Played(rules.id, rules.version, rules.content_hash())
    if data.get("table") is not None:  # a declared table: its limits and counts over the rule set's
        table_id, settings = settings_from_file(data["table"])
        check_settings(rules, settings, table_id)
        rules = effective_rules(rules, settings)
        played.table = {"table_id": table_id, "settings": settings.as_dict(), "settings_hash": settings_hash(settings)}
    model = new_round(rules, round_in_shoe=int(data.get("round_in_shoe", 1)))
    steps = data.get("steps", [])
    if len(steps) > STEPS_MAX:
        raise refuse(RefusalCode.BAD_ROUND_FILE, "too-many-steps", steps=len(steps), steps_max=STEPS_MAX)
    where = "bets"
    try:
        for raw in data.get("bets", []):
            bet = parse_bet(raw)
            where = f"bet {bet.bet_id}"
            model.place_bet(bet)
        where = "close betting"
        model.close_betting()
        for i, step in enumerate(steps, 1):
            where = f"step {i}"
            played.stake_moves += apply_step(model, step)
    except Refusal as refusal:
        played.refusal, played.refused_at = refusal, where
    played.view = model.view()
    played.complete = played.refusal is None and model.is_complete()
    if played.complete:
        played.results = model.settle()
        played.outcome = model.outcome() if outcome else None
    return played
