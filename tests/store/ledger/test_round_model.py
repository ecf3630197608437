"""The Round records; its game model is derived and cached (ledger/round.py).

- `apply` only assigns: events load whatever they say (unbalanced postings, a rule set
  unknown today); checks run where a command needs them.
- The model is rebuilt from the recorded plays once when a command first needs it (after
  loading), then advanced by the commands, never rebuilt while it stays cached.
- The balance invariant is checked in the command path, before anything is recorded.
"""
from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from domain import registry
from domain.errors import InvariantBroken, Refusal
from ledger.ids import round_id_for
from ledger.round import Round
from tests.support.feed import Feed, lines, teen_patti_round

NOW = datetime(2024, 5, 1, tzinfo=UTC)


def event(cls: Any, version: int, **fields: Any) -> Any:
    return cls(originator_id=round_id_for("T", 1), originator_version=version, timestamp=NOW,
               command_id=f"c{version}", studio_time=NOW.isoformat(), **fields)


def test_apply_only_assigns_what_was_recorded() -> None:
    opened = event(Round.Opened, 1, table_id="T", round_no=1, game="baccarat", ruleset_id="retired/rules",
                   ruleset_version=1, ruleset_hash="0" * 64, currency="EUR", shoe_id="S", round_in_shoe=1,
                   dealer_id="D")
    r = opened.mutate(None)  # no registry lookup: the rule set is gone, the round still loads
    unbalanced = [{"account": r.account, "amount_minor": 5}]
    event(Round.Settled, 2, settlement_no=1, ruleset_id="retired/rules", ruleset_version=1, results=[],
          postings=unbalanced).mutate(r)  # loads as recorded; replay reports it as a finding
    assert (r.version, r.phase, r.balance_minor) == (2, "settled", 5)
    with pytest.raises(Refusal, match="unknown_rule_set"):
        r.rules  # noqa: B018  # looked up only where needed


def counting_new_round(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    original = registry.new_round

    def counted(rules: Any, *, round_in_shoe: int = 1) -> Any:
        calls.append(1)
        return original(rules, round_in_shoe=round_in_shoe)

    monkeypatch.setattr(registry, "new_round", counted)
    return calls


def test_the_model_is_built_once_while_cached_and_rebuilt_once_after_loading(ledger, monkeypatch) -> None:
    calls = counting_new_round(monkeypatch)
    f = Feed("T")
    cmds = teen_patti_round(f)
    ledger.ingest(lines(*cmds[:3]), batch_size=1)  # open, two bets: three batches
    refused = ledger.handle(lines(f.bet("x", "p", "table", "no-such-line", 100))[0])
    assert refused.code == "bet_not_offered" and len(calls) == 1  # a refused model call keeps the model
    ledger.forget_cached()
    results = ledger.ingest(lines(*cmds[3:]), batch_size=1)
    assert all(r.status == "accepted" for r in results)
    assert len(calls) == 2  # rebuilt once from the recorded plays, then advanced
    assert ledger.find_round("T", 1).phase == "settled"


def test_a_reloaded_round_has_the_live_rounds_model(ledger, open_ledger) -> None:
    f = Feed("T")
    cmds = teen_patti_round(f)
    ledger.ingest(lines(*cmds[:-1]))
    live = ledger.find_round("T", 1)
    fresh = open_ledger().find_round("T", 1)
    assert live.model is not None and fresh.model is not None
    assert fresh.model.view() == live.model.view() and fresh.plays == live.plays


def test_a_closing_round_must_empty_its_account_before_anything_is_recorded(ledger, monkeypatch) -> None:
    f = Feed("T")
    cmds = teen_patti_round(f)
    ledger.ingest(lines(*cmds[:-1]))
    before = ledger.find_round("T", 1).version
    monkeypatch.setattr(Round, "_settlement_legs", lambda self, results: [])  # a payout that keeps the stakes
    with pytest.raises(InvariantBroken, match="would keep 1600"):
        ledger.ingest(lines(*cmds[-1:]))
    ledger.forget_cached()
    assert ledger.find_round("T", 1).version == before
