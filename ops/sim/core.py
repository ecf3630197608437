"""Building blocks of the studio simulator: seeded randomness, fault rates,
studio clock, shoes, the per-round command writer and the round's context.

Nothing here reads the wall clock or the global `random` state: every run is
a pure function of its arguments, so a seed replays a failure byte for byte.
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from typing import Any

from domain.cards import ALL_CARDS, Card
from domain.errors import require
from domain.ruleset import RuleSet

# The studio clock starts here for every run (never the wall clock).
EPOCH = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
CURRENCY = "EUR"
FAULT_RATE_MAX = Fraction(1)


def stable_rng(seed: int, *parts: object) -> random.Random:
    """A `random.Random` derived from the run seed and a path (e.g. a table id).
    String seeds are hashed with SHA-512 by `random`, so this is stable across
    processes and Python hash randomisation."""
    return random.Random("/".join([str(seed), *map(str, parts)]))


def as_rate(rate: Fraction | int | str) -> Fraction:
    """A fault rate as an exact fraction: a Fraction (or '1/20') as given, an int as per mille."""
    if isinstance(rate, bool):
        raise TypeError("fault rate must be a Fraction or an int per mille, not a bool")
    if isinstance(rate, int):
        value = Fraction(rate, 1000)
    elif isinstance(rate, str):
        value = Fraction(rate)
    elif isinstance(rate, Fraction):
        value = rate
    else:
        raise TypeError(f"fault rate must be a Fraction or an int per mille, got {rate!r}")
    require(0 <= value <= FAULT_RATE_MAX, f"fault rate must be between 0 and 1, got {value}")
    return value


def chance(rng: random.Random, rate: Fraction) -> bool:
    """True with probability `rate`, exactly (integer draw, no float compare)."""
    if rate <= 0:
        return False
    return rng.randrange(rate.denominator) < rate.numerator


def studio_time(offset_ms: int) -> str:
    return (EPOCH + timedelta(milliseconds=offset_ms)).isoformat(timespec="milliseconds")


def encode(command: dict[str, Any]) -> bytes:
    """One feed line: canonical JSON (sorted keys, compact), newline-terminated."""
    return json.dumps(command, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8") + b"\n"


def player_pool(size: int) -> list[str]:
    return [f"p{n:04d}" for n in range(1, size + 1)]


class Shoe:
    """A shuffled shoe of `decks` decks with a cut card `cut_from_end_cards` before its end."""

    __slots__ = ("shoe_id", "decks", "cards", "pos", "cut_at", "rounds_started")

    def __init__(self, rng: random.Random, shoe_id: str, decks: int, cut_from_end_cards: int) -> None:
        cards = [c for c in ALL_CARDS for _ in range(decks)]
        rng.shuffle(cards)
        self.shoe_id = shoe_id
        self.decks = decks
        self.cards: list[Card] = cards
        self.pos = 0
        self.cut_at = max(0, len(cards) - cut_from_end_cards)
        self.rounds_started = 0

    def draw(self) -> Card:
        require(self.pos < len(self.cards), f"shoe {self.shoe_id} ran out of cards")
        card = self.cards[self.pos]
        self.pos += 1
        return card

    def peek(self) -> Card:
        require(self.pos < len(self.cards), f"shoe {self.shoe_id} ran out of cards")
        return self.cards[self.pos]

    @property
    def cut_card_out(self) -> bool:
        """The cut card has come out: the round being dealt is the shoe's last."""
        return self.pos >= self.cut_at

    @property
    def remaining(self) -> int:
        return len(self.cards) - self.pos


@dataclass
class RoundWriter:
    """Writes the commands of one round with ids `<table>/<round>/<n>` on the table's clock."""

    table_id: str
    round_no: int
    clock_ms: int
    lines: list[tuple[int, bytes]] = field(default_factory=list)
    seq: int = 0
    cards_dealt: int = 0

    def tick(self, ms: int) -> None:
        self.clock_ms += ms

    def emit(self, type_: str, **payload: Any) -> bytes:
        self.seq += 1
        command = {
            "type": type_,
            "command_id": f"{self.table_id}/{self.round_no}/{self.seq}",
            "table_id": self.table_id,
            "round_no": self.round_no,
            "studio_time": studio_time(self.clock_ms),
            **{k: v for k, v in payload.items() if v is not None},
        }
        line = encode(command)
        self.lines.append((self.clock_ms, line))
        return line

    def repeat(self, line: bytes) -> None:
        """Deliver an already-sent line again (the studio retried)."""
        self.lines.append((self.clock_ms, line))

    def deal(self, card: Card, target: str, *, recorded: bool = True) -> bytes:
        """A card at the next sequence number; `recorded=False` for a card the ledger
        will refuse (a dealer error), so the corrected card reuses the number."""
        seq_no = self.cards_dealt + 1
        if recorded:
            self.cards_dealt = seq_no
        return self.emit("deal_card", card=str(card), target=target, seq_no=seq_no)


@dataclass
class RoundCtx:
    """Everything one round's play needs; `ended` once it was voided."""

    rng: random.Random
    writer: RoundWriter
    model: Any
    shoe: Shoe
    rules: RuleSet
    round_no: int
    round_in_shoe: int
    players: list[str]
    fault: str | None
    faults: list[str] = field(default_factory=list)
    disconnected: set[str] = field(default_factory=set)
    ended: bool = False  # voided (or reversed then voided): nothing more is sent for it
    shoe_void: bool = False  # voided while in play: a replace-the-shoe policy retires the shoe
    timeout_used: bool = False
    answered: set[tuple[str, str]] = field(default_factory=set)
