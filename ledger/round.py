"""The Round aggregate: one per (table, round number).

Public command methods check first (ledger rules here, game rules by probing
a copy of the pure domain model), then trigger events. An event's `apply`
drives the real domain model with the recorded facts and assigns plain state,
so a round rebuilt from its events is the same as the live one.

Event names, fields and money flows are the contract in docs/events.md.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from datetime import UTC
from functools import lru_cache
from typing import Any
from uuid import NAMESPACE_URL, UUID, uuid5

from eventsourcing.domain import Aggregate, CanMutateAggregate

from domain import registry
from domain.cards import Card, CardCounter, parse_card
from domain.errors import Refusal, refuse_unless, require
from domain.model import Bet, StakeMove
from domain.money import Leg, check_balanced, house_account, player_account, round_account, transfer

# Fixed forever: round and shoe ids are derived from it (docs/events.md).
NAMESPACE = uuid5(NAMESPACE_URL, "https://casino-ledger/ids")
HUMAN_ERROR = "human_error"
LEDGER_ACTOR = "ledger"


_HASHES: dict[tuple[str, int], str] = {}


def ruleset_hash(rules: Any) -> str:
    """The rule set's content hash, computed once per (id, version) per process."""
    h = _HASHES.get(rules.key)
    if h is None:
        h = _HASHES[rules.key] = rules.content_hash()
    return h


@lru_cache(maxsize=65536)  # uuid5 hashes on every command; ids are pure functions of their names
def round_id_for(table_id: str, round_no: int) -> UUID:
    return uuid5(NAMESPACE, f"round/{table_id}/{round_no}")


@lru_cache(maxsize=65536)
def round_text_for(table_id: str, round_no: int) -> str:
    """The round id as text (what results and logs show), without a UUID str() per command."""
    return str(round_id_for(table_id, round_no))


def legs_to_dicts(legs: list[Leg]) -> list[dict[str, Any]]:
    check_balanced(legs)  # refuse to record unbalanced postings (invariant)
    return [leg.as_dict() for leg in legs if leg.amount_minor != 0]


def moves_to_dicts(moves: list[StakeMove]) -> list[dict[str, Any]]:
    return [
        {"bet_id": m.bet_id, "player_id": m.player_id, "amount_minor": m.amount_minor, "reason": m.reason}
        for m in moves
    ]


def postings_sum_zero(postings: list[dict[str, Any]]) -> None:
    """Second path of the balance invariant: checked again whenever an event is read."""
    total = sum(p["amount_minor"] for p in postings)
    require(total == 0, f"postings do not sum to zero (sum {total}): {postings}")


class Round(Aggregate):
    """Everything that happens in one round, and its money."""

    EVENT_NAME_PREFIX = ""  # how a command's Result names this aggregate's events

    class Event(Aggregate.Event):
        command_id: str
        studio_time: str

        def mutate(self, aggregate: Any) -> Any:
            # Any event may be a round's first (Opened, or a tombstone Voided).
            if aggregate is None:
                aggregate = Round._shell(self.originator_id, self.timestamp)
            return CanMutateAggregate.mutate(self, aggregate)

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
            rules = registry.get_rule_set(self.ruleset_id, self.ruleset_version)
            require(ruleset_hash(rules) == self.ruleset_hash, f"rule set {rules.id} v{rules.version} changed")
            r.model = registry.new_round(rules, round_in_shoe=self.round_in_shoe)
            r.rules = rules
            for name in ("table_id", "round_no", "game", "currency", "shoe_id", "round_in_shoe", "dealer_id"):
                setattr(r, name, getattr(self, name))
            r.phase = "betting"

    class BetPlaced(Event):
        bet_id: str
        player_id: str
        spot: str
        bet_type: str
        stake_minor: int
        mode: str | None
        seat_no: int | None
        postings: list[dict[str, Any]]

        def apply(self, r: Round) -> None:
            bet = Bet(self.bet_id, self.player_id, self.spot, self.bet_type, self.stake_minor, self.mode, self.seat_no)
            if r._drive_model():
                r.model.place_bet(bet)
            r.bets[self.bet_id] = bet
            r._put_in(self.bet_id, self.player_id, self.stake_minor)
            r._post(self.postings)

    class BettingClosed(Event):
        def apply(self, r: Round) -> None:
            if r._drive_model():
                r.model.close_betting()
            r.phase = "dealing"

    class CardDealt(Event):
        card: str
        target: str
        seq_no: int

        def apply(self, r: Round) -> None:
            if r._drive_model():
                r.model.deal(parse_card(self.card), self.target)
            r.cards.append((self.seq_no, self.card, self.target))

    class DecisionTaken(Event):
        hand: str
        action: str
        source: str
        amount_minor: int | None
        stake_moves: list[dict[str, Any]]
        postings: list[dict[str, Any]]

        def apply(self, r: Round) -> None:
            if r._drive_model():
                moves = r.model.decide(self.hand, self.action, self.source, self.amount_minor)
                require(moves_to_dicts(moves) == self.stake_moves, f"{self.action} on {self.hand} replays differently")
            r._take_moves(self.stake_moves, self.postings)

    class FollowDecided(Event):
        bet_id: str
        kind: str
        accept: bool
        stake_moves: list[dict[str, Any]]
        postings: list[dict[str, Any]]

        def apply(self, r: Round) -> None:
            if r._drive_model():
                moves = r.model.follow(self.bet_id, self.kind, self.accept)
                require(moves_to_dicts(moves) == self.stake_moves, f"follow of {self.bet_id} replays differently")
            r._take_moves(self.stake_moves, self.postings)

    class Paused(Event):
        cause: str
        by: str
        note: str
        flag_code: str | None

        def apply(self, r: Round) -> None:
            r.paused = {"cause": self.cause, "by": self.by, "note": self.note, "flag_code": self.flag_code}

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
        postings: list[dict[str, Any]]

        def apply(self, r: Round) -> None:
            r._post(self.postings)
            require(r.balance_minor == 0, f"voided round {r.id} keeps {r.balance_minor} in its account")
            r.paused = None
            r.voided = {"cause": self.cause, "by": self.by, "note": self.note}
            r.phase = "voided"

    class Settled(Event):
        settlement_no: int
        ruleset_id: str
        ruleset_version: int
        results: list[dict[str, Any]]
        postings: list[dict[str, Any]]

        def apply(self, r: Round) -> None:
            r._post(self.postings)
            require(r.balance_minor == 0, f"settled round {r.id} keeps {r.balance_minor} in its account")
            r.settlements.append({"settlement_no": self.settlement_no, "results": self.results, "postings": self.postings})
            r.phase = "settled"

    class SettlementReversed(Event):
        settlement_no: int
        by: str
        reason: str
        postings: list[dict[str, Any]]

        def apply(self, r: Round) -> None:
            r._post(self.postings)
            r.reversed_nos.append(self.settlement_no)
            r.phase = "reversed"

    # ------------------------------------------------------------------ state

    @classmethod
    def _shell(cls, round_id: UUID, timestamp: Any) -> Round:
        r = cls.__new__(cls)
        r.__base_init__(originator_id=round_id, originator_version=0, timestamp=timestamp)
        r._account = _account_of(round_id)  # named once: every posting checks against it
        r._iso = ("", "")  # (command id, its studio time as text): one isoformat per command
        r.model = None
        r.rules = None
        r.table_id = ""
        r.round_no = 0
        r.game = ""
        r.currency = ""
        r.shoe_id = ""
        r.round_in_shoe = 0
        r.dealer_id = ""
        r.phase = "new"  # betting | dealing | settled | reversed | voided
        r.bets: dict[str, Bet] = {}
        r.put_in: dict[tuple[str, str], int] = {}  # (bet_id, player_id) -> every amount put in
        r.cards: list[tuple[int, str, str]] = []
        r.balance_minor = 0
        r.paused: dict[str, Any] | None = None
        r.voided: dict[str, Any] | None = None
        r.settlements: list[dict[str, Any]] = []
        r.reversed_nos: list[int] = []
        r._model_ahead = False
        return r

    @classmethod
    def new(cls, table_id: str, round_no: int) -> Round:
        from datetime import datetime

        return cls._shell(round_id_for(table_id, round_no), datetime.now(UTC))

    def _post(self, postings: list[dict[str, Any]]) -> None:
        postings_sum_zero(postings)
        account = self._account
        self.balance_minor += sum(p["amount_minor"] for p in postings if p["account"] == account)

    def _put_in(self, bet_id: str, player_id: str, amount_minor: int) -> None:
        key = (bet_id, player_id)
        self.put_in[key] = self.put_in.get(key, 0) + amount_minor

    def _take_moves(self, moves: list[dict[str, Any]], postings: list[dict[str, Any]]) -> None:
        for m in moves:
            self._put_in(m["bet_id"], m["player_id"], m["amount_minor"])
        self._post(postings)

    @property
    def account(self) -> str:
        return self._account

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

    def open(self, cmd: Any, *, round_in_shoe: int) -> None:
        self._refuse_if_exists()
        rules = registry.get_rule_set(cmd.ruleset_id, cmd.ruleset_version)
        self._trigger(
            Round.Opened, cmd,
            table_id=cmd.table_id, round_no=cmd.round_no, game=rules.game, ruleset_id=rules.id,
            ruleset_version=rules.version, ruleset_hash=ruleset_hash(rules), currency=cmd.currency,
            shoe_id=cmd.shoe_id, round_in_shoe=round_in_shoe, dealer_id=cmd.dealer_id,
        )

    def place_bet(self, cmd: Any) -> None:
        self._refuse_unless_running()
        if cmd.bet_id in self.bets:  # hot path: the message is built only when refusing
            raise Refusal("duplicate_bet_id", f"bet {cmd.bet_id} is already placed in round {self._label()}")
        bet = Bet(cmd.bet_id, cmd.player_id, cmd.spot, cmd.bet_type, cmd.stake_minor, cmd.mode, cmd.seat_no)
        self._probe(lambda m: m.place_bet(bet))
        legs = list(transfer(player_account(cmd.player_id), self.account, cmd.stake_minor))
        self._trigger(
            Round.BetPlaced, cmd, bet_id=bet.bet_id, player_id=bet.player_id, spot=bet.spot,
            bet_type=bet.bet_type, stake_minor=bet.stake_minor, mode=bet.mode, seat_no=bet.seat_no,
            postings=legs_to_dicts(legs),
        )

    def close_betting(self, cmd: Any) -> None:
        self._refuse_unless_running()
        self._probe(lambda m: m.close_betting())
        self._trigger(Round.BettingClosed, cmd)
        self._settle_if_complete(cmd)

    def deal_card(self, cmd: Any, shoe_seen: Counter[Card]) -> Refusal | None:
        """Record a card. A card the rules forbid is a human error: it is not
        recorded, the round gets the policy's consequence (flagged pause or
        void), and the refusal is returned (not raised) so the caller keeps the
        consequence events. The correct card resumes a flagged round."""
        card = parse_card(cmd.card)
        self._refuse_unless_running(allow_flagged=True)
        expected_seq = len(self.cards) + 1
        if cmd.seq_no != expected_seq:
            raise Refusal(
                "card_out_of_sequence",
                f"card {card} has seq_no {cmd.seq_no}; the next card of round {self._label()} is number {expected_seq}",
            )
        try:
            self._check_card_count(card, shoe_seen)
            self._probe(lambda m: m.deal(card, cmd.target))
        except Refusal as refusal:
            self._human_error(cmd, refusal)
            return refusal
        if self.paused is not None:
            self._trigger(Round.Resumed, cmd, by=LEDGER_ACTOR, note=f"the correct card {card} resumes the round")
        self._trigger(Round.CardDealt, cmd, card=str(card), target=cmd.target, seq_no=cmd.seq_no)
        self._settle_if_complete(cmd)
        return None

    def decide(self, cmd: Any) -> None:
        self._refuse_unless_running()
        moves = self._probe(lambda m: m.decide(cmd.hand, cmd.action, cmd.source, cmd.amount_minor))
        self._record_decision(cmd, cmd.hand, cmd.action, cmd.source, cmd.amount_minor, moves)
        self._settle_if_complete(cmd)

    def follow(self, cmd: Any) -> None:
        self._refuse_unless_running()
        moves = self._probe(lambda m: m.follow(cmd.bet_id, cmd.kind, cmd.accept))
        self._record_follow(cmd, cmd.bet_id, cmd.kind, cmd.accept, moves)
        self._settle_if_complete(cmd)

    def pause(self, cmd: Any) -> str:
        """Apply the rule set's error policy for the cause; returns the action taken."""
        self._refuse_unless_running()
        action = self.rules.error_policy.action_for(cmd.cause)
        if action == "complete":
            self._complete_player(cmd, getattr(cmd, "player_id", None))
        elif action == "pause":
            self._trigger(Round.Paused, cmd, cause=cmd.cause, by=cmd.by, note=cmd.note, flag_code=None)
        else:
            self._void(cmd, cmd.cause, cmd.by, cmd.note)
        return action

    def resume(self, cmd: Any) -> None:
        self._refuse_closed()
        refuse_unless(
            self.paused is not None, "round_not_paused",
            f"round {self.table_id}#{self.round_no} is not paused; nothing to resume",
        )
        self._trigger(Round.Resumed, cmd, by=cmd.by, note=cmd.note)

    def void(self, cmd: Any) -> None:
        """A supervisor's void: from any state but closed. Before the round was
        opened it leaves a tombstone (a lone Voided event)."""
        self._refuse_closed()
        self._void(cmd, cmd.cause, cmd.by, cmd.note)

    def reverse_settlement(self, cmd: Any) -> None:
        refuse_unless(
            self.phase == "settled", "round_not_settled",
            f"round {self.table_id}#{self.round_no} has no settlement to reverse (it is {self.phase})",
        )
        last = self.settlements[-1]
        negated = [{"account": p["account"], "amount_minor": -p["amount_minor"]} for p in last["postings"]]
        self._trigger(
            Round.SettlementReversed, cmd, settlement_no=last["settlement_no"], by=cmd.by,
            reason=cmd.reason, postings=negated,
        )
        if cmd.then == "void":
            self._void(cmd, cmd.cause, cmd.by, cmd.reason)
        else:
            self._settle(cmd)

    # ------------------------------------------------------------- helpers

    def _trigger(self, event_class: type, cmd: Any, **fields: Any) -> None:
        """`trigger_event` without its generic keyword copying (a sixth of ingest went to
        it): the event is built as the next in sequence, mutates this round through
        the library's checked `mutate` (id and version), and is kept as pending."""
        if self._iso[0] != cmd.command_id:
            self._iso = (cmd.command_id, cmd.studio_time.isoformat())
        event = event_class(
            originator_id=self.id, originator_version=self.version + 1, timestamp=event_class.create_timestamp(),
            command_id=cmd.command_id, studio_time=self._iso[1], **fields,
        )
        event.mutate(self)
        self._pending_events.append(event)

    def _probe(self, call: Callable[[Any], Any]) -> Any:
        """Check a fact with the game's rules by making the call on the live model.

        The model contract (domain/model.py) guarantees a Refusal leaves the model
        exactly as it was, so a refused call changes nothing. A call that passes has
        already moved the model: the event triggered next must not repeat it, so a
        one-shot flag tells the next model-driving `apply` to skip the call (on replay
        the flag is never set and every apply drives the model). This avoids copying
        the model for every command (the deepcopy probe cost half the ingest time)."""
        require(not self._model_ahead, "a checked model call was not recorded")
        out = call(self.model)
        self._model_ahead = True
        return out

    def _drive_model(self) -> bool:
        """For an event's apply: True when it must make its model call (replay), False
        when the command method already made it on the live model."""
        if getattr(self, "_model_ahead", False):
            self._model_ahead = False
            return False
        return True

    def _refuse_if_exists(self) -> None:
        if self.voided is not None:
            raise Refusal("round_voided", f"round {self._label()} was voided before it opened")
        if self.version != 0:
            raise Refusal("round_exists", f"round {self._label()} is already open")

    def _label(self) -> str:
        return f"{self.table_id}#{self.round_no}" if self.table_id else str(self.id)

    def _refuse_closed(self) -> None:
        # Checked on every command: the messages are built only when refusing.
        if self.phase == "voided":
            raise Refusal("round_voided", f"round {self._label()} is voided")
        if self.phase in ("settled", "reversed"):
            raise Refusal("round_settled", f"round {self._label()} is settled; correct it with reverse_settlement")

    def _refuse_unless_running(self, allow_flagged: bool = False) -> None:
        self._refuse_closed()
        if self.version <= 0:
            raise Refusal("round_not_open", f"round {self._label()} has not been opened")
        if self.paused is not None:
            flagged = self.paused["flag_code"] is not None
            refuse_unless(
                allow_flagged and flagged, "round_paused",
                f"round {self._label()} is paused ({self.paused['cause']}); resume or void it first",
            )

    def _check_card_count(self, card: Card, shoe_seen: Counter[Card]) -> None:
        # Only this card's count matters: shoe so far + this round's copies of it.
        text = str(card)
        seen = shoe_seen[card] + sum(1 for _, c, _ in self.cards if c == text)
        if seen >= self.rules.decks:  # CardCounter words the refusal
            CardCounter(self.rules.decks, Counter({card: seen})).check(card)

    def _human_error(self, cmd: Any, refusal: Refusal) -> None:
        if self.paused is not None:  # already flagged: the wrong card is refused again, nothing more
            return
        action = self.rules.error_policy.action_for(HUMAN_ERROR)
        note = f"{refusal.code}: {refusal.message}"
        if action == "void":
            self._void(cmd, HUMAN_ERROR, LEDGER_ACTOR, note)
        else:  # pause (a "complete" policy for human error makes no sense; pause is the safe reading)
            self._trigger(Round.Paused, cmd, cause=HUMAN_ERROR, by=LEDGER_ACTOR, note=note, flag_code=refusal.code)

    def _record_decision(self, cmd: Any, hand: str, action: str, source: str, amount: int | None, moves: list) -> None:
        self._trigger(
            Round.DecisionTaken, cmd, hand=hand, action=action, source=source, amount_minor=amount,
            stake_moves=moves_to_dicts(moves), postings=self._move_postings(moves),
        )

    def _record_follow(self, cmd: Any, bet_id: str, kind: str, accept: bool, moves: list) -> None:
        self._trigger(
            Round.FollowDecided, cmd, bet_id=bet_id, kind=kind, accept=accept,
            stake_moves=moves_to_dicts(moves), postings=self._move_postings(moves),
        )

    def _move_postings(self, moves: list[StakeMove]) -> list[dict[str, Any]]:
        legs: list[Leg] = []
        for m in moves:
            legs.extend(transfer(player_account(m.player_id), self.account, m.amount_minor))
        return legs_to_dicts(legs)

    def _player_hands(self, player_id: str | None) -> Callable[[str], bool]:
        if player_id is None:
            return lambda hand: True
        spots = {b.spot for b in self.bets.values() if b.player_id == player_id}
        return lambda hand: any(hand == s or hand.startswith(s + ".") for s in spots)

    def _complete_player(self, cmd: Any, player_id: str | None) -> None:
        """Live blackjack player-side interruption: the no-action rule plays the
        player's waiting hands; pending follow offers count as declined."""
        owns = self._player_hands(player_id)
        for offer in list(self.model.pending_follows()):
            if player_id is None or offer.player_id == player_id or owns(_spot_of(self.bets, offer.bet_id)):
                self._probe(lambda m, o=offer: m.follow(o.bet_id, o.kind, False))
                self._record_follow(cmd, offer.bet_id, offer.kind, False, [])
        for hand in list(self.model.legal_decisions()):
            if owns(hand) and hand in self.model.legal_decisions():
                moves = self._probe(lambda m, h=hand: m.decide(h, "auto", "system"))
                self._record_decision(cmd, hand, "auto", "system", None, moves)
        self._settle_if_complete(cmd)

    def _void(self, cmd: Any, cause: str, by: str, note: str) -> None:
        refunds = [
            {"bet_id": bet_id, "player_id": player_id, "amount_minor": amount}
            for (bet_id, player_id), amount in self.put_in.items()
            if amount > 0
        ]
        legs: list[Leg] = []
        for r in refunds:
            legs.extend(transfer(self.account, player_account(r["player_id"]), r["amount_minor"]))
        self._trigger(Round.Voided, cmd, cause=cause, by=by, note=note, refunds=refunds, postings=legs_to_dicts(legs))

    def _settle_if_complete(self, cmd: Any) -> None:
        if self.phase == "dealing" and self.paused is None and self.model.is_complete():
            self._settle(cmd)

    def _settle(self, cmd: Any) -> None:
        results = self.model.settle()
        staked = sum(r.staked_minor for r in results)
        require(staked == self.balance_minor, f"settlement covers {staked} but the round holds {self.balance_minor}")
        house = house_account(self.table_id)
        legs: list[Leg] = []
        for r in results:
            legs.extend(transfer(self.account, player_account(r.player_id), r.returned_minor))
            kept = r.staked_minor - r.returned_minor
            legs.extend(transfer(self.account, house, kept) if kept >= 0 else transfer(house, self.account, -kept))
        self._trigger(
            Round.Settled, cmd, settlement_no=self.settlement_no + 1, ruleset_id=self.rules.id,
            ruleset_version=self.rules.version, results=[r.as_dict() for r in results], postings=legs_to_dicts(legs),
        )

    def closing_cards(self) -> list[str]:
        return [c for _, c, _ in self.cards]


@lru_cache(maxsize=65536)
def _account_of(round_id: UUID) -> str:
    return round_account(str(round_id))


def _spot_of(bets: dict[str, Bet], bet_id: str) -> str:
    bet = bets.get(bet_id.split(":")[0])
    return bet.spot if bet else ""
