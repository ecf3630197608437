"""Exact game math: exhaustive, weighted enumeration (no sampling) through the
engine's own functions.

Baccarat (8 decks): the first four cards are enumerated by rank (13 ranks,
ordered, weights = how many cards of that rank and suit are left), the suit
detail that Perfect Pair needs is enumerated once per pattern of equal ranks,
and the third cards are enumerated by point value, memoized on (Player total,
Banker total, values removed). Every finished coup goes through
`domain.baccarat.resolve_bet`, the function that settles real bets.

Teen Patti (one deck): all 22,100 three-card hands are classed by
`domain.teenpatti.rank_hand`; the A-vs-B result of two classes comes from
`compare_hands` on representatives; disjointness of the two hands is exact by
inclusion-exclusion over the cards of hand A (hand A up to suit symmetry).
The 6 Card Bonus is enumerated over all rank multisets of six cards, with the
suit assignments grouped by which cards (if any) make a five-card flush, and
classified by `six_card_category`.

Probabilities are exact `Fraction`s; floats appear only when printing.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from itertools import combinations, permutations, product
from math import comb, prod

from domain import baccarat as bac
from domain import teenpatti as tp
from domain.cards import RANKS, SUITS, Card
from domain.money import Odds

Outcomes = dict[str, Fraction]  # win / push / lose probabilities


@dataclass(frozen=True)
class BetMath:
    """Exact math of one bet: outcome probabilities and return to player."""

    bet: str
    win: Fraction
    push: Fraction
    lose: Fraction
    rtp: Fraction

    def as_dict(self) -> dict[str, object]:
        return {
            "bet": self.bet,
            "win": float(self.win), "push": float(self.push), "lose": float(self.lose),
            "rtp": float(self.rtp), "rtp_exact": f"{self.rtp.numerator}/{self.rtp.denominator}",
        }


def _math(bet: str, weights: Mapping[tuple[str, str | None], int], total: int, odds_of: Callable[[str], Odds]) -> BetMath:
    """Fold (outcome, paytable line) -> weight into probabilities and RTP."""
    win = sum(w for (o, _), w in weights.items() if o == "win")
    push = sum(w for (o, _), w in weights.items() if o == "push")
    lose = sum(w for (o, _), w in weights.items() if o == "lose")
    require_total = win + push + lose
    if require_total != total:
        raise ArithmeticError(f"{bet}: weights sum to {require_total}, expected {total}")
    returned = sum(
        w * (1 + odds_of(line or "").ratio) if o == "win" else (w if o == "push" else 0)
        for (o, line), w in weights.items()
    )
    return BetMath(bet, Fraction(win, total), Fraction(push, total), Fraction(lose, total), Fraction(returned) / total)


# ---------------------------------------------------------------- baccarat

BACCARAT_LINES = (  # (label, bet type, Banker mode)
    ("player", "player", None), ("banker (traditional)", "banker", "traditional"),
    ("banker (no-commission)", "banker", "no_commission"), ("tie", "tie", None),
    ("player_pair", "player_pair", None), ("banker_pair", "banker_pair", None),
    ("either_pair", "either_pair", None), ("perfect_pair", "perfect_pair", None),
    ("player_natural", "player_natural", None), ("banker_natural", "banker_natural", None),
    ("player_bonus", "player_bonus", None), ("banker_bonus", "banker_bonus", None),
    ("lucky_six", "lucky_six", None), ("lucky_six_2", "lucky_six_2", None),
    ("lucky_six_3", "lucky_six_3", None),
)
CARDS_DEALT_MAX = 6


def _falling(n: int, k: int) -> int:
    return prod(range(n - k + 1, n + 1))


def _suit_weights(pattern: tuple[int, ...], decks: int) -> tuple[int, int]:
    """For four cards P1,B1,P2,B2 whose ranks follow `pattern` (equal index = equal rank):
    (ordered ways over suits and copies, of which a Perfect Pair). Pure combinatorics;
    the perfect-pair test is the engine's."""
    reps = "A23456789TJQK"
    total = perfect = 0
    for suits in product(SUITS, repeat=4):
        cards = [Card(reps[p], s) for p, s in zip(pattern, suits)]
        left: Counter[Card] = Counter()
        ways = 1
        for card in cards:
            ways *= decks - left[card]
            left[card] += 1
        total += ways
        if bac.is_perfect_pair(cards[0], cards[2]) or bac.is_perfect_pair(cards[1], cards[3]):
            perfect += ways
    return total, perfect


def _pattern(ranks: tuple[str, ...]) -> tuple[int, ...]:
    first: dict[str, int] = {}
    return tuple(first.setdefault(r, len(first)) for r in ranks)


def _third_cards(
    rules: bac.BaccaratRules, p2: int, b2: int, value_left: tuple[int, ...], left: int,
) -> Counter[tuple[int, int, int, int]]:
    """Distribution of (player total, banker total, player cards, banker cards) after the
    drawing rules, as ordered weights over exactly two more card positions."""
    out: Counter[tuple[int, int, int, int]] = Counter()
    if bac.is_natural(p2) or bac.is_natural(b2):
        out[(p2, b2, 2, 2)] += left * (left - 1)
        return out
    if bac.player_draws(p2, rules):
        for v, n in enumerate(value_left):
            if not n:
                continue
            p3 = (p2 + v) % 10
            if bac.banker_draws(b2, v, rules):
                for u, m in enumerate(value_left):
                    m -= u == v
                    if m > 0:
                        out[(p3, (b2 + u) % 10, 3, 3)] += n * m
            else:
                out[(p3, b2, 3, 2)] += n * (left - 1)
        return out
    if bac.banker_draws(b2, None, rules):
        for u, m in enumerate(value_left):
            if m:
                out[(p2, (b2 + u) % 10, 2, 3)] += m * (left - 1)
        return out
    out[(p2, b2, 2, 2)] += left * (left - 1)
    return out


def baccarat_coups(rules: bac.BaccaratRules = bac.LIVE_8D_V1) -> tuple[Counter, int]:
    """Every distinct `Coup` with its ordered weight over six card positions, and the total."""
    per_rank = rules.decks * len(SUITS)
    shoe = per_rank * len(RANKS)
    rep = {r: Card(r, "S") for r in RANKS}
    value_of = {r: bac.point_value(rep[r]) for r in RANKS}
    suits_cache: dict[tuple[int, ...], tuple[int, int]] = {}
    first_four: Counter = Counter()
    for ranks in product(RANKS, repeat=4):
        pattern = _pattern(ranks)
        if pattern not in suits_cache:
            suits_cache[pattern] = _suit_weights(pattern, rules.decks)
        total, perfect = suits_cache[pattern]
        p1, b1, p2c, b2c = (rep[r] for r in ranks)
        p2, b2 = bac.hand_total([p1, p2c]), bac.hand_total([b1, b2c])
        removed = tuple(sorted(value_of[r] for r in ranks))
        flags = (bac.is_pair(p1, p2c, rules), bac.is_pair(b1, b2c, rules))
        if perfect:
            first_four[(p2, b2, removed, flags, True)] += perfect
        if total - perfect:
            first_four[(p2, b2, removed, flags, False)] += total - perfect
    zero_value_ranks = sum(1 for r in RANKS if value_of[r] == 0)
    full = [per_rank * (zero_value_ranks if v == 0 else 1) for v in range(10)]
    coups: Counter = Counter()
    stage_cache: dict[tuple, Counter] = {}
    for (p2, b2, removed, (ppair, bpair), perfect), w in first_four.items():
        key = (p2, b2, removed)
        if key not in stage_cache:
            left = list(full)
            for v in removed:
                left[v] -= 1
            stage_cache[key] = _third_cards(rules, p2, b2, tuple(left), shoe - 4)
        for (pt, bt, pn, bn), w2 in stage_cache[key].items():
            coup = bac.Coup(pt, bt, pn, bn, ppair, bpair, perfect, bac.is_natural(p2), bac.is_natural(b2))
            coups[coup] += w * w2
    return coups, _falling(shoe, CARDS_DEALT_MAX)


def baccarat_table(rules: bac.BaccaratRules = bac.LIVE_8D_V1) -> list[BetMath]:
    coups, total = baccarat_coups(rules)
    rows = []
    for label, bet_type, mode in BACCARAT_LINES:
        weights: Counter = Counter()
        for coup, w in coups.items():
            res = bac.resolve_bet(rules, bet_type, mode, coup)
            weights[(res.outcome, res.line)] += w
        rows.append(_math(label, weights, total, rules.odds))
    return rows


# ---------------------------------------------------------------- teen patti

DECK: tuple[Card, ...] = tuple(Card(r, s) for r in RANKS for s in SUITS)


def _hand_class(hand: tuple[Card, ...]) -> tuple:
    """Everything the engine's comparison can depend on: rank key and the three ranks."""
    return tp.rank_hand(hand), tuple(sorted(tp.RANK_VALUE[c.rank] for c in hand))


def _canonical(hand: tuple[int, ...]) -> tuple[int, ...]:
    """Hand (card indices) up to a permutation of suits: A-vs-B math is suit-symmetric."""
    best: tuple[int, ...] = tuple(sorted(hand))  # the identity permutation, improved on below
    for perm in permutations(range(4)):
        mapped = tuple(sorted((i // 4) * 4 + perm[i % 4] for i in hand))
        if mapped < best:
            best = mapped
    return best


def _teenpatti_main(rules: tp.TeenPattiRules) -> tuple[Counter, int]:
    """Weights of A-wins (1) / tie (0) / B-wins (-1) over ordered disjoint (A, B) hand pairs."""
    hands: list[tuple[int, ...]] = list(combinations(range(len(DECK)), 3))
    class_ids: dict[tuple, int] = {}
    reps: list[tuple[Card, ...]] = []
    hand_class: dict[tuple[int, ...], int] = {}
    for h in hands:
        cards = tuple(DECK[i] for i in h)
        key = _hand_class(cards)
        if key not in class_ids:
            class_ids[key] = len(reps)
            reps.append(cards)
        hand_class[h] = class_ids[key]
    n_class = Counter(hand_class.values())
    by_card: dict[int, list[int]] = {i: [] for i in range(len(DECK))}
    by_pair: dict[tuple[int, int], list[int]] = {}
    for h, c in hand_class.items():
        for i in h:
            by_card[i].append(c)
        for pair in combinations(h, 2):
            by_pair.setdefault(pair, []).append(c)
    canon = Counter(_canonical(h) for h in hands)
    rows: dict[int, list[int]] = {}
    result: Counter = Counter()
    for a, mult in canon.items():
        ca = hand_class[a]
        if ca not in rows:
            rows[ca] = [tp.compare_hands(reps[ca], rb, rules) for rb in reps]
        row = rows[ca]
        counts = Counter(n_class)  # hands B that share no card with A, by class (inclusion-exclusion)
        counts.subtract(Counter(c for i in a for c in by_card[i]))
        counts.update(Counter(c for pair in combinations(a, 2) for c in by_pair[pair]))
        counts[ca] -= 1
        for cb, n in counts.items():
            if n:
                result[row[cb]] += n * mult
    return result, len(hands) * comb(len(DECK) - 3, 3)


def _six_card_weights(rules: tp.TeenPattiRules) -> tuple[Counter, int]:
    """Category -> number of six-card sets, over all rank multisets and suit groupings."""
    out: Counter = Counter()

    def multisets(start: int, left: int, acc: list[int]) -> Iterator[tuple[int, ...]]:
        if left == 0:
            yield tuple(acc)
            return
        for v in range(start, 13):
            for m in range(1, min(4, left) + 1):
                yield from multisets(v + 1, left - m, acc + [v] * m)

    for ms in multisets(0, 6, []):
        counts = Counter(ms)
        total = prod(comb(4, m) for m in counts.values())
        flush_weight = 0
        distinct = sorted(counts)
        for size in (5, 6):
            if len(distinct) < size:
                continue
            for flush_ranks in combinations(distinct, size):
                inside = set(flush_ranks)
                ways = len(SUITS) * prod(comb(3, m - (v in inside)) for v, m in counts.items())
                if not ways:
                    continue
                cards = [Card(RANKS[v], "S") for v in flush_ranks]
                others = Counter(counts)
                for v in flush_ranks:
                    others[v] -= 1
                for v, m in others.items():
                    cards += [Card(RANKS[v], s) for s in "HDC"[:m]]
                out[tp.six_card_category(cards, rules)] += ways
                flush_weight += ways
        spread = [Card(RANKS[v], SUITS[i % 4]) for i, v in enumerate(ms)]  # at most 2 per suit
        if total - flush_weight:
            out[tp.six_card_category(spread, rules)] += total - flush_weight
    return out, comb(len(DECK), 6)


def teenpatti_table(rules: tp.TeenPattiRules = tp.TWENTY_TWENTY_V1) -> list[BetMath]:
    main, pairs_total = _teenpatti_main(rules)
    rows = []
    for bet_type, mine in (("player_a", 1), ("player_b", -1)):
        weights = Counter({("win", "player"): main[mine], ("push", None): main[0],
                           ("lose", None): main[-mine]})
        rows.append(_math(bet_type, weights, pairs_total, rules.odds))
    tie = Counter({("win", "tie"): main[0], ("lose", None): main[1] + main[-1]})
    rows.append(_math("tie", tie, pairs_total, rules.odds))
    hands = list(combinations(DECK, 3))
    lines = Counter(tp.resolve_pair_plus("pair_plus_a", h) for h in hands)
    pp: Counter[tuple[str, str | None]] = Counter()
    for res, n in lines.items():
        pp[(res.outcome, res.line)] += n
    rows.append(_math("pair_plus_a / pair_plus_b", pp, len(hands), rules.odds))
    six, six_total = _six_card_weights(rules)
    sc: Counter[tuple[str, str | None]] = Counter()
    for category, n in six.items():
        res = tp.resolve_six_card(category)
        sc[(res.outcome, res.line)] += n
    rows.append(_math("six_card_bonus", sc, six_total, rules.odds))
    return rows


@cache
def tables(game: str) -> tuple[BetMath, ...]:
    """Memoized: 'baccarat' or 'teen-patti' under the current (v1) rule sets."""
    if game == "baccarat":
        return tuple(baccarat_table())
    if game == "teen-patti":
        return tuple(teenpatti_table())
    raise ValueError(f"unknown game {game!r}")
