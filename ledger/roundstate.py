"""A round's state as its events leave it, and the checks that read it: the Round
aggregate's base (ledger/round.py declares the events and the commands that record them).

The game model (domain/model.py) is derived, not event state: it is rebuilt
from the recorded plays (bets, close, cards, decisions, follows, in order) the
first time a command needs it (after loading, or after another writer's events
were fast-forwarded in), then advanced by each command's checked call and kept
while the round's version moves only by this round's own commands. The rule set
is looked up (and its content hash checked) where a command needs it, cached.
"""
from __future__ import annotations

from collections import Counter
from datetime import datetime
from functools import cache, lru_cache
from typing import Any, NamedTuple
from uuid import UUID

from domain import registry
from domain.cards import Card, CardCounter, parse_card
from domain.errors import InvariantBroken, Refusal, refuse, require
from domain.model import Bet, BetResult, RoundModel, StakeMove
from domain.money import house_account, player_account, round_account
from domain.refusals import RefusalCode
from domain.ruleset import RuleSet
from domain.tableconfig import TableSettings, effective_rules
from ledger.ids import ID_MEMO_MAX
from ledger.library.aggregate import LedgerAggregate

Posting = dict[str, Any]  # {"account": str, "amount_minor": int}, as stored
_CLOSED = frozenset({"voided", "settled", "reversed"})  # the phases `_refuse_closed` refuses


@cache
def ruleset_hash(key: tuple[str, int]) -> str:
    """The rule set's content hash, computed once per (id, version) per process."""
    return registry.get_rule_set(*key).content_hash()


@cache
def rules_for(ruleset_id: str, version: int, recorded_hash: str) -> RuleSet:
    """The rule set a round was opened under; a rule set changed since is an invariant
    broken (the round cannot go on under other rules; replay reports it as a finding)."""
    rules = registry.get_rule_set(ruleset_id, version)
    require(ruleset_hash(rules.key) == recorded_hash, f"rule set {ruleset_id} v{version} changed")
    return rules


@lru_cache(maxsize=1024)
def table_rules_for(key: tuple[str, int], settings: TableSettings) -> RuleSet:
    """The rule set `key` with a table's overrides (domain/tableconfig.py), made once per pair."""
    return effective_rules(registry.get_rule_set(*key), settings)


def add_transfer(postings: list[Posting], from_account: str, to_account: str, amount_minor: int) -> None:
    """`legs_to_dicts(transfer(...))` appended to `postings`, without making the legs: the
    two stored postings (the same dicts, in the same order), none for a zero amount. They
    sum to zero by construction, so a list of them is balanced (check_balanced would pass)."""
    if type(amount_minor) is not int or amount_minor < 0:  # transfer()'s check: the message only when broken
        raise InvariantBroken(f"bad transfer amount {amount_minor!r}")
    if amount_minor:
        postings.append({"account": from_account, "amount_minor": -amount_minor})
        postings.append({"account": to_account, "amount_minor": amount_minor})


def moves_to_dicts(moves: list[StakeMove]) -> list[dict[str, Any]]:
    return [
        {"bet_id": m.bet_id, "player_id": m.player_id, "amount_minor": m.amount_minor, "reason": m.reason}
        for m in moves
    ]


# ---------------------------------------------------------------- plays
# The game model's calls, as recorded: replayed in order they rebuild the model
# (tuples: one is made per event, and a frozen dataclass costs several times more to make).


class BetPlay(NamedTuple):
    bet: Bet

    def replay(self, model: RoundModel) -> None:
        model.place_bet(self.bet)


class ClosePlay(NamedTuple):
    def replay(self, model: RoundModel) -> None:
        model.close_betting()


class CardPlay(NamedTuple):
    card: str
    target: str

    def replay(self, model: RoundModel) -> None:
        model.deal(parse_card(self.card), self.target)


class DecisionPlay(NamedTuple):
    hand: str
    action: str
    source: str
    amount_minor: int | None

    def replay(self, model: RoundModel) -> None:
        model.decide(self.hand, self.action, self.source, self.amount_minor)


class FollowPlay(NamedTuple):
    bet_id: str
    kind: str
    accept: bool

    def replay(self, model: RoundModel) -> None:
        model.follow(self.bet_id, self.kind, self.accept)


Play = BetPlay | ClosePlay | CardPlay | DecisionPlay | FollowPlay
CLOSE = ClosePlay()


class RoundState(LedgerAggregate):
    """A round's state, folded from its events by their `apply` (ledger/round.py), and its checks."""

    asked_as: str | None = None  # a tombstone's TABLE#NO, from the command that named it (`known_as`)

    # ------------------------------------------------------------------ state

    def __init__(self, round_id: UUID, created_on: datetime) -> None:
        super().__init__(round_id, created_on)
        self.account = _account_of(round_id)  # named once: every posting checks against it
        self.table_id = ""
        self.round_no = 0
        self.game = ""
        self.ruleset_id = ""
        self.ruleset_version = 0
        self.ruleset_hash = ""
        self.currency = ""
        self.shoe_id = ""
        self.round_in_shoe = 0
        self.dealer_id = ""
        self.phase = "new"  # betting | dealing | settled | reversed | voided
        self.bets: dict[str, Bet] = {}
        self.put_in: dict[tuple[str, str], int] = {}  # (bet_id, player_id) -> every amount put in
        self.cards: list[tuple[int, str, str]] = []
        self.card_texts: list[str] = []  # the cards' texts alone, in order (counted per card dealt)
        self.plays: list[Play] = []  # the model's calls, in order (see module doc)
        self.balance_minor = 0
        self.paused: dict[str, Any] | None = None
        self.interruptions: list[dict[str, Any]] = []  # player-side interruptions, in order
        self.voided: dict[str, Any] | None = None
        self.settlements: list[dict[str, Any]] = []
        self.reversed_nos: list[int] = []
        self._model: RoundModel | None = None
        self.table_config: tuple[int, str] | None = None  # (version, hash) of the table configuration, if any
        self.table_settings: TableSettings | None = None  # that configuration's overrides of the rule set
        self._rule_set: RuleSet | None = None  # derived from the opening facts (see `rules`)
        self._model_at = -1  # the version `_model` reflects; any other version rebuilds it

    def _post(self, postings: list[Posting]) -> None:
        # A loop, not sum() of a generator: a generator's frame is made and resumed per call
        # and per leg, and every bet, decision and settlement posts (timeit in docs/benchmarks.md).
        account = self.account
        total = 0
        for p in postings:
            if p["account"] == account:
                total += p["amount_minor"]
        self.balance_minor += total

    def _put_in(self, bet_id: str, player_id: str, amount_minor: int) -> None:
        key = (bet_id, player_id)
        self.put_in[key] = self.put_in.get(key, 0) + amount_minor

    def _take_moves(self, moves: list[dict[str, Any]], postings: list[Posting]) -> None:
        for m in moves:
            self._put_in(m["bet_id"], m["player_id"], m["amount_minor"])
        self._post(postings)

    @property
    def rules(self) -> RuleSet | None:
        """Looked up once per round (every command asks; the opening facts never change)."""
        rules = self._rule_set
        if rules is None and self.ruleset_id:
            rules = rules_for(self.ruleset_id, self.ruleset_version, self.ruleset_hash)
            if self.table_settings is not None:
                rules = table_rules_for(rules.key, self.table_settings)
            self._rule_set = rules
        return rules

    @property
    def model(self) -> RoundModel | None:
        """The game model at this version: kept while only this round's commands moved it."""
        if self._model_at != self.version or self._model is None:
            self._model = self._rebuilt_model()
            self._model_at = self.version if self._model is not None else -1
        return self._model

    def _rebuilt_model(self) -> RoundModel | None:
        rules = self.rules
        if rules is None:
            return None
        model: RoundModel = registry.new_round(rules, round_in_shoe=self.round_in_shoe)
        try:
            for play in self.plays:
                play.replay(model)
        except Refusal as refusal:
            raise InvariantBroken(f"round {self._label()} does not replay under its rules: {refusal}") from None
        return model

    def _game(self) -> RoundModel:
        """The model, for a command on an opened round."""
        model = self._model
        if self._model_at == self.version and model is not None:  # `model`'s kept case, without its call
            return model
        model = self.model
        if model is None:
            raise InvariantBroken(f"round {self._label()} has no game model")
        return model

    def _rules(self) -> RuleSet:
        rules = self.rules
        if rules is None:
            raise InvariantBroken(f"round {self._label()} has no rule set")
        return rules

    @property
    def is_open(self) -> bool:
        return self.phase in ("betting", "dealing")

    @property
    def is_closed(self) -> bool:
        return self.phase in ("settled", "voided")

    @property
    def settlement_no(self) -> int:
        return len(self.settlements)

    # ------------------------------------------------------------- checks

    def refuse_if_exists(self) -> None:
        if self.voided is not None:
            raise refuse(RefusalCode.ROUND_VOIDED, "tombstone", round=self._label())
        if self.version != 0:
            raise refuse(RefusalCode.ROUND_EXISTS, round=self._label())

    def _label(self) -> str:
        if self.table_id:
            return f"{self.table_id}#{self.round_no}"
        return self.asked_as or str(self.id)

    def known_as(self, table_id: str, round_no: int) -> None:
        """The TABLE#NO a command named this round by: a tombstone (a void before the open)
        records no table or number, and its refusals name it so, not by its UUID. The round's
        id derives from the pair, so it is the same whichever command names it."""
        if not self.table_id:
            self.asked_as = f"{table_id}#{round_no}"

    def _refuse_closed(self) -> None:
        # Checked on every command: the messages are built only when refusing.
        if self.phase == "voided":
            raise refuse(RefusalCode.ROUND_VOIDED, round=self._label())
        if self.phase in ("settled", "reversed"):
            raise refuse(RefusalCode.ROUND_SETTLED, round=self._label())

    def refuse_unless_running(self, allow_flagged: bool = False) -> None:
        if self.phase in _CLOSED:  # asked twice a command: the call only when refusing
            self._refuse_closed()
        if self.version <= 0:
            raise refuse(RefusalCode.ROUND_NOT_OPEN, "aggregate", round=self._label())
        if self.paused is not None:
            flagged = self.paused["flag_code"] is not None
            if not (allow_flagged and flagged):
                raise refuse(RefusalCode.ROUND_PAUSED, round=self._label(), cause=self.paused["cause"])

    def _check_interrupted_player(self, cause: str, player_id: str | None) -> str:
        if player_id is None:
            raise refuse(RefusalCode.PLAYER_REQUIRED, cause=cause, round=self._label())
        if not any(b.player_id == player_id for b in self.bets.values()):
            raise refuse(RefusalCode.PLAYER_NOT_IN_ROUND, player_id=player_id, round=self._label(), cause=cause)
        return player_id

    def _check_card_count(self, card: Card, text: str, shoe_seen: Counter[str]) -> None:
        # Only this card's count matters: shoe so far + this round's copies of it.
        decks = self._rules().decks
        in_shoe = shoe_seen.get(text, 0)  # not `[text]`: a card not seen yet would call Counter.__missing__
        if in_shoe + len(self.cards) < decks:  # even if every card of the round were this one: no count to take
            return
        seen = in_shoe + self.card_texts.count(text)
        if seen >= decks:  # CardCounter words the refusal
            CardCounter(decks, Counter({card: seen})).check(card)

    # ------------------------------------------------------------- postings

    def _move_postings(self, moves: list[StakeMove]) -> list[Posting]:
        postings: list[Posting] = []
        for m in moves:
            add_transfer(postings, player_account(m.player_id), self.account, m.amount_minor)
        return postings

    def _settlement_legs(self, results: list[BetResult]) -> list[Posting]:
        """The settlement's postings: per bet, its return to the player, then what the house keeps (or pays)."""
        house = house_account(self.table_id)
        account = self.account
        postings: list[Posting] = []
        for r in results:
            add_transfer(postings, account, player_account(r.player_id), r.returned_minor)
            kept = r.staked_minor - r.returned_minor
            if kept >= 0:
                add_transfer(postings, account, house, kept)
            else:
                add_transfer(postings, house, account, -kept)
        return postings

    def _require_emptied(self, postings: list[Posting], how: str) -> None:
        """Invariant, checked before recording: a closed round's account ends at zero."""
        left = self.balance_minor + sum(p["amount_minor"] for p in postings if p["account"] == self.account)
        if left != 0:  # the message names the round (a UUID to text): built only when broken
            raise InvariantBroken(f"{how} round {self.id} would keep {left} in its account")

    def closing_cards(self) -> list[str]:
        return self.card_texts[:]


@lru_cache(maxsize=ID_MEMO_MAX)
def _account_of(round_id: UUID) -> str:
    return round_account(str(round_id))
