"""The Shoe aggregate: what spans the rounds dealt from one shoe at one table.

- rounds dealt from it (`round_in_shoe`: baccarat side bets stop after round 50/60);
- the cards of every closed round, so an impossible card is caught across
  rounds (a ninth ace of spades in 8 decks);
- retirement: after a void under a policy that replaces the shoe (live
  blackjack), the shoe is retired and further rounds on it are refused.

A game reshuffled every round (Teen Patti) counts cards within the round only.
"""
from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from functools import lru_cache
from uuid import UUID, uuid5

from domain.errors import refuse
from domain.refusals import RefusalCode
from domain.ruleset import RuleSet
from ledger.ids import ID_MEMO_MAX, NAMESPACE
from ledger.library.aggregate import LedgerAggregate, LedgerEvent, Stamp

ROUNDS_PER_SHOE_MAX = 10_000  # a limit on everything: no real shoe deals this many rounds
NO_CARDS: Counter[str] = Counter()  # what a round of a game reshuffled every round sees of its shoe (never changed)


@lru_cache(maxsize=ID_MEMO_MAX)  # uuid5 hashes on every command; ids are pure functions of their names
def shoe_id_for(table_id: str, shoe_id: str) -> UUID:
    return uuid5(NAMESPACE, f"shoe/{table_id}/{shoe_id}")


def reshuffled_every_round(rules: RuleSet) -> bool:
    """Teen Patti 20-20: one deck shuffled after every round (seed 003)."""
    return bool(getattr(rules, "reshuffle_every_round", rules.game == "teen-patti"))


class Shoe(LedgerAggregate):
    EVENT_NAME_PREFIX = "Shoe."  # how a command's Result names this aggregate's events

    class Event(LedgerEvent["Shoe"]):
        def new_aggregate(self) -> Shoe:
            return Shoe(self.originator_id, self.timestamp)

    class Started(Event):
        table_id: str
        shoe_id: str
        game: str
        decks: int

        def apply(self, s: Shoe) -> None:
            s.table_id, s.shoe_id, s.game, s.decks = self.table_id, self.shoe_id, self.game, self.decks

    class RoundStarted(Event):
        round_id: str
        round_no: int
        round_in_shoe: int

        def apply(self, s: Shoe) -> None:
            s.rounds_dealt = self.round_in_shoe
            s.round_nos[self.round_id] = self.round_no

    class CardsRecorded(Event):
        round_id: str
        cards: list[str]

        def apply(self, s: Shoe) -> None:
            s.seen.update(self.cards)

    class Retired(Event):
        round_id: str
        cause: str

        def apply(self, s: Shoe) -> None:
            s.retired = {"round_id": self.round_id, "cause": self.cause}

    def __init__(self, shoe_uuid: UUID, created_on: datetime) -> None:
        super().__init__(shoe_uuid, created_on)
        self.table_id = ""
        self.shoe_id = ""
        self.game = ""
        self.decks = 0
        self.rounds_dealt = 0
        self.seen: Counter[str] = Counter()  # card text (as recorded) -> copies dealt in closed rounds
        self.retired: dict[str, str] | None = None
        # round id -> its number, to name a round as people do (TABLE#NO) in a refusal
        self.round_nos: dict[str, int] = {}

    @classmethod
    def new(cls, table_id: str, shoe_id: str) -> Shoe:
        return cls(shoe_id_for(table_id, shoe_id), datetime.now(UTC))

    def start_round(self, stamp: Stamp, rules: RuleSet, *, table_id: str, shoe_id: str, round_no: int,
                    round_id: UUID) -> int:
        """Count a new round on this shoe; refuse a retired shoe. Returns round_in_shoe."""
        # Messages are built only when refusing (this runs for every round opened).
        if self.retired is not None:
            raise refuse(
                RefusalCode.SHOE_RETIRED, shoe_id=shoe_id, table_id=table_id,
                round=self._round_name(self.retired['round_id']), cause=self.retired['cause'])
        if self.version != 0 and self.game != rules.game:
            raise refuse(
                RefusalCode.SHOE_GAME_MISMATCH, shoe_id=shoe_id, shoe_game=self.game, round_no=round_no,
                game=rules.game)
        if self.rounds_dealt >= ROUNDS_PER_SHOE_MAX:
            raise refuse(
                RefusalCode.SHOE_EXHAUSTED, shoe_id=shoe_id, rounds=self.rounds_dealt, rounds_max=ROUNDS_PER_SHOE_MAX)
        if self.version == 0:
            self._record_event(Shoe.Started, stamp, table_id=table_id, shoe_id=shoe_id, game=rules.game, decks=rules.decks)
        self._record_event(
            Shoe.RoundStarted, stamp, round_id=str(round_id), round_no=round_no, round_in_shoe=self.rounds_dealt + 1
        )
        return self.rounds_dealt

    def seen_for(self, rules: RuleSet) -> Counter[str]:
        return NO_CARDS if reshuffled_every_round(rules) else self.seen

    def record_round(self, stamp: Stamp, rules: RuleSet, round_id: UUID, cards: list[str]) -> None:
        if cards and not reshuffled_every_round(rules):
            self._record_event(Shoe.CardsRecorded, stamp, round_id=str(round_id), cards=cards)

    def _round_name(self, round_id: str) -> str:
        """TABLE#NO of a round dealt from this shoe (its id if it was not)."""
        number = self.round_nos.get(round_id)
        return round_id if number is None else f"{self.table_id}#{number}"

    def retire(self, stamp: Stamp, round_id: UUID, cause: str) -> None:
        if self.retired is None:
            self._record_event(Shoe.Retired, stamp, round_id=str(round_id), cause=cause)
