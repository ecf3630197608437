"""The Round aggregate: one per (table, round number).

Command methods take plain typed values (never a wire model), check first
(ledger rules here, game rules by the call on the pure domain model), decide,
then record events. An event's `apply` only assigns the recorded facts. The
round's state, its derived game model and its checks are its base's,
`RoundState` (ledger/roundstate.py).

Event names, fields and money flows are the contract in docs/events.md.
"""
from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from typing import Any

from domain.cards import Card
from domain.errorpolicy import is_player_side
from domain.errors import InvariantBroken, Refusal, refuse
from domain.model import Bet, StakeMove
from domain.money import player_account
from domain.operators import DEFAULT_OPERATOR_ID
from domain.refusals import RefusalCode
from domain.ruleset import RuleSet
from domain.tableconfig import TableSettings
from ledger.ids import round_id_for
from ledger.library.aggregate import LedgerEvent, Stamp
from ledger.roundstate import (
    CLOSE,
    BetPlay,
    CardPlay,
    DecisionPlay,
    FollowPlay,
    Posting,
    RoundState,
    add_transfer,
    moves_to_dicts,
    ruleset_hash,
)

HUMAN_ERROR = "human_error"
_new = tuple.__new__  # for the tuples `apply` makes: a NamedTuple's own __new__ is a Python function (~0.1 µs)
LEDGER_ACTOR = "ledger"


class Round(RoundState):
    """Everything that happens in one round, and its money."""

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
        """`player_id` is the player key (domain/operators.py), `operator_id` the bet's operator.
        Version 2 added `operator_id`; a default operator's bet is stored in its version 1 form
        (`STORED_DEFAULTS`, ledger/library/aggregate.py), so old and new stores hold the same bytes."""

        class_version = 2
        STORED_DEFAULTS = {"operator_id": DEFAULT_OPERATOR_ID}
        bet_id: str
        player_id: str
        spot: str
        bet_type: str
        stake_minor: int
        mode: str | None
        seat_no: int | None
        postings: list[Posting]
        operator_id: str

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            state["operator_id"] = DEFAULT_OPERATOR_ID

        def apply(self, r: Round) -> None:
            bet = _new(Bet, (self.bet_id, self.player_id, self.spot, self.bet_type, self.stake_minor, self.mode,
                             self.seat_no))
            r.bets[self.bet_id] = bet
            r.plays.append(_new(BetPlay, (bet,)))
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
            r.plays.append(_new(CardPlay, (self.card, self.target)))

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

    @classmethod
    def new(cls, table_id: str, round_no: int) -> Round:
        return cls(round_id_for(table_id, round_no), datetime.now(UTC))

    def _emit(self, event_class: type[Round.Event], stamp: Stamp, **fields: object) -> None:
        """Record an event; the model stays current when it was current before (it
        moved with the checked call this event records, or it does not move)."""
        current = self._model_at == self.version
        self._record_fields(event_class, stamp, fields)  # this call's own dict: not copied again
        if current:
            self._model_at = self.version

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

    def place_bet(self, bet: Bet, stamp: Stamp, operator_id: str = DEFAULT_OPERATOR_ID) -> None:
        self.refuse_unless_running()
        if bet.bet_id in self.bets:  # hot path: the message is built only when refusing
            raise refuse(RefusalCode.DUPLICATE_BET_ID, bet_id=bet.bet_id, round=self._label())
        self._game().place_bet(bet)
        postings: list[Posting] = []
        add_transfer(postings, player_account(bet.player_id), self.account, bet.stake_minor)
        self._emit(
            Round.BetPlaced, stamp, bet_id=bet.bet_id, player_id=bet.player_id, spot=bet.spot,
            bet_type=bet.bet_type, stake_minor=bet.stake_minor, mode=bet.mode, seat_no=bet.seat_no,
            postings=postings, operator_id=operator_id,
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
