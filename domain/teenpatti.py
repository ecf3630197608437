"""Teen Patti 20-20 `teen-patti/20-20` (seed 003, Bengali): the pure round model.

One 52-card deck, reshuffled after every round (so a repeated card within a
round is `impossible_card`). Hands A and B get three cards each, dealt A1, B1,
A2, B2, A3, B3. `rank_hand()` gives a comparable key, `compare_hands()` says
who wins, `six_card_category()` classifies the best five of all six cards.
Settlement goes through `resolve_bet()`; domain/gamemath.py enumerates the exact game
math with these same functions.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from domain.cards import RANK_NAMES, Card, CardCounter
from domain.errorpolicy import policy
from domain.errors import InvariantBroken, refuse, require
from domain.model import Bet, BetResult
from domain.money import Odds, check_stake_minor, format_minor, returns_text, win
from domain.outcome import HandOutcome, RoundOutcome
from domain.refusals import RefusalCode
from domain.ruleset import RuleSet, limits
from domain.tablebets import NoPlayerChoices, check_table_bet

GAME = "teen-patti"
SPOT = "table"
HANDS = ("A", "B")
CARDS_PER_HAND = 3
BET_TYPES = ("player_a", "player_b", "tie", "pair_plus_a", "pair_plus_b", "six_card_bonus")
# One bet placed on either hand: Pair Plus pays on its hand's own three cards, so A's and B's
# have the same math (`ledger rtp` shows them as one line); keyed by the first, in BET_TYPES order.
EITHER_HAND_BETS = {"pair_plus_a": "pair_plus_b"}
BET_NAMES = {
    "player_a": "Player A", "player_b": "Player B", "tie": "Tie", "pair_plus_a": "Pair Plus A",
    "pair_plus_b": "Pair Plus B", "six_card_bonus": "6 Card Bonus",
}
# Card order A K Q J 10 ... 2 (suits never decide).
RANK_VALUE = {r: v for v, r in enumerate("23456789TJQKA", start=2)}
ACE, KING, QUEEN, TWO, THREE = 14, 13, 12, 2, 3
# Three-card categories, low to high (index = strength).
CATEGORIES = ("high_card", "pair", "colour", "sequence", "pure_sequence", "trail")
CATEGORY_NAMES = {
    "high_card": "High Card", "pair": "Pair", "colour": "Colour", "sequence": "Sequence",
    "pure_sequence": "Pure Sequence", "trail": "Trail",
}
# Sequence strength: A-K-Q top, then A-2-3, then K-Q-J (13) ... 4-3-2 (4).
SEQ_AKQ, SEQ_A23 = 16, 15
# Six-card bonus categories, high to low; anything below three of a kind loses.
SIX_CARD_CATEGORIES = (
    "royal_flush", "straight_flush", "four_of_a_kind", "full_house", "flush", "straight",
    "three_of_a_kind", "two_pair", "pair", "high_card",
)
SIX_CARD_NAMES = {c: c.replace("_", " ").title().replace(" Of ", " of ") for c in SIX_CARD_CATEGORIES}
ROUND_NUMBER_MAX = 10**9  # recorded only (the deck is fresh every round); bounded like everything


@dataclass(frozen=True)
class TeenPattiRules(RuleSet):
    """Paytable and Decisions of Teen Patti 20-20 as named data."""

    # Lines: player (A or B win), tie, pair_plus_<trail_of_aces|trail|pure_sequence|
    # sequence|colour|pair>, six_card_<royal_flush|...|three_of_a_kind>.
    paytable: tuple[tuple[str, Odds], ...]
    # Decision: A-2-3-4-5 is a straight in the 6 Card Bonus (and a straight flush when suited).
    six_card_ace_low_straight: bool
    # Decision: the hand ranking decides first (Pure Sequence beats Sequence, as the seed's
    # ranking list says); a tie is the same category with the same three ranks, suits never
    # break it. The spec's "Tie returns 5.6%" holds only under this reading. True would make
    # K-Q-J suited vs K-Q-J unsuited a tie (a literal reading of the seed's parenthesis).
    tie_when_same_ranks: bool
    bets_per_round_max: int

    def __post_init__(self) -> None:
        require(len(dict(self.paytable)) == len(self.paytable), "duplicate paytable line")
        require(all(t in BET_TYPES for t, _ in self.limits), "limit for an unknown bet type")
        require(self.decks == 1, "Teen Patti 20-20 uses one deck")
        require(self.bets_per_round_max >= 1, "bets_per_round_max must be positive")

    def odds(self, line: str) -> Odds:
        for name, odds in self.paytable:  # every winning bet asks: no dict made, the message only when broken
            if name == line:
                return odds
        raise InvariantBroken(f"no paytable line {line!r} in {self.id} v{self.version}")


def _odds(**lines: str) -> tuple[tuple[str, Odds], ...]:
    return tuple((name, Odds.parse(text)) for name, text in lines.items())


TWENTY_TWENTY_V1 = TeenPattiRules(
    id="teen-patti/20-20",
    version=1,
    game=GAME,
    title="Teen Patti 20-20 (one deck, reshuffled every round)",
    seed="003_3d4750c2dfe649ab.txt",
    decks=1,
    limits=limits(
        player_a=(100, 1_000_000), player_b=(100, 1_000_000), tie=(100, 100_000),
        pair_plus_a=(100, 100_000), pair_plus_b=(100, 100_000), six_card_bonus=(100, 50_000),
    ),
    error_policy=policy(
        "seed 003 'Error handling': the round is paused while the dealer calls the supervisor, "
        "resumed if solved quickly, else cancelled with every bet refunded",
        default="pause",
        player_connection_lost="complete",
    ),
    paytable=_odds(
        player="0.95:1", tie="50:1",
        pair_plus_trail_of_aces="50:1", pair_plus_trail="40:1", pair_plus_pure_sequence="30:1",
        pair_plus_sequence="6:1", pair_plus_colour="3:1", pair_plus_pair="1:1",
        six_card_royal_flush="1000:1", six_card_straight_flush="200:1",
        six_card_four_of_a_kind="100:1", six_card_full_house="20:1", six_card_flush="15:1",
        six_card_straight="10:1", six_card_three_of_a_kind="7:1",
    ),
    six_card_ace_low_straight=True,
    tie_when_same_ranks=False,
    bets_per_round_max=1000,
)

RULE_SETS: tuple[TeenPattiRules, ...] = (TWENTY_TWENTY_V1,)


# ---------------------------------------------------------------- hand ranking


def _values(cards: list[Card] | tuple[Card, ...]) -> list[int]:
    return sorted((RANK_VALUE[c.rank] for c in cards), reverse=True)


def sequence_strength(values: list[int]) -> int | None:
    """Strength of three distinct values as a sequence, or None (K-A-2 is not one)."""
    if values == [ACE, KING, QUEEN]:
        return SEQ_AKQ
    if values == [ACE, THREE, TWO]:
        return SEQ_A23
    if values[0] - values[2] == 2 and len(set(values)) == 3:
        return values[0]
    return None


def rank_hand(cards: list[Card] | tuple[Card, ...]) -> tuple[int, tuple[int, ...]]:
    """Comparable key of a three-card hand: (category index, tie-break values)."""
    if len(cards) != CARDS_PER_HAND:  # the message is built only when broken
        raise InvariantBroken(f"a Teen Patti hand has 3 cards, got {len(cards)}")
    values = _values(cards)
    flush = len({c.suit for c in cards}) == 1
    distinct = len(set(values))  # no Counter: three sorted values hold a pair in the middle
    if distinct == 1:
        return CATEGORIES.index("trail"), (values[0],)
    if distinct == 2:
        pair = values[1]
        return CATEGORIES.index("pair"), (pair, values[2] if values[0] == pair else values[0])
    seq = sequence_strength(values)
    if seq is not None:
        return CATEGORIES.index("pure_sequence" if flush else "sequence"), (seq,)
    return CATEGORIES.index("colour" if flush else "high_card"), tuple(values)


def category_of(cards: list[Card] | tuple[Card, ...]) -> str:
    return CATEGORIES[rank_hand(cards)[0]]


def hand_name(cards: list[Card] | tuple[Card, ...]) -> str:
    """Readable: 'Trail of aces', 'Pure Sequence A-K-Q', 'Pair of nines, kicker K'."""
    cat, key = rank_hand(cards)
    name = CATEGORIES[cat]
    shown = "-".join(_rank_text(v) for v in _display_order(cards, name))
    if name == "trail":
        return f"Trail of {_plural(key[0])}"
    if name == "pair":
        return f"Pair of {_plural(key[0])}, kicker {_rank_text(key[1])}"
    return f"{CATEGORY_NAMES[name]} {shown}"


def _display_order(cards: list[Card] | tuple[Card, ...], name: str) -> list[int]:
    values = _values(cards)
    if name in ("sequence", "pure_sequence") and values == [ACE, THREE, TWO]:
        return [ACE, TWO, THREE]
    return values


def _plural(value: int) -> str:
    word = RANK_NAMES[_rank_char(value)]
    return word + ("es" if word.endswith("x") else "s")


def _rank_char(value: int) -> str:
    return "23456789TJQKA"[value - 2]


def _rank_text(value: int) -> str:
    return "10" if value == 10 else _rank_char(value)


def same_ranks(a: list[Card] | tuple[Card, ...], b: list[Card] | tuple[Card, ...]) -> bool:
    return _values(a) == _values(b)


def compare_hands(a: list[Card] | tuple[Card, ...], b: list[Card] | tuple[Card, ...], rules: TeenPattiRules) -> int:
    """1 if hand A wins, -1 if B wins, 0 for a tie."""
    if rules.tie_when_same_ranks and same_ranks(a, b):
        return 0
    ka, kb = rank_hand(a), rank_hand(b)
    return (ka > kb) - (ka < kb)


def pair_plus_line(cards: list[Card] | tuple[Card, ...]) -> str | None:
    """Pair Plus paytable line for a hand, or None when it is only a high card."""
    cat, key = rank_hand(cards)
    name = CATEGORIES[cat]
    if name == "high_card":
        return None
    if name == "trail" and key[0] == ACE:
        return "pair_plus_trail_of_aces"
    return f"pair_plus_{name}"


# ---------------------------------------------------------------- six card bonus


def _straight_high(values: set[int], ace_low: bool) -> int | None:
    if len(values) != 5:
        return None
    top = max(values)
    if top - min(values) == 4:
        return top
    if ace_low and values == {ACE, 2, 3, 4, 5}:
        return 5
    return None


def five_card_category(cards: tuple[Card, ...], rules: TeenPattiRules) -> str:
    require(len(cards) == 5, "five cards")
    values = [RANK_VALUE[c.rank] for c in cards]
    shape = sorted(Counter(values).values(), reverse=True)
    flush = len({c.suit for c in cards}) == 1
    high = _straight_high(set(values), rules.six_card_ace_low_straight)
    if flush and high == ACE:
        return "royal_flush"
    if flush and high is not None:
        return "straight_flush"
    by_shape: dict[tuple[int, ...], str] = {(4, 1): "four_of_a_kind", (3, 2): "full_house"}
    if tuple(shape) in by_shape:
        return by_shape[tuple(shape)]
    if flush:
        return "flush"
    if high is not None:
        return "straight"
    return {(3, 1, 1): "three_of_a_kind", (2, 2, 1): "two_pair", (2, 1, 1, 1): "pair"}.get(
        tuple(shape), "high_card"
    )


def six_card_category(cards: list[Card] | tuple[Card, ...], rules: TeenPattiRules) -> str:
    """Best five-card poker category among all six cards (both hands)."""
    if len(cards) != 6:  # the message is built only when broken
        raise InvariantBroken(f"the 6 Card Bonus needs 6 cards, got {len(cards)}")
    found = [five_card_category(five, rules) for five in combinations(tuple(cards), 5)]
    return min(found, key=SIX_CARD_CATEGORIES.index)


# ---------------------------------------------------------------- settlement


@dataclass(frozen=True, slots=True)
class Resolution:
    outcome: str  # win | push | lose
    line: str | None
    reason: str


def resolve_bet(rules: TeenPattiRules, bet_type: str, a: tuple[Card, ...], b: tuple[Card, ...]) -> Resolution:
    """How a bet type fares given both finished hands (pure; shared with domain/gamemath.py)."""
    if bet_type not in BET_TYPES:  # the message is built only when broken
        raise InvariantBroken(f"unknown bet type {bet_type!r}")
    if bet_type in ("player_a", "player_b", "tie"):
        return resolve_main(rules, bet_type, compare_hands(a, b, rules))
    if bet_type in ("pair_plus_a", "pair_plus_b"):
        return resolve_pair_plus(bet_type, a if bet_type == "pair_plus_a" else b)
    return resolve_six_card(six_card_category(a + b, rules))


def resolve_main(rules: TeenPattiRules, bet_type: str, result: int) -> Resolution:
    """Player A, Player B or Tie given the comparison (1: A wins, 0: tie, -1: B wins)."""
    if bet_type == "tie":
        return Resolution("win", "tie", "Tie pays") if result == 0 else Resolution("lose", None, "no tie")
    if result == 0:
        return Resolution("push", None, "a tie refunds Player A and Player B")
    mine = 1 if bet_type == "player_a" else -1
    if result == mine:
        return Resolution("win", "player", f"{BET_NAMES[bet_type]} pays")
    return Resolution("lose", None, f"{BET_NAMES[bet_type]} lost")


def resolve_pair_plus(bet_type: str, hand: tuple[Card, ...]) -> Resolution:
    line = pair_plus_line(hand)
    if line is None:
        return Resolution("lose", None, f"{hand_name(hand)} is below a Pair")
    return Resolution("win", line, f"{BET_NAMES[bet_type]}: {hand_name(hand)} pays")


def resolve_six_card(category: str) -> Resolution:
    if SIX_CARD_CATEGORIES.index(category) > SIX_CARD_CATEGORIES.index("three_of_a_kind"):
        return Resolution("lose", None, f"best five cards are only {SIX_CARD_NAMES[category]}")
    return Resolution("win", f"six_card_{category}", f"6 Card Bonus: {SIX_CARD_NAMES[category]} pays")


def describe(a: tuple[Card, ...], b: tuple[Card, ...], rules: TeenPattiRules) -> str:
    result = compare_hands(a, b, rules)
    if result == 0:
        return f"Tie: {hand_name(a)} and {hand_name(b)}"
    win_name, winner, loser = ("A", a, b) if result > 0 else ("B", b, a)
    return f"Player {win_name} wins: {hand_name(winner)} beats {hand_name(loser)}"


def settle_bet(
    rules: TeenPattiRules, bet: Bet, a: tuple[Card, ...], b: tuple[Card, ...],
    memo: dict[str, Any] | None = None,
) -> BetResult:
    """`memo` (one per round) keeps the description and each bet type's resolution,
    so a round with many bets ranks its hands and its six cards once."""
    memo = {} if memo is None else memo
    res = memo.get(bet.bet_type)
    if res is None:
        res = memo[bet.bet_type] = resolve_bet(rules, bet.bet_type, a, b)
    head = memo.get("") or memo.setdefault("", describe(a, b, rules))
    stake, name = bet.stake_minor, BET_NAMES[bet.bet_type]
    if res.outcome == "win":
        odds = rules.odds(res.line or "")
        pay = win(stake, odds)
        text = f"{head}; {res.reason} {odds} {returns_text(stake, pay.returned_minor)}"
        rem = pay.remainder
        return BetResult(bet.bet_id, bet.player_id, bet.bet_type, "win", stake, pay.returned_minor,
                         rem.numerator, rem.denominator, text)
    if res.outcome == "push":
        text = f"{head}; {name} pushes ({res.reason}); {format_minor(stake)} returned"
        return BetResult(bet.bet_id, bet.player_id, bet.bet_type, "push", stake, stake, 0, 1, text)
    text = f"{head}; {name} loses {format_minor(stake)} ({res.reason})"
    return BetResult(bet.bet_id, bet.player_id, bet.bet_type, "lose", stake, 0, 0, 1, text)


# ---------------------------------------------------------------- round model


@dataclass
class TeenPattiRound(NoPlayerChoices):
    """One round. Phases: betting -> dealing -> complete."""

    GAME_TITLE = "Teen Patti 20-20"  # for the no-decision refusals (NoPlayerChoices)

    rules: TeenPattiRules
    round_in_shoe: int
    phase: str = "betting"
    bets: list[Bet] = field(default_factory=list)
    hands: dict[str, list[Card]] = field(default_factory=lambda: {h: [] for h in HANDS})
    counter: CardCounter = field(init=False)  # a fresh deck per round: set in __post_init__

    def __post_init__(self) -> None:
        self.counter = CardCounter(self.rules.decks)

    def place_bet(self, bet: Bet) -> None:
        if not isinstance(bet, Bet):  # the message is built only when broken
            raise InvariantBroken(f"not a Bet: {type(bet).__name__}")
        self._check_bet(bet)
        self.bets.append(bet)

    def _check_bet(self, bet: Bet) -> None:
        rules = self.rules
        check_table_bet(rules, self.phase, self.bets, bet, spot=SPOT, bet_types=BET_TYPES,
                        game_name="Teen Patti", bets_per_round_max=rules.bets_per_round_max)
        check_stake_minor(bet.stake_minor, bet.bet_id)
        limit = rules.limit_for(bet.bet_type)
        if bet.stake_minor < limit.min_minor:  # the bet's name in a message is built only when refusing
            rules.check_stake(bet.bet_type, bet.stake_minor, f"bet {bet.bet_id} ({BET_NAMES[bet.bet_type]})")
        total = bet.stake_minor + sum(
            b.stake_minor for b in self.bets if b.player_id == bet.player_id and b.bet_type == bet.bet_type
        )
        if total > limit.max_minor:
            what = f"bet {bet.bet_id} ({BET_NAMES[bet.bet_type]})"
            raise refuse(
                RefusalCode.STAKE_ABOVE_MAXIMUM, "total", what=what, bet_name=BET_NAMES[bet.bet_type],
                total=format_minor(total), maximum=format_minor(limit.max_minor))

    def close_betting(self) -> None:
        if self.phase != "betting":
            raise refuse(RefusalCode.BETTING_CLOSED, "close")
        self.phase = "dealing"

    def next_card_target(self) -> str | None:
        if self.phase != "dealing":
            return None
        a, b = len(self.hands["A"]), len(self.hands["B"])
        if a == b == CARDS_PER_HAND:
            return None
        return "A" if a == b else "B"

    def deal(self, card: Card, target: str) -> None:
        if not isinstance(card, Card):  # the message is built only when broken
            raise InvariantBroken(f"not a Card: {type(card).__name__}")
        expected = self.next_card_target()
        if expected is None:
            state = "betting is still open" if self.phase == "betting" else "both hands are complete"
            raise refuse(RefusalCode.CARD_NOT_EXPECTED, "table-game", card=card, card_name=card.name, state=state)
        if target != expected:
            raise refuse(
                RefusalCode.WRONG_TARGET, "teen-patti", card=card, card_name=card.name, target=target,
                expected=expected)
        self.counter.take(card)  # impossible_card: the deck holds each card once
        self.hands[expected].append(card)

    def is_complete(self) -> bool:
        return self.phase == "dealing" and self.next_card_target() is None

    def settle(self) -> list[BetResult]:
        if not self.is_complete():
            raise refuse(RefusalCode.ROUND_NOT_COMPLETE, "hands")
        a, b = tuple(self.hands["A"]), tuple(self.hands["B"])
        memo: dict[str, Any] = {}
        return [settle_bet(self.rules, bet, a, b, memo) for bet in self.bets]

    def outcome(self) -> RoundOutcome:
        """Both hands with their rank category, the winner, Pair Plus per hand and the 6 Card Bonus."""
        if not self.is_complete():
            raise refuse(RefusalCode.ROUND_NOT_COMPLETE, "hands-outcome")
        a, b = tuple(self.hands["A"]), tuple(self.hands["B"])
        result = compare_hands(a, b, self.rules)
        winner = "tie" if result == 0 else ("A" if result > 0 else "B")
        hands = tuple(
            HandOutcome(hand=h, cards=tuple(str(c) for c in cards), category=category_of(cards), name=hand_name(cards),
                        result="tie" if winner == "tie" else ("win" if winner == h else "lose"))
            for h, cards in (("A", a), ("B", b))
        )
        six = six_card_category(a + b, self.rules)
        categories = [(f"pair_plus_{h.hand.lower()}", (pair_plus_line(cards) or "none").removeprefix("pair_plus_"))
                      for h, cards in zip(hands, (a, b))]
        categories.append(("six_card_bonus", six))
        return RoundOutcome(game=GAME, hands=hands, summary=describe(a, b, self.rules), winner=winner,
                            categories=tuple(categories), notes=(f"best five of the six cards: {SIX_CARD_NAMES[six]}",))

    def view(self) -> dict[str, Any]:
        done = self.is_complete()
        a, b = tuple(self.hands["A"]), tuple(self.hands["B"])
        return {
            "game": GAME,
            "rule_set": self.rules.id,
            "version": self.rules.version,
            "round_in_shoe": self.round_in_shoe,
            "phase": "complete" if done else self.phase,
            "A": {"cards": [str(c) for c in a], "hand": hand_name(a) if done else None},
            "B": {"cards": [str(c) for c in b], "hand": hand_name(b) if done else None},
            "next_card": self.next_card_target(),
            "bets": [
                {"bet_id": x.bet_id, "player_id": x.player_id, "bet_type": x.bet_type,
                 "stake_minor": x.stake_minor}
                for x in self.bets
            ],
            "result": describe(a, b, self.rules) if done else None,
            "six_card": SIX_CARD_NAMES[six_card_category(a + b, self.rules)] if done else None,
        }


def new_round(rules: TeenPattiRules, *, round_in_shoe: int) -> TeenPattiRound:
    """`round_in_shoe` is recorded only: the deck is fresh every round."""
    require(isinstance(rules, TeenPattiRules), f"not Teen Patti rules: {type(rules).__name__}")
    if type(round_in_shoe) is not int or not 1 <= round_in_shoe <= ROUND_NUMBER_MAX:
        raise refuse(
            RefusalCode.BAD_ROUND_IN_SHOE, "round-number", most=ROUND_NUMBER_MAX, round_in_shoe=round_in_shoe)
    return TeenPattiRound(rules, round_in_shoe)
