"""Blackjack game math: the return to a player with optimal strategy, per rule set.

What is computed (per initial unit stake; RTP = 1 + expected gain):

- `infinite`: exact for an infinite deck. Every card is A..K with probability 1/13;
  the dealer's final-total distribution and the player's best action in every
  state come from one memoized recursion. Floats: exact math, double rounding
  only (about 1e-12).
- `shoe`: the rule set's shoe (6 or 8 decks), composition-dependent on the
  first three cards. Each initial deal (player's two cards, dealer's up card) is
  weighted by its exact probability from the full shoe; the dealer's final
  totals are exact for the shoe minus those three cards (drawing without
  replacement); the player's further cards are drawn from that same depleted
  shoe, i.e. the cards the player draws later are not removed again. The
  error this leaves is measured against the full composition-dependent
  computation (`shoe(rules, cd=True)`, about 2 minutes: it removes every card
  the player draws from the player's and the dealer's later draws), stored in
  SHOE_CD_PRECOMPUTED and recomputed by a slow test; see ERROR_BOUND.
- side bets (Pair, insurance): exact fractions, every card pair settled by the
  engine's `settle`.

Full account, figures and the comparison with the seeds: docs/blackjack-math.md.

Rules come from the project's engine, never from constants here: hand totals
are `domain.blackjack_rules.hand_total`, the dealer stands by
`DEALER_STANDS_ON` / `rules.dealer_stands_soft_17`, the legal actions of a
two-card hand are `can_double` / `can_split` / `can_surrender` /
`auto_floor` of domain/blackjack_round.py on a real `Hand`, and payouts are
the rule set's `Odds`. Dealer rules: no hole card, so the dealer's blackjack
shows only after the player has played; with `dealer_bj_takes="all"` it takes
every stake on the hand (doubles and splits included), with "original_only"
only the original stake. Optimal play includes insurance and even money
where the rule set offers them (both are declined: never worth it here).

Splits: a split hand's second card may pair it again; the value of k pending
one-card hands with n hands on the spot is a small recursion (resplit taken
when it pays), so `hands_per_box_max` and `resplit_aces` are exact; more than
SPLIT_HANDS_CAP hands are not followed (the chance of 16 hands is below
0.31**14 < 1e-7).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from functools import cache

from domain import gamemath
from domain.blackjack_round import auto_floor, can_double, can_split, can_surrender
from domain.blackjack_rules import (
    BLACKJACK_TOTAL,
    DEALER_BJ_TAKES,
    DEALER_STANDS_ON,
    DOUBLE_ON,
    RULE_SETS,
    SURRENDER,
    BlackjackRules,
    hand_total,
)
from domain.blackjack_settle import settle
from domain.blackjack_state import Hand, Stake, State
from domain.cards import RANKS, Card, CardCounter
from domain.model import Bet, BetResult
from domain.money import Odds

VALUES = tuple(range(1, 11))  # ace as 1 .. ten-value cards as 10
SPLIT_HANDS_CAP = 16
ERROR_BOUND = 0.005  # percentage points: |shoe - shoe_cd| measured 0.0023-0.0028 (tests/unit/ops/test_rtp_blackjack.py)
BUST = 22
DEALER_BJ = 23  # dealer outcome key: blackjack (two cards, 21)
CARD: dict[str, Card] = {r: Card(r, "S") for r in RANKS}
VALUE_OF: dict[str, int] = {r: hand_total([CARD[r]])[0] % 10 or 10 for r in RANKS}  # A->1 (11 % 10), T..K->10
Probs = tuple[float, ...]  # draw probability by value 1..10 (index value - 1)
Dealer = dict[int, float]  # 17..21, BUST, DEALER_BJ -> probability


# ----------------------------------------------------------------- engine views
@cache
def total(hard: int, ace: bool) -> tuple[int, bool]:
    """(best total, soft) of a hand with hard sum `hard` (aces as 1), from the engine."""
    cards = [CARD["A"]] if ace else []
    rest = hard - (1 if ace else 0)
    while rest > 0:  # cards 2..T only, never leaving a remainder of 1
        take = min(10, rest) if rest - min(10, rest) != 1 else min(10, rest) - 1
        cards.append(CARD[_rank(take)])
        rest -= take
    return hand_total(cards)


def _rank(value: int) -> str:
    return "A" if value == 1 else "T" if value == 10 else str(value)


@dataclass(frozen=True)
class Options:
    """What the engine lets a two-card hand do."""

    hit: bool
    double: bool
    split: bool
    surrender: bool
    stand_from: int  # stand is legal from this total on (auto-deal / no floor = 0)


def options(rules: BlackjackRules, ranks: tuple[str, str], up: str, from_split: bool, hands: int) -> Options:
    """Legal actions of the hand `ranks` against `up`, with `hands` hands on the spot, via the engine."""
    spot = f"{rules.spot_kind}:1"
    stake = rules.limit_for("main").min_minor
    bet = Bet("math", "player", spot, "main", stake)
    aces = from_split and ranks[0] == "A"
    hand = Hand(name=spot, spot=spot, cards=[CARD[r] for r in ranks], stakes=[Stake("math", "player", stake, "main")],
                from_split=from_split, split_aces=aces)
    others = [Hand(name=f"{spot}.{i}", spot=spot) for i in range(hands - 1)]
    s = State(seen=CardCounter(rules.decks), phase="play", bets=[bet], spots=[spot], holders={spot: "math"},
              hands=[hand, *others], dealer=[CARD[up]])
    return Options(hit=not (aces and rules.split_aces_one_card), double=can_double(rules, hand),
                   split=can_split(rules, s, hand), surrender=can_surrender(rules, s, hand),
                   stand_from=auto_floor(rules, hand))


# ----------------------------------------------------------------- dealer
DealerPath = tuple[tuple[int, ...], int, int]  # (cards drawn by value, orderings, outcome)


@cache
def dealer_paths(stands_soft_17: bool, up: int) -> tuple[DealerPath, ...]:
    """Every way the dealer's hand can end from `up`: the multiset of cards drawn after
    the up card, how many orders of drawing it are legal (no earlier stop), and the
    outcome. The dealer rule depends on the rule set only through `stands_soft_17`."""
    rules_view = _DealerRule(stands_soft_17)
    frontier: dict[tuple[int, ...], int] = {(0,) * 10: 1}
    ends: list[DealerPath] = []
    while frontier:
        nxt: dict[tuple[int, ...], int] = {}
        for drawn, ways in frontier.items():
            hard = up + sum(v * k for v, k in zip(VALUES, drawn, strict=True))
            ace = up == 1 or drawn[0] > 0
            n, t = 1 + sum(drawn), total(hard, ace)[0]
            outcome = (DEALER_BJ if n == 2 and t == BLACKJACK_TOTAL else BUST if t > BLACKJACK_TOTAL
                       else t if n >= 2 and rules_view.stands(hard, ace) else 0)
            if outcome:
                ends.append((drawn, ways, outcome))
                continue
            for v in VALUES:
                more = list(drawn)
                more[v - 1] += 1
                key = tuple(more)
                nxt[key] = nxt.get(key, 0) + ways
        frontier = nxt
    return tuple(ends)


@dataclass(frozen=True)
class _DealerRule:
    stands_soft_17: bool

    def stands(self, hard: int, ace: bool) -> bool:
        t, soft = total(hard, ace)
        return t > DEALER_STANDS_ON or (t == DEALER_STANDS_ON and (not soft or self.stands_soft_17))


def dealer_fixed(rules: BlackjackRules, up: int, probs: Probs) -> Dealer:
    """Dealer's final totals from `up`, every card drawn with the fixed `probs` (infinite deck)."""
    out: Dealer = {}
    for drawn, ways, outcome in dealer_paths(rules.dealer_stands_soft_17, up):
        p = float(ways)
        for q, k in zip(probs, drawn, strict=True):
            p *= q ** k
        out[outcome] = out.get(outcome, 0.0) + p
    return out


@cache
def _sparse_paths(stands_soft_17: bool, up: int) -> tuple[tuple[tuple[tuple[int, int], ...], int, int, int], ...]:
    """dealer_paths as ((value index, count) for drawn values, orderings, cards drawn, outcome)."""
    return tuple((tuple((i, k) for i, k in enumerate(drawn) if k), ways, sum(drawn), outcome)
                 for drawn, ways, outcome in dealer_paths(stands_soft_17, up))


@cache
def dealer_shoe(stands_soft_17: bool, up: int, counts: tuple[int, ...]) -> Dealer:
    """Dealer's final totals from `up`, drawing without replacement from `counts` (by value)."""
    deepest = max(n for _, _, n, _ in _sparse_paths(stands_soft_17, up))
    falling = [[1.0] * (deepest + 1) for _ in counts]  # falling[i][k] = c (c-1) ... (c-k+1)
    for i, c in enumerate(counts):
        for k in range(1, deepest + 1):
            falling[i][k] = falling[i][k - 1] * (c - k + 1)
    left = sum(counts)
    inverse = [1.0] * (deepest + 1)  # 1 / (left (left-1) ... (left-n+1))
    for n in range(1, deepest + 1):
        inverse[n] = inverse[n - 1] / (left - n + 1)
    out: Dealer = {}
    for drawn, ways, n, outcome in _sparse_paths(stands_soft_17, up):
        p = ways * inverse[n]
        for i, k in drawn:
            p *= falling[i][k]
        if p > 0:
            out[outcome] = out.get(outcome, 0.0) + p
    return out


# ----------------------------------------------------------------- player
@dataclass
class Situation:
    """One dealer up card and one draw distribution: the player's values, memoized.

    Every value is per unit of the hand's first stake. `main` says whether the hand
    carries the original stake: with `dealer_bj_takes="original_only"` a dealer
    blackjack takes only that one (a bust still loses every stake on the hand)."""

    rules: BlackjackRules
    up: str
    probs: Probs
    dealer: Dealer
    legal: dict[tuple[tuple[str, str], str, bool, int], Options]  # shared memo of `options`
    shoe_left: tuple[int, ...] | None = None  # `shoe_cd` only: cards left by value; each draw removes its card
    family: dict[tuple[str, tuple[int, ...]], Situation] | None = None  # `shoe_cd`: situations by cards left

    def after(self, v: int) -> Situation:
        """Where the hand continues after drawing a card of value `v`: the same
        situation, or (`shoe_cd`) the one for the shoe without that card."""
        if self.shoe_left is None or self.family is None:
            return self
        left = list(self.shoe_left)
        left[v - 1] -= 1
        key = (self.up, tuple(left))
        if key not in self.family:
            dealer = dealer_shoe(self.rules.dealer_stands_soft_17, VALUE_OF[self.up], key[1])
            self.family[key] = Situation(self.rules, self.up, _probs(key[1]), dealer, self.legal, key[1], self.family)
        return self.family[key]

    def options(self, ranks: tuple[str, str], from_split: bool, hands: int) -> Options:
        key = (ranks, self.up, from_split, hands)
        if key not in self.legal:
            self.legal[key] = options(self.rules, ranks, self.up, from_split, hands)
        return self.legal[key]

    def __post_init__(self) -> None:
        self.bj = self.dealer.get(DEALER_BJ, 0.0)
        self.win = float(self.rules.odds_win.ratio)
        self._stand = {t: self._stand_no_bj(t) for t in range(4, BLACKJACK_TOTAL + 1)}
        self._after: dict[tuple[int, bool, int, bool], float] = {}

    def _stand_no_bj(self, t: int) -> float:
        """Per unit on a standing total `t`, dealer blackjack counted as 0."""
        ev = 0.0
        for d, q in self.dealer.items():
            if d == BUST or (d != DEALER_BJ and t > d):
                ev += q * self.win
            elif d != DEALER_BJ and t < d:
                ev -= q
        return ev

    def stand(self, t: int, stake: int, main: bool) -> float:
        """A finished non-blackjack hand of total `t` carrying `stake` units."""
        if t > BLACKJACK_TOTAL:
            return -float(stake)
        taken = stake if self.rules.dealer_bj_takes == "all" else int(main)
        return stake * self._stand[t] - taken * self.bj

    def draw(self, value: Callable[[Situation, int, bool], float], hard: int, ace: bool) -> float:
        """Expected `value(situation after the card, hard, ace)` after one more card."""
        return sum(p * value(self.after(v), hard + v, ace or v == 1)
                   for v, p in zip(VALUES, self.probs, strict=True) if p)

    def after_card(self, hard: int, ace: bool, floor: int, main: bool) -> float:
        """Best of hit / stand for a hand that may only hit or stand (stand from `floor`)."""
        key = (hard, ace, floor, main)
        if key not in self._after:
            t = total(hard, ace)[0]
            if t >= BLACKJACK_TOTAL:
                self._after[key] = self.stand(t, 1, main)
            else:
                hit = self.draw(lambda sit, h, a: sit.after_card(h, a, floor, main), hard, ace)
                self._after[key] = hit if t < floor else max(hit, self.stand(t, 1, main))
        return self._after[key]

    def hand(self, ranks: tuple[str, str], from_split: bool, hands: int, main: bool) -> float:
        """Best value of a two-card hand that is not split (again)."""
        o = self.options(ranks, from_split, hands)
        hard, ace = VALUE_OF[ranks[0]] + VALUE_OF[ranks[1]], "A" in ranks
        t = total(hard, ace)[0]
        best = self.stand(t, 1, main) if t >= o.stand_from else -9.0
        if o.hit and t < BLACKJACK_TOTAL:
            best = max(best, self.draw(lambda sit, h, a: sit.after_card(h, a, o.stand_from, main), hard, ace))
        if o.double and t < BLACKJACK_TOTAL:  # a 21 (split ace + ten) stands by itself in the engine
            best = max(best, self.draw(lambda sit, h, a: sit.stand(total(h, a)[0], 2, main), hard, ace))
        return best

    def split(self, rank: str) -> float:
        """Value of splitting a pair of `rank`: every hand, resplits taken when they pay.

        Play order as the engine's: the first hand (it keeps the original stake) is
        finished, resplits included, before the next hand gets its second card."""
        x = VALUE_OF[rank]
        cap = min(self.rules.hands_per_box_max, SPLIT_HANDS_CAP)
        same = 1.0 if x != 10 or self.rules.split_ten_values_any else 0.25  # 10-value: same rank only
        pair_p = self.probs[x - 1] * same

        def second_card(main: bool) -> tuple[float, float]:
            """(value summed over the non-pairing second cards, value if it pairs and is kept)."""
            kept = self.hand((rank, rank), True, cap, main)
            rest = sum(p * self.hand((rank, _rank(v)), True, cap, main)
                       for v, p in zip(VALUES, self.probs, strict=True) if p)
            return rest - pair_p * kept, kept

        seconds = {main: second_card(main) for main in (True, False)}
        memo: dict[tuple[int, int, bool], float] = {}

        def pending(k: int, n: int, main: bool) -> float:
            """k one-card hands still to play, n hands on the spot; `main`: the first holds the original stake."""
            if k == 0:
                return 0.0
            key = (k, n, main)
            if key not in memo:
                rest, kept = seconds[main]
                later = pending(k - 1, n, False)
                no = kept + later
                again = n < cap and self.options((rank, rank), True, n).split
                paired = max(no, pending(k + 1, n + 1, main)) if again else no
                memo[key] = rest + (1 - pair_p) * later + pair_p * paired
            return memo[key]

        return pending(2, 2, True)

    def deal(self, ranks: tuple[str, str]) -> float:
        """Expected gain of a round that starts with `ranks` against the up card, optimal play."""
        rules = self.rules
        hard, ace = VALUE_OF[ranks[0]] + VALUE_OF[ranks[1]], "A" in ranks
        insurance = 0.0
        if self.up == "A":  # half the stake at 2:1; taken only if it pays
            insurance = max(0.0, 0.5 * (self.bj * float(rules.odds_insurance.ratio) - (1 - self.bj)))
        if total(hard, ace)[0] == BLACKJACK_TOTAL:
            value = (1 - self.bj) * float(rules.odds_blackjack.ratio) + insurance  # push on a dealer blackjack
            if rules.even_money and self.up == "A":
                value = max(value, float(rules.odds_even_money.ratio))
            return value
        o = self.options(ranks, False, 1)
        value = self.hand(ranks, False, 1, True)
        if o.split:
            value = max(value, self.split(ranks[0]))
        if o.surrender:
            value = max(value, -0.5)
        return value + insurance


# ----------------------------------------------------------------- whole game
def _counts_by_value(counts: dict[str, int]) -> tuple[int, ...]:
    out = [0] * 10
    for r, n in counts.items():
        out[VALUE_OF[r] - 1] += n
    return tuple(out)


def _probs(counts: tuple[int, ...]) -> Probs:
    n = sum(counts)
    return tuple(c / n for c in counts)


@cache  # rule sets are immutable; `ledger rtp` and the flips ask for the same figure again
def infinite_deck(rules: BlackjackRules) -> float:
    """Expected gain per unit, infinite deck, optimal play (exact up to float rounding)."""
    probs = _probs(_counts_by_value({r: 1 for r in RANKS}))
    ev = 0.0
    legal: dict[tuple[tuple[str, str], str, bool, int], Options] = {}
    for up in RANKS:
        sit = Situation(rules, up, probs, dealer_fixed(rules, VALUE_OF[up], probs), legal)
        ev += sum(sit.deal((a, b)) for a in RANKS for b in RANKS) / len(RANKS) ** 3
    return ev



@cache
def shoe(rules: BlackjackRules, *, cd: bool = False) -> float:
    """Expected gain per unit for the rule set's shoe, composition-dependent on the first
    three cards; `cd=True`: on every card of the hand (`shoe_cd`, slow: about a minute)."""
    full = {r: 4 * rules.decks for r in RANKS}
    n = sum(full.values())
    base = _counts_by_value(full)
    situations: dict[tuple[int, ...], Situation] = {}
    legal: dict[tuple[tuple[str, str], str, bool, int], Options] = {}
    family: dict[tuple[str, tuple[int, ...]], Situation] = {}
    ev = 0.0
    for a in RANKS:
        for b in RANKS:
            for up in RANKS:
                ways = full[a] * (full[b] - (a == b)) * (full[up] - (up == a) - (up == b))
                key = (VALUE_OF[up], *sorted((VALUE_OF[a], VALUE_OF[b])))
                if key not in situations:
                    left = list(base)
                    for v in key:
                        left[v - 1] -= 1
                    counts = tuple(left)
                    dealer = dealer_shoe(rules.dealer_stands_soft_17, key[0], counts)
                    situations[key] = Situation(rules, _rank(key[0]), _probs(counts), dealer, legal,
                                                counts if cd else None, family if cd else None)
                ev += ways * situations[key].deal((a, b))
    return ev / (n * (n - 1) * (n - 2))


# ----------------------------------------------------------------- side bets (exact, by the engine's settlement)
def _returned(line: BetResult) -> Fraction:
    return line.returned_minor + Fraction(line.remainder_num, line.remainder_den)


def _settled(rules: BlackjackRules, s: State, bet_type: str) -> Fraction:
    """What the engine's settlement returns on the line `bet_type`, per unit staked."""
    line = next(r for r in settle(rules, s) if r.bet_type == bet_type)
    return _returned(line) / line.staked_minor


def pair_rtp(rules: BlackjackRules, decks: int | None) -> Fraction:
    """Pair side bet: every first two cards of a seat, settled by the engine (domain/gamemath.py)."""
    counted = gamemath.blackjack_pair(rules, decks)
    return gamemath.moments(gamemath.distribution(counted, gamemath.blackjack_odds(rules)))[0]


def insurance_rtp(rules: BlackjackRules, decks: int | None) -> Fraction:
    """Insurance bet (dealer ace, player's cards not looked at), settled by the engine."""
    spot, stake = f"{rules.spot_kind}:1", 2 * rules.limit_for("main").min_minor
    back = Fraction(0)
    for second in RANKS:
        hand = Hand(name=spot, spot=spot, cards=[CARD["T"], CARD["8"]], stakes=[Stake("main", "player", stake, "main")],
                    status="stood")
        s = State(seen=CardCounter(rules.decks), phase="complete", bets=[Bet("main", "player", spot, "main", stake)],
                  spots=[spot], holders={spot: "main"}, hands=[hand], dealer=[CARD["A"], Card(second, "H")],
                  insurance={spot: stake // 2})
        ways, all_ways = gamemath.draw_ways(decks, "A", second)
        back += Fraction(ways * len(RANKS), all_ways) * _settled(rules, s, "insurance")
    return back


# ----------------------------------------------------------------- report
@dataclass(frozen=True)
class Figure:
    """One line of `ledger rtp` for blackjack."""

    ruleset_id: str
    ruleset_version: int  # v1 and v2 of a rule set are both in the registry: name which
    bet_type: str
    rtp: float  # return per unit staked (display only)
    method: str
    exact: Fraction | None = None  # side bets: the exact fraction

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"ruleset_id": self.ruleset_id, "ruleset_version": self.ruleset_version,
                                  "bet_type": self.bet_type,
                                  "rtp_percent": round(100 * self.rtp, 4), "method": self.method}
        if self.exact is not None:
            out["rtp_exact"] = f"{self.exact.numerator}/{self.exact.denominator}"
        return out


# `1 + shoe(rules, cd=True)` (about 2 minutes each), keyed by the rule set's content hash so a
# changed rule set never shows an old figure; tests/unit/ops/test_rtp_blackjack.py recomputes them (slow).
SHOE_CD_PRECOMPUTED = {
    "17fa981ae6a397e634f6a3975ac9c4fe7ec64208c61e30554ea671a150dbd9ae": 0.9928697,  # live-8d v1
    "e22eaf7333d0711ee8d87c20c6bc41d5aeae231ba62018e01950f549a66eedf6": 0.9925146,  # spielbank v1
    "314da67dd25aa90a1ed5126e6cce2e2518affcaf97710d06ba3af4df930122cf": 1.0019197,  # casino-tour v1
    # v2 of live-8d (seats across rounds) and spielbank (the other players' own insurance) change
    # no play rule the main-bet figure depends on: the v1 figures, under the v2 hashes
    "ac472d552e6fb28520dc5d95d6d27272060788368d4b8c099879d3f85f648871": 0.9928697,  # live-8d v2
    "4f7b85727664e5d3450dcf2e5d9f0b0d60fc0480225f05f9e1bea9b2a817b17f": 0.9925146,  # spielbank v2
}


def figures(rules: BlackjackRules) -> list[Figure]:
    """main (optimal play), insurance and Pair where offered: infinite deck and shoe."""
    shoe_method = (f"optimal strategy, {rules.decks}-deck shoe, composition-dependent on the first three cards "
                   f"(within {ERROR_BOUND} percentage points of the full composition-dependent figure)")
    at = (rules.id, rules.version)
    rows = [Figure(*at, "main", 1 + infinite_deck(rules), "optimal strategy, infinite deck, exact recursion"),
            Figure(*at, "main", 1 + shoe(rules), shoe_method)]
    full = SHOE_CD_PRECOMPUTED.get(rules.content_hash())
    if full is not None:
        rows.append(Figure(*at, "main", full, f"optimal strategy, {rules.decks}-deck shoe, composition-dependent "
                           "on every card of the hand (precomputed; post-split hands as in the line above)"))
    if rules.bet_behind:  # the behind stake rides the seat's hand: same money flow when it follows every split/double
        rows += [Figure(*at, "behind", f.rtp, f.method + "; the seat plays optimally, every split and double "
                        "followed") for f in list(rows)]
    side = [("insurance", insurance_rtp)] + ([("pair", pair_rtp)] if rules.pair_side_bet else [])
    for bet_type, rtp_of in side:
        for decks, method in ((None, "exact, infinite deck"), (rules.decks, f"exact, {rules.decks}-deck shoe")):
            value = rtp_of(rules, decks)
            rows.append(Figure(*at, bet_type, float(value), method, value))
    return rows


# Decision fields flipped to every other value they may take (domain/blackjack_rules.py).
FLIPS: dict[str, tuple[object, ...]] = {
    "dealer_stands_soft_17": (True, False),
    "dealer_bj_takes": DEALER_BJ_TAKES,
    "double_on": DOUBLE_ON,
    "double_after_split": (True, False),
    "double_on_split_aces": (True, False),
    "hands_per_box_max": (2, 3, 4, 64),
    "resplit_aces": (True, False),
    "split_aces_one_card": (True, False),
    "split_ten_values_any": (True, False),
    "surrender": SURRENDER,
    "even_money": (True, False),
    "auto_deal_to_min_total": (0, 12),
    "odds_blackjack": (Odds.parse("3:2"), Odds.parse("6:5")),
}
# Fields that cannot move the optimal-play RTP, and why.
NO_EFFECT = {
    "timeout_policy": "applies only to a player who does not act",
    "dealer_draws_only_if_needed": "the dealer's skipped cards would settle nothing",
    "insurance_amount": "insurance is never worth taking here, whatever its size",
    "box and limit fields": "they say who decides and how much, not what a hand is worth",
}


@dataclass(frozen=True)
class Effect:
    field: str
    value: str  # the flipped value
    delta_percent: float  # RTP(flipped) - RTP(rule set), percentage points, shoe method


def rule_effects(rules: BlackjackRules, only: tuple[str, ...] = ()) -> list[Effect]:
    """What each Decision field (or those in `only`) costs or gives: the shoe figure
    with that one field flipped (about 0.7 s per flip)."""
    base = shoe(rules)
    out = []
    for name, values in FLIPS.items():
        if only and name not in only:
            continue
        for value in values:
            if value != getattr(rules, name):
                # the field is chosen at run time: mypy cannot match the value to its type
                flipped = dataclasses.replace(rules, **{name: value})  # type: ignore[arg-type]
                out.append(Effect(name, str(value), round(100 * (shoe(flipped) - base), 4)))
    return out


def all_figures() -> list[Figure]:
    return [f for rules in RULE_SETS for f in figures(rules)]
