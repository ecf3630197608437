"""Replay of the seats that span rounds (live-8d v2): recompute every table's seating
from its rounds' events and compare it with the stored `Table.SeatingChanged` events.

The round replay (projections/replay.py) proves each round's money; this proves the
seats: from the rounds alone (bets, decisions and who made them, how each closed) the
same pure rules the ledger ran (domain/seating.py) must give exactly the seatings the
ledger recorded for the same rounds. Findings:
- `seating_differs`: a stored seating other than the recomputed one;
- `seating_missing`: a round changed the seats but no `Table.SeatingChanged` names it;
- `seating_unexpected`: a `Table.SeatingChanged` for a round that changed nothing.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from domain import registry
from domain.model import Bet
from domain.seating import Seating, after_round, seat_plays, spans_rounds
from ledger.records import BetPlaced, DecisionTaken, Opened, Record, Settled, TableSeatingChanged, Voided
from projections.audit import Finding


@dataclass
class _Round:
    table_id: str
    round_no: int
    ruleset_key: tuple[str, int]
    bets: list[Bet] = field(default_factory=list)
    decisions: list[tuple[str, str]] = field(default_factory=list)
    closed: bool = False


@dataclass
class SeatingReplay:
    tables: int = 0
    changes: int = 0
    findings: list[Finding] = field(default_factory=list)


def replay_seating(records: Iterable[Record]) -> SeatingReplay:
    """Walk the store in position order; see the module doc. A round's closing event and its
    `Table.SeatingChanged` are saved in one transaction, in either order: they are matched
    by round id at the end, not by position."""
    rounds: dict[str, _Round] = {}
    seatings: dict[str, Seating] = {}
    expected: dict[str, tuple[str, Seating]] = {}  # round id -> (table, seating after it)
    stored: dict[str, tuple[int, Seating]] = {}  # round id -> (position, seating recorded)
    for rec in records:
        match rec:
            case Opened():
                rules = registry.get_rule_set(rec.ruleset_id, rec.ruleset_version)
                if spans_rounds(rules):
                    rounds[rec.originator_id] = _Round(rec.table_id, rec.round_no, rules.key)
            case BetPlaced() if rec.originator_id in rounds:
                rounds[rec.originator_id].bets.append(Bet(rec.bet_id, rec.player_id, rec.spot, rec.bet_type,
                                                         rec.stake_minor, rec.mode, rec.seat_no))
            case DecisionTaken() if rec.originator_id in rounds:
                rounds[rec.originator_id].decisions.append((rec.hand, rec.source))
            case Settled() | Voided() if rec.originator_id in rounds and not rounds[rec.originator_id].closed:
                _close(rounds[rec.originator_id], rec.originator_id, isinstance(rec, Voided), seatings, expected)
            case TableSeatingChanged():
                stored[rec.round_id] = (rec.position, Seating.from_dict(rec.seating))
            case _:
                pass
    return _compare(expected, stored, len(seatings))


def _close(r: _Round, round_id: str, voided: bool, seatings: dict[str, Seating],
           expected: dict[str, tuple[str, Seating]]) -> None:
    r.closed = True
    rules = registry.get_rule_set(*r.ruleset_key)
    if not spans_rounds(rules):
        return
    before = seatings.get(r.table_id, Seating())
    after = after_round(rules, before, r.round_no, seat_plays(rules, r.bets, r.decisions), voided=voided)
    seatings[r.table_id] = after
    if after != before:
        expected[round_id] = (r.table_id, after)


def _compare(expected: dict[str, tuple[str, Seating]], stored: dict[str, tuple[int, Seating]],
             tables: int) -> SeatingReplay:
    out = SeatingReplay(tables=tables)
    for round_id, (table, want) in expected.items():
        found = stored.pop(round_id, None)
        if found is None:
            out.findings.append(Finding("seating_missing", None, f"round {round_id} at table {table} changed the "
                                        "seats but no Table.SeatingChanged records it"))
            continue
        out.changes += 1
        if found[1] != want:
            out.findings.append(Finding("seating_differs", found[0], f"table {table} after round {round_id}: "
                                        f"stored {found[1].as_dict()}, replayed {want.as_dict()}"))
    for round_id, (position, _) in stored.items():
        out.findings.append(Finding("seating_unexpected", position, f"Table.SeatingChanged for round {round_id}, "
                                    "which changed no seat when replayed"))
    return out
