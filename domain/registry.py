"""Every rule set ever published, keyed by (id, version). Nothing is removed.

A round records (id, version, content hash) when it opens; replay looks the
rule set up here by (id, version) and checks the hash still matches.
"""
from __future__ import annotations

from types import ModuleType

from domain.errors import Refusal, refuse
from domain.model import RoundModel
from domain.refusals import RefusalCode
from domain.ruleset import RuleSet


def _game_modules() -> tuple[ModuleType, ...]:
    from domain import baccarat, blackjack, teenpatti

    return (blackjack, baccarat, teenpatti)


_REGISTRY: dict[tuple[str, int], RuleSet] | None = None
_GAMES: dict[str, ModuleType] = {}


def _load() -> dict[tuple[str, int], RuleSet]:
    global _REGISTRY
    if _REGISTRY is None:
        registry: dict[tuple[str, int], RuleSet] = {}
        for module in _game_modules():
            for rules in module.RULE_SETS:
                registry[rules.key] = rules
                _GAMES[rules.game] = module
        _REGISTRY = registry
    return _REGISTRY


def all_rule_sets() -> list[RuleSet]:
    return sorted(_load().values(), key=lambda r: r.key)


def get_rule_set(ruleset_id: str, version: int) -> RuleSet:
    rules = _load().get((ruleset_id, version))
    if rules is None:
        raise unknown_rule_set(ruleset_id, version)
    return rules


def unknown_rule_set(ruleset_id: object, version: object) -> Refusal:
    """The refusal for a rule set nobody published (also for an id or version of the wrong type)."""
    known = ", ".join(f"{i} v{v}" for i, v in sorted(_load()))
    return refuse(RefusalCode.UNKNOWN_RULE_SET, ruleset_id=ruleset_id, version=version, known=known)


def latest_version(ruleset_id: str) -> int:
    versions = [v for (i, v) in _load() if i == ruleset_id]
    if not versions:
        raise refuse(RefusalCode.UNKNOWN_RULE_SET, "id", ruleset_id=ruleset_id)
    return max(versions)


def new_round(rules: RuleSet, *, round_in_shoe: int = 1) -> RoundModel:
    """A fresh pure round model for `rules` (see domain/model.py for the contract)."""
    _load()
    model: RoundModel = _GAMES[rules.game].new_round(rules, round_in_shoe=round_in_shoe)
    return model
