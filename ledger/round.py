"""The Round aggregate: one per (table, round number).

Command methods take plain typed values (never a wire model), check first
(ledger rules here, game rules by the call on the pure domain model), decide,
then record events. An event's `apply` only assigns the recorded facts.

The game model (domain/model.py) is derived, not event state: it is rebuilt
from the recorded plays (bets, close, cards, decisions, follows, in order) the
first time a command needs it (after loading, or after another writer's events
were fast-forwarded in), then advanced by each command's checked call and kept
while the round's version moves only by this round's own commands. The rule set
is looked up (and its content hash checked) where a command needs it, cached.

Event names, fields and money flows are the contract in docs/events.md.
"""
from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from functools import cache, lru_cache
from typing import Any, NamedTuple
from uuid import NAMESPACE_URL, UUID, uuid5

from domain import registry
from domain.cards import Card, CardCounter, parse_card
from domain.errorpolicy import is_player_side
from domain.errors import InvariantBroken, Refusal, refuse, require
from domain.model import Bet, BetResult, RoundModel, StakeMove
from domain.money import house_account, player_account, round_account
from domain.refusals import RefusalCode
from domain.ruleset import RuleSet
from domain.tableconfig import TableSettings, effective_rules
from ledger.library.aggregate import LedgerAggregate, LedgerEvent, Stamp

# Fixed forever: round and shoe ids are derived from it (docs/events.md).
NAMESPACE = uuid5(NAMESPACE_URL, "https://casino-ledger/ids")
# Ids memoised per name: a feed touches a table's current round (and shoe) command after
# command, so the working set is a name per table with a round in flight. 1,024 serves a
# studio of a thousand tables (a miss costs a uuid5 on every command once the tables
# outnumber the memo) in about 1 KiB per name over the memos; a larger memo only held
# memory that grew with the rounds ingested.
ID_MEMO_MAX = 1024
HUMAN_ERROR = "human_error"
LEDGER_ACTOR = "ledger"

Posting = dict[str, Any]  # {"account": str, "amount_minor": int}, as stored


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


@lru_cache(maxsize=ID_MEMO_MAX)  # uuid5 hashes on every command; ids are pure functions of their names
def round_id_for(table_id: str, round_no: int) -> UUID:
    return uuid5(NAMESPACE, f"round/{table_id}/{round_no}")


@lru_cache(maxsize=ID_MEMO_MAX)
def round_text_for(table_id: str, round_no: int) -> str:
    """The round id as text (what results and logs show), without a UUID str() per command."""
    return str(round_id_for(table_id, round_no))


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


class Round(LedgerAggregate):
    """Everything that happens in one round, and its money."""

    asked_as: str | None = None  # a tombstone's TABLE#NO, from the command that named it (`known_as`)

    class Event(LedgerEvent["Round"]):
        def new_aggregate(self) -> Round:
            return Round(self.originator_id, self.timestamp)

    class Opened(Event):
        table_id: str
        round_no: int
        game: str
        ruleset_id: str
        ruleset_version: int
        ruleset_hash: str
        currency: str
        shoe_id: str
        round_in_shoe: int
        dealer_id: str

        def apply(self, r: Round) -> None:
            r.table_id, r.round_no, r.game, r.currency = self.table_id, self.round_no, self.game, self.currency
            r.ruleset_id, r.ruleset_version, r.ruleset_hash = self.ruleset_id, self.ruleset_version, self.ruleset_hash
            r.shoe_id, r.round_in_shoe, r.dealer_id = self.shoe_id, self.round_in_shoe, self.dealer_id
            r.phase = "betting"

    class TableApplied(Event):
        """Recorded right after Opened, only at a configured table (ledger/table.py): the
        table configuration version the round opened under, its hash, and the table's
        overrides of the rule set, so the round replays under exactly these for ever."""

        config_version: int
        config_hash: str
        settings: dict[str, Any]  # domain.tableconfig.TableSettings.as_dict()

        def apply(self, r: Round) -> None:
            r.table_config = (self.config_version, self.config_hash)
            r.table_settings = TableSettings.from_dict(self.settings)
            r._rule_set = None

    class BetPlaced(Event):
        bet_id: str
        player_id: str
        spot: str
        bet_type: str
        stake_minor: int
        mode: str | None
        seat_no: int | None
        postings: list[Posting]

        def apply(self, r: Round) -> None:
            bet = Bet(self.bet_id, self.player_id, self.spot, self.bet_type, self.stake_minor, self.mode, self.seat_no)
            r.bets[self.bet_id] = bet
            r.plays.append(BetPlay(bet))
            r._put_in(self.bet_id, self.player_id, self.stake_minor)
            r._post(self.postings)

    class BettingClosed(Event):
        def apply(self, r: Round) -> None:
            r.plays.append(CLOSE)
            r.phase = "dealing"

    class CardDealt(Event):
        card: str  # canonical, e.g. "TD"
        target: str
        seq_no: int

        def apply(self, r: Round) -> None:
            r.cards.append((self.seq_no, self.card, self.target))
            r.card_texts.append(self.card)
            r.plays.append(CardPlay(self.card, self.target))

    class DecisionTaken(Event):
        hand: str
        action: str
        source: str  # player | timeout | system | dealer
        amount_minor: int | None
        stake_moves: list[dict[str, Any]]
        postings: list[Posting]

        def apply(self, r: Round) -> None:
            r.plays.append(DecisionPlay(self.hand, self.action, self.source, self.amount_minor))
            r._take_moves(self.stake_moves, self.postings)

    class FollowDecided(Event):
        bet_id: str
        kind: str  # split | double
        accept: bool
        stake_moves: list[dict[str, Any]]
        postings: list[Posting]

        def apply(self, r: Round) -> None:
            r.plays.append(FollowPlay(self.bet_id, self.kind, self.accept))
            r._take_moves(self.stake_moves, self.postings)

    class Paused(Event):
        cause: str
        by: str
        note: str
        flag_code: str | None

        def apply(self, r: Round) -> None:
            r.paused = {"cause": self.cause, "by": self.by, "note": self.note, "flag_code": self.flag_code}

    class Interrupted(Event):
        """A player-side interruption (docs/events.md): who, why, and what the policy did.
        Recorded before that action's events (auto decisions, Paused or Voided), so a
        disconnect leaves a trace even when there is nothing to complete (baccarat, Teen Patti)."""

        cause: str
        by: str
        note: str
        player_id: str
        action: str

        def apply(self, r: Round) -> None:
            r.interruptions.append({"cause": self.cause, "player_id": self.player_id, "action": self.action})

    class Resumed(Event):
        by: str
        note: str

        def apply(self, r: Round) -> None:
            r.paused = None

    class Voided(Event):
        cause: str
        by: str
        note: str
        refunds: list[dict[str, Any]]
        postings: list[Posting]

        def apply(self, r: Round) -> None:
            r._post(self.postings)
            r.paused = None
            r.voided = {"cause": self.cause, "by": self.by, "note": self.note}
            r.phase = "voided"

    class Settled(Event):
        settlement_no: int
        ruleset_id: str
        ruleset_version: int
        results: list[dict[str, Any]]
        postings: list[Posting]

        def apply(self, r: Round) -> None:
            r._post(self.postings)
            r.settlements.append({"settlement_no": self.settlement_no, "results": self.results, "postings": self.postings})
            r.phase = "settled"

    class SettlementReversed(Event):
        settlement_no: int
        by: str
        reason: str
        postings: list[Posting]

        def apply(self, r: Round) -> None:
            r._post(self.postings)
            r.reversed_nos.append(self.settlement_no)
            r.phase = "reversed"

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

    @classmethod
    def new(cls, table_id: str, round_no: int) -> Round:
        return cls(round_id_for(table_id, round_no), datetime.now(UTC))

    def _post(self, postings: list[Posting]) -> None:
        account = self.account
        self.balance_minor += sum(p["amount_minor"] for p in postings if p["account"] == account)

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
        model = self.model
        if model is None:
            raise InvariantBroken(f"round {self._label()} has no game model")
        return model

    def _rules(self) -> RuleSet:
        rules = self.rules
        if rules is None:
            raise InvariantBroken(f"round {self._label()} has no rule set")
        return rules

    def _emit(self, event_class: type[Round.Event], stamp: Stamp, **fields: object) -> None:
        """Record an event; the model stays current when it was current before (it
        moved with the checked call this event records, or it does not move)."""
        current = self._model_at == self.version
        self._record_event(event_class, stamp, **fields)
        if current:
            self._model_at = self.version

    @property
    def is_open(self) -> bool:
        return self.phase in ("betting", "dealing")

    @property
    def is_closed(self) -> bool:
        return self.phase in ("settled", "voided")

    @property
    def settlement_no(self) -> int:
        return len(self.settlements)

    # ------------------------------------------------------------ commands

    def open(self, stamp: Stamp, rules: RuleSet, *, table_id: str, round_no: int, currency: str,
             shoe_id: str, dealer_id: str, round_in_shoe: int,
             table: tuple[int, str, TableSettings] | None = None) -> None:
        """Open under `rules` (the published rule set); at a configured table, `table` is
        (config version, config hash, overrides) and is recorded as TableApplied."""
        self.refuse_if_exists()
        self._emit(
            Round.Opened, stamp,
            table_id=table_id, round_no=round_no, game=rules.game, ruleset_id=rules.id,
            ruleset_version=rules.version, ruleset_hash=ruleset_hash(rules.key), currency=currency,
            shoe_id=shoe_id, round_in_shoe=round_in_shoe, dealer_id=dealer_id,
        )
        if table is not None:
            version, digest, settings = table
            self._emit(Round.TableApplied, stamp, config_version=version, config_hash=digest,
                       settings=settings.as_dict())

    def place_bet(self, bet: Bet, stamp: Stamp) -> None:
        self.refuse_unless_running()
        if bet.bet_id in self.bets:  # hot path: the message is built only when refusing
            raise refuse(RefusalCode.DUPLICATE_BET_ID, bet_id=bet.bet_id, round=self._label())
        self._game().place_bet(bet)
        postings: list[Posting] = []
        add_transfer(postings, player_account(bet.player_id), self.account, bet.stake_minor)
        self._emit(
            Round.BetPlaced, stamp, bet_id=bet.bet_id, player_id=bet.player_id, spot=bet.spot,
            bet_type=bet.bet_type, stake_minor=bet.stake_minor, mode=bet.mode, seat_no=bet.seat_no,
            postings=postings,
        )

    def close_betting(self, stamp: Stamp) -> None:
        self.refuse_unless_running()
        self._game().close_betting()
        self._emit(Round.BettingClosed, stamp)
        self._settle_if_complete(stamp)

    def deal_card(self, card: Card, target: str, seq_no: int, shoe_seen: Counter[str], stamp: Stamp) -> Refusal | None:
        """Record a card. A card the rules forbid is a human error: it is not
        recorded, the round gets the policy's consequence (flagged pause or
        void), and the refusal is returned (not raised) so the caller keeps the
        consequence events. The correct card resumes a flagged round."""
        self.refuse_unless_running(allow_flagged=True)
        expected_seq = len(self.cards) + 1
        if seq_no != expected_seq:
            raise refuse(
                RefusalCode.CARD_OUT_OF_SEQUENCE, card=card, seq_no=seq_no, round=self._label(), expected=expected_seq)
        text = str(card)
        try:
            self._check_card_count(card, text, shoe_seen)
            self._game().deal(card, target)
        except Refusal as refusal:
            self._human_error(stamp, refusal)
            return refusal
        if self.paused is not None:
            self._emit(Round.Resumed, stamp, by=LEDGER_ACTOR, note=f"the correct card {card} resumes the round")
        self._emit(Round.CardDealt, stamp, card=text, target=target, seq_no=seq_no)
        self._settle_if_complete(stamp)
        return None

    def decide(self, hand: str, action: str, source: str, amount_minor: int | None, stamp: Stamp,
               player_id: str | None = None) -> None:
        """`player_id`, when the feed names who decided, must be the one who decides for the hand
        (seat player, box holder); it is checked, not recorded (the event's shape stays)."""
        self.refuse_unless_running()
        model = self._game()
        if player_id is not None:
            check_decider = getattr(model, "check_decider", None)
            if check_decider is not None:  # games without decisions refuse the decision itself below
                check_decider(hand, player_id)
        moves = model.decide(hand, action, source, amount_minor)
        self._record_decision(stamp, hand, action, source, amount_minor, moves)
        self._settle_if_complete(stamp)

    def follow(self, bet_id: str, kind: str, accept: bool, stamp: Stamp) -> None:
        self.refuse_unless_running()
        moves = self._game().follow(bet_id, kind, accept)
        self._record_follow(stamp, bet_id, kind, accept, moves)
        self._settle_if_complete(stamp)

    def pause(self, cause: str, by: str, note: str, player_id: str | None, stamp: Stamp) -> str:
        """Apply the rule set's error policy for the cause; returns the action taken.
        A player-side cause names its player and is recorded (`Interrupted`) first."""
        self.refuse_unless_running()
        action = self._rules().error_policy.action_for(cause)
        player = ""
        if is_player_side(cause):  # the policy allows "complete" only for these (ErrorPolicy)
            player = self._check_interrupted_player(cause, player_id)
            self._emit(Round.Interrupted, stamp, cause=cause, by=by, note=note, player_id=player, action=action)
        if action == "complete":
            self._complete_player(stamp, player)
        elif action == "pause":
            self._emit(Round.Paused, stamp, cause=cause, by=by, note=note, flag_code=None)
        else:
            self._void(stamp, cause, by, note)
        return action

    def resume(self, by: str, note: str, stamp: Stamp) -> None:
        self._refuse_closed()
        if self.paused is None:
            raise refuse(RefusalCode.ROUND_NOT_PAUSED, table_id=self.table_id, round_no=self.round_no)
        self._emit(Round.Resumed, stamp, by=by, note=note)

    def void(self, cause: str, by: str, note: str, stamp: Stamp) -> None:
        """A supervisor's void: from any state but closed. Before the round was
        opened it leaves a tombstone (a lone Voided event)."""
        self._refuse_closed()
        self._void(stamp, cause, by, note)

    def reverse_settlement(self, by: str, reason: str, then: str, cause: str, stamp: Stamp) -> None:
        if self.phase != "settled":
            raise refuse(RefusalCode.ROUND_NOT_SETTLED, table_id=self.table_id, round_no=self.round_no, phase=self.phase)
        last = self.settlements[-1]
        negated = [{"account": p["account"], "amount_minor": -p["amount_minor"]} for p in last["postings"]]
        self._emit(
            Round.SettlementReversed, stamp, settlement_no=last["settlement_no"], by=by, reason=reason, postings=negated,
        )
        if then == "void":
            self._void(stamp, cause, by, reason)
        else:
            self._settle(stamp)

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
        in_shoe = shoe_seen[text]
        if in_shoe + len(self.cards) < decks:  # even if every card of the round were this one: no count to take
            return
        seen = in_shoe + self.card_texts.count(text)
        if seen >= decks:  # CardCounter words the refusal
            CardCounter(decks, Counter({card: seen})).check(card)

    # ------------------------------------------------------------- decisions

    def _human_error(self, stamp: Stamp, refusal: Refusal) -> None:
        if self.paused is not None:  # already flagged: the wrong card is refused again, nothing more
            return
        action = self._rules().error_policy.action_for(HUMAN_ERROR)
        note = f"{refusal.code}: {refusal.message}"
        if action == "void":
            self._void(stamp, HUMAN_ERROR, LEDGER_ACTOR, note)
        else:  # pause (a "complete" policy for human error makes no sense; pause is the safe reading)
            self._emit(Round.Paused, stamp, cause=HUMAN_ERROR, by=LEDGER_ACTOR, note=note, flag_code=refusal.code)

    def _record_decision(self, stamp: Stamp, hand: str, action: str, source: str, amount: int | None,
                         moves: list[StakeMove]) -> None:
        self._emit(
            Round.DecisionTaken, stamp, hand=hand, action=action, source=source, amount_minor=amount,
            stake_moves=moves_to_dicts(moves), postings=self._move_postings(moves),
        )

    def _record_follow(self, stamp: Stamp, bet_id: str, kind: str, accept: bool, moves: list[StakeMove]) -> None:
        self._emit(
            Round.FollowDecided, stamp, bet_id=bet_id, kind=kind, accept=accept,
            stake_moves=moves_to_dicts(moves), postings=self._move_postings(moves),
        )

    def _move_postings(self, moves: list[StakeMove]) -> list[Posting]:
        postings: list[Posting] = []
        for m in moves:
            add_transfer(postings, player_account(m.player_id), self.account, m.amount_minor)
        return postings

    def _complete_player(self, stamp: Stamp, player_id: str) -> None:
        """Player-side interruption under a `complete` policy (live blackjack): the
        no-action rule plays the hands this player decides that wait for a decision
        now; this player's pending follow offers count as declined. Nobody else's."""
        model = self._game()
        for offer in list(model.pending_follows()):
            if offer.player_id == player_id:
                model.follow(offer.bet_id, offer.kind, False)
                self._record_follow(stamp, offer.bet_id, offer.kind, False, [])
        for hand in list(model.legal_decisions()):
            if hand in model.legal_decisions() and model.deciding_player(hand) == player_id:
                moves = model.decide(hand, "auto", "system")
                self._record_decision(stamp, hand, "auto", "system", None, moves)
        self._settle_if_complete(stamp)

    def _void(self, stamp: Stamp, cause: str, by: str, note: str) -> None:
        refunds: list[dict[str, Any]] = [
            {"bet_id": bet_id, "player_id": player_id, "amount_minor": amount}
            for (bet_id, player_id), amount in self.put_in.items()
            if amount > 0
        ]
        postings: list[Posting] = []
        for r in refunds:
            add_transfer(postings, self.account, player_account(r["player_id"]), r["amount_minor"])
        self._require_emptied(postings, "voided")
        self._emit(Round.Voided, stamp, cause=cause, by=by, note=note, refunds=refunds, postings=postings)

    def _settle_if_complete(self, stamp: Stamp) -> None:
        if self.phase == "dealing" and self.paused is None and self._game().is_complete():
            self._settle(stamp)

    def _settle(self, stamp: Stamp) -> None:
        results = self._game().settle()
        staked = sum(r.staked_minor for r in results)
        if staked != self.balance_minor:
            raise InvariantBroken(f"settlement covers {staked} but the round holds {self.balance_minor}")
        postings = self._settlement_legs(results)
        self._require_emptied(postings, "settled")
        rules = self._rules()
        self._emit(
            Round.Settled, stamp, settlement_no=self.settlement_no + 1, ruleset_id=rules.id,
            ruleset_version=rules.version, results=[r.as_dict() for r in results], postings=postings,
        )

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
