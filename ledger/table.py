"""The Table aggregate: what spans the rounds of one table (here: its seats).

MINIMAL, seating only (issue 11 item 3): the `tables` branch builds the full
Table aggregate (configuration versions, `configure_table`); this one is to be
merged into it. One aggregate per table id, touched only by rounds whose rule
set keeps seats across rounds (`seats_span_rounds`, `blackjack/live-8d` v2), so
the stored events of every other table stay exactly what they were.

- Before a round takes a bet, the ledger asks `check_bet` (domain/seating.py).
- When a round closes (settled or voided) for the first time, `round_closed`
  records `Table.SeatingChanged` with the whole seating after that round (a
  handful of seats: a snapshot is simpler to audit than a diff).
"""
from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache
from typing import Any
from uuid import UUID, uuid5

from domain.blackjack_rules import BlackjackRules
from domain.model import Bet
from domain.seating import Seating, after_round, check_bet, seat_plays
from ledger.aggregate import LedgerAggregate, LedgerEvent, Stamp
from ledger.round import NAMESPACE, DecisionPlay, Round


@lru_cache(maxsize=4096)
def table_id_for(table_id: str) -> UUID:
    return uuid5(NAMESPACE, f"table/{table_id}")


class Table(LedgerAggregate):
    EVENT_NAME_PREFIX = "Table."

    class Event(LedgerEvent["Table"]):
        def new_aggregate(self) -> Table:
            return Table(self.originator_id, self.timestamp)

    class SeatingChanged(Event):
        table_id: str
        round_id: str
        round_no: int
        voided: bool
        seating: dict[str, Any]  # domain.seating.Seating.as_dict(): held, lost, last_round_no

        def apply(self, t: Table) -> None:
            t.table_id = self.table_id
            t.seating = Seating.from_dict(self.seating)

    def __init__(self, table_uuid: UUID, created_on: datetime) -> None:
        super().__init__(table_uuid, created_on)
        self.table_id = ""
        self.seating = Seating()

    @classmethod
    def new(cls, table_id: str) -> Table:
        return cls(table_id_for(table_id), datetime.now(UTC))

    def check_bet(self, rules: BlackjackRules, bet: Bet, round_no: int) -> None:
        check_bet(rules, self.seating, bet, round_no)

    def round_closed(self, stamp: Stamp, rules: BlackjackRules, r: Round) -> None:
        """Move the seats after round `r` closed; nothing when it changes nothing."""
        decisions = [(p.hand, p.source) for p in r.plays if isinstance(p, DecisionPlay)]
        plays = seat_plays(rules, r.bets.values(), decisions)
        after = after_round(rules, self.seating, r.round_no, plays, voided=r.phase == "voided")
        if after == self.seating:
            return
        self._record_event(
            Table.SeatingChanged, stamp, table_id=r.table_id, round_id=str(r.id), round_no=r.round_no,
            voided=r.phase == "voided", seating=after.as_dict(),
        )
