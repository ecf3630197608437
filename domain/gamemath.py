"""Exact game math of every bet line: how many deals end on each paytable line.

What is counted here is cards only: for each bet line (a bet type; the Banker
bet once per mode), how many ordered deals end in each (outcome, paytable
line). The money side, the return per unit staked and its distribution (RTP,
variance, largest return), is then read off the rule set's own paytable, so
each bet line's odds are declared once, in its rule set. `ledger rtp`
(ops/gamemath/rtp.py) and the monitor (projections/monitor_math.py) both take their
figures from here.

The counts are exhaustive, weighted enumerations (no sampling) through the
engine's own functions, so the math tests the very code that settles bets:

- Baccarat: the first four cards by rank (weights = how many cards of that
  rank and suit are left), the suit detail Perfect Pair needs once per pattern
  of equal ranks, the third cards by point value (memoized on the totals and
  the values removed); every finished `Coup` goes through
  `domain.baccarat.resolve_bet`.
- Teen Patti (one deck): all 22,100 three-card hands classed by `rank_hand`;
  A against B by `compare_hands` on one representative per class, the hands'
  disjointness exact by inclusion-exclusion over hand A's cards (A taken up to
  suit symmetry); the 6 Card Bonus over every rank multiset of six cards, the
  suit assignments grouped by which cards make a five-card flush, classified by
  `six_card_category`.
- Blackjack Pair: every first two cards of a seat, settled by the engine's
  `settle`.

`COUNTS` keeps the results for the rule sets the monitor tests, because the
Teen Patti enumerations take seconds and the monitor needs the figures while
it folds events; `python -m domain.gamemath` prints them afresh and
tests/unit/domain/test_gamemath.py derives every entry again and compares. A new
rule-set version needs its own entry (its cards may be dealt otherwise).
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from fractions import Fraction
from functools import cache
from itertools import combinations, permutations, product
from math import comb, prod

from domain import baccarat as bac
from domain import teenpatti as tp
from domain.blackjack_rules import BlackjackRules
from domain.blackjack_settle import settle
from domain.blackjack_state import State
from domain.cards import RANKS, SUITS, Card, CardCounter
from domain.errors import InvariantBroken, require
from domain.model import Bet
from domain.money import Odds
from domain.registry import get_rule_set

Line = tuple[str, str | None]  # (outcome: win | push | lose, the paytable line paid on a win)
Ways = Counter[Line]  # how many ordered deals end on each line
Counted = tuple[Ways, int]  # (ways per line, ways in all)
Distribution = dict[Fraction, Fraction]  # return per unit staked -> probability
OddsOf = Callable[[str], Odds]

# ---------------------------------------------------------------- from counts to money


def distribution(counted: Counted, odds_of: OddsOf) -> Distribution:
    """The return per unit staked of a bet line and its exact probability: a loss returns 0,
    a push the stake, a win the stake and its paytable line's odds."""
    ways, total = counted
    require(sum(ways.values()) == total, f"ways sum to {sum(ways.values())}, expected {total}")
    out: Counter[Fraction] = Counter()
    for (outcome, line), n in ways.items():
        back = Fraction(0) if outcome == "lose" else Fraction(1) if outcome == "push" else 1 + odds_of(line or "").ratio
        out[back] += n
    return {back: Fraction(n, total) for back, n in sorted(out.items()) if n}


def moments(dist: Distribution) -> tuple[Fraction, Fraction, Fraction]:
    """(mean, variance, largest return) per unit staked: the mean is the RTP."""
    mean = sum((x * p for x, p in dist.items()), Fraction(0))
    second = sum((x * x * p for x, p in dist.items()), Fraction(0))
    return mean, second - mean * mean, max(dist)


def shares(counted: Counted) -> tuple[Fraction, Fraction, Fraction]:
    """(win, push, lose) probabilities of a bet line."""
    ways, total = counted
    by_outcome = Counter({"win": 0, "push": 0, "lose": 0})
    for (outcome, _line), n in ways.items():
        by_outcome[outcome] += n
    return Fraction(by_outcome["win"], total), Fraction(by_outcome["push"], total), Fraction(by_outcome["lose"], total)


# ---------------------------------------------------------------- baccarat

CARDS_DEALT_MAX = 6  # a coup deals at most three cards a side


def baccarat_lines(rules: bac.BaccaratRules | None = None) -> tuple[tuple[str, str | None], ...]:
    """Every bet line as (bet type, Banker mode): the bet types in their order (those `rules` offers,
    when given: a side bet added in a later version is no line of an earlier one), the Banker once
    per mode."""
    offered = bac.BET_TYPES if rules is None else tuple(t for t in bac.BET_TYPES if t in dict(rules.limits))
    return tuple((t, m) for t in offered for m in (bac.MODES if t == "banker" else (None,)))


def line_key(bet_type: str, mode: str | None) -> str:
    """How the monitor names a bet line: the bet type, `banker:<mode>` for the Banker."""
    return f"{bet_type}:{mode}" if mode else bet_type


def _falling(n: int, k: int) -> int:
    return prod(range(n - k + 1, n + 1))


def _suit_weights(pattern: tuple[int, ...], decks: int) -> tuple[int, int]:
    """For four cards P1,B1,P2,B2 whose ranks follow `pattern` (equal index = equal rank):
    (ordered ways over suits and copies, of which a Perfect Pair). Pure combinatorics;
    the perfect-pair test is the engine's."""
    reps = "A23456789TJQK"
    total = perfect = 0
    for suits in product(SUITS, repeat=4):
        cards = [Card(reps[p], s) for p, s in zip(pattern, suits, strict=True)]
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


FirstFour = tuple[int, int, tuple[int, ...], tuple[bool, bool], bool]  # totals, values removed, pairs, perfect


def _first_four(rules: bac.BaccaratRules) -> Counter[FirstFour]:
    """The first four cards (P1, B1, P2, B2) by what the rest of the coup depends on, with their ordered ways."""
    rep = {r: Card(r, "S") for r in RANKS}
    suits_cache: dict[tuple[int, ...], tuple[int, int]] = {}
    first_four: Counter[FirstFour] = Counter()
    for ranks in product(RANKS, repeat=4):
        pattern = _pattern(ranks)
        if pattern not in suits_cache:
            suits_cache[pattern] = _suit_weights(pattern, rules.decks)
        total, perfect = suits_cache[pattern]
        p1, b1, p2c, b2c = (rep[r] for r in ranks)
        p2, b2 = bac.hand_total([p1, p2c]), bac.hand_total([b1, b2c])
        removed = tuple(sorted(bac.point_value(rep[r]) for r in ranks))
        flags = (bac.is_pair(p1, p2c, rules), bac.is_pair(b1, b2c, rules))
        if perfect:
            first_four[(p2, b2, removed, flags, True)] += perfect
        if total - perfect:
            first_four[(p2, b2, removed, flags, False)] += total - perfect
    return first_four


def baccarat_coups(rules: bac.BaccaratRules = bac.LIVE_8D_V1) -> tuple[Counter[bac.Coup], int]:
    """Every distinct `Coup` with its ordered weight over six card positions, and the total."""
    per_rank = rules.decks * len(SUITS)
    shoe = per_rank * len(RANKS)
    zero_value_ranks = sum(1 for r in RANKS if bac.point_value(Card(r, "S")) == 0)
    full = [per_rank * (zero_value_ranks if v == 0 else 1) for v in range(10)]
    coups: Counter[bac.Coup] = Counter()
    stage_cache: dict[tuple[int, int, tuple[int, ...]], Counter[tuple[int, int, int, int]]] = {}
    for (p2, b2, removed, (ppair, bpair), perfect), w in _first_four(rules).items():
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


def baccarat_counts(rules: bac.BaccaratRules = bac.LIVE_8D_V1) -> dict[str, Counted]:
    """Every bet line's ways (keyed by `line_key`), each coup settled by `resolve_bet`."""
    coups, total = baccarat_coups(rules)
    out: dict[str, Counted] = {}
    for bet_type, mode in baccarat_lines(rules):
        ways: Ways = Counter()
        for coup, w in coups.items():
            res = bac.resolve_bet(rules, bet_type, mode, coup)
            ways[(res.outcome, res.line)] += w
        out[line_key(bet_type, mode)] = (ways, total)
    return out


# ---------------------------------------------------------------- teen patti

DECK: tuple[Card, ...] = tuple(Card(r, s) for r in RANKS for s in SUITS)
HandClass = tuple[tuple[int, tuple[int, ...]], tuple[int, ...]]


def _hand_class(hand: tuple[Card, ...]) -> HandClass:
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


def teenpatti_main(rules: tp.TeenPattiRules) -> tuple[Counter[int], int]:
    """Weights of A-wins (1) / tie (0) / B-wins (-1) over ordered disjoint (A, B) hand pairs."""
    hands: list[tuple[int, ...]] = list(combinations(range(len(DECK)), 3))
    class_ids: dict[HandClass, int] = {}
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
    by_pair: dict[tuple[int, ...], list[int]] = {}
    for h, c in hand_class.items():
        for i in h:
            by_card[i].append(c)
        for pair in combinations(h, 2):
            by_pair.setdefault(pair, []).append(c)
    canon = Counter(_canonical(h) for h in hands)
    rows: dict[int, list[int]] = {}
    result: Counter[int] = Counter()
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


def six_card_weights(rules: tp.TeenPattiRules) -> tuple[Counter[str], int]:
    """Category -> number of six-card sets, over all rank multisets and suit groupings."""
    out: Counter[str] = Counter()
    for ms in _multisets(0, 6, []):
        counts = Counter(ms)
        total = prod(comb(4, m) for m in counts.values())
        flush_weight = 0
        distinct = sorted(counts)
        for size in (5, 6):
            for flush_ranks in combinations(distinct, size) if len(distinct) >= size else ():
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


def _multisets(start: int, left: int, acc: list[int]) -> Iterator[tuple[int, ...]]:
    """Every multiset of `left` rank indices from `start` on, each rank at most four times."""
    if left == 0:
        yield tuple(acc)
        return
    for v in range(start, 13):
        for m in range(1, min(4, left) + 1):
            yield from _multisets(v + 1, left - m, acc + [v] * m)


def teenpatti_pair_plus() -> Counted:
    """Pair Plus of one hand (A's and B's are the same bet on either hand): every three cards."""
    hands = list(combinations(DECK, 3))
    ways: Ways = Counter()
    for hand in hands:
        res = tp.resolve_pair_plus("pair_plus_a", hand)
        ways[(res.outcome, res.line)] += 1
    return ways, len(hands)


def teenpatti_counts(rules: tp.TeenPattiRules = tp.TWENTY_TWENTY_V1, *, long: bool = True) -> dict[str, Counted]:
    """Every bet line's ways; `long=False` leaves out the bets of both hands (seconds of CPU)."""
    pair_plus = teenpatti_pair_plus()
    out: dict[str, Counted] = {"pair_plus_a": pair_plus, "pair_plus_b": pair_plus}
    if not long:
        return out
    main, pairs_total = teenpatti_main(rules)
    for bet_type in ("player_a", "player_b", "tie"):
        ways: Ways = Counter()
        for result, n in main.items():
            res = tp.resolve_main(rules, bet_type, result)
            ways[(res.outcome, res.line)] += n
        out[bet_type] = (ways, pairs_total)
    six, six_total = six_card_weights(rules)
    sc: Ways = Counter()
    for category, n in six.items():
        res = tp.resolve_six_card(category)
        sc[(res.outcome, res.line)] += n
    out["six_card_bonus"] = (sc, six_total)
    return {t: out[t] for t in tp.BET_TYPES}


# ---------------------------------------------------------------- blackjack side bets


def draw_ways(decks: int | None, first: str, second: str) -> tuple[int, int]:
    """(ways to draw `second` after `first`, ways to draw any two cards): a shoe, or an infinite deck (None)."""
    if decks is None:
        return 1, len(RANKS) ** 2
    per_rank, n = 4 * decks, 52 * decks
    return per_rank * (per_rank - (first == second)), n * (n - 1)


def blackjack_pair(rules: BlackjackRules, decks: int | None) -> Counted:
    """The Pair side bet: every first two cards of a seat (by rank), settled by the engine."""
    spot, stake = f"{rules.spot_kind}:1", rules.limit_for("pair").min_minor
    ways: Ways = Counter()
    total = 0
    for a in RANKS:
        for b in RANKS:
            s = State(seen=CardCounter(rules.decks), bets=[Bet("pair", "player", spot, "pair", stake)],
                      first_two={spot: (Card(a, "S"), Card(b, "H"))})
            line = next(r for r in settle(rules, s) if r.bet_type == "pair")
            n, total = draw_ways(decks, a, b)
            ways[(line.outcome, "pair" if line.outcome == "win" else None)] += n
    return ways, total


def blackjack_odds(rules: BlackjackRules) -> OddsOf:
    """A blackjack rule set's paytable as a line -> odds lookup (its odds are fields `odds_<line>`)."""
    def odds_of(line: str) -> Odds:
        odds = getattr(rules, f"odds_{line}", None)
        if not isinstance(odds, Odds):
            raise InvariantBroken(f"no paytable line {line!r} in {rules.id} v{rules.version}")
        return odds

    return odds_of


# ---------------------------------------------------------------- what the monitor tests


def derive() -> dict[tuple[str, int, str], Counted]:
    """Every bet line the monitor tests, counted afresh (the Teen Patti part takes seconds): every
    published version of the baccarat and Teen Patti rule sets (a new version is counted with no
    change here), the blackjack Pair of live-8d v1."""
    out: dict[tuple[str, int, str], Counted] = {}
    for rules in bac.RULE_SETS:
        for key, counted in baccarat_counts(rules).items():
            out[(rules.id, rules.version, key)] = counted
    for tp_rules in tp.RULE_SETS:
        for key, counted in teenpatti_counts(tp_rules).items():
            out[(tp_rules.id, tp_rules.version, key)] = counted
    from domain.blackjack_rules import LIVE_8D_V1 as BJ_LIVE

    out[(BJ_LIVE.id, BJ_LIVE.version, "pair")] = blackjack_pair(BJ_LIVE, BJ_LIVE.decks)
    return out


def odds_of(ruleset_id: str, version: int) -> OddsOf:
    """The paytable of a published rule set as a line -> odds lookup."""
    rules = get_rule_set(ruleset_id, version)
    if isinstance(rules, BlackjackRules):
        return blackjack_odds(rules)
    if isinstance(rules, (bac.BaccaratRules, tp.TeenPattiRules)):
        return rules.odds
    raise InvariantBroken(f"no paytable lookup for {rules.id}")


@cache
def figures(ruleset_id: str, version: int, key: str) -> tuple[Fraction, Fraction, Fraction] | None:
    """(mean, variance, largest return) per unit staked of a bet line the monitor tests, else None."""
    stored = COUNTS.get((ruleset_id, version, key))
    if stored is None:
        return None
    total, lines = stored
    ways: Ways = Counter({(outcome, line): n for outcome, line, n in lines})
    return moments(distribution((ways, total), odds_of(ruleset_id, version)))


def tested() -> list[tuple[str, int, str]]:
    """Every (rule set id, version, bet line) the monitor tests."""
    return sorted(COUNTS)


def stored_form(counted: Counted) -> tuple[int, tuple[tuple[str, str | None, int], ...]]:
    """How COUNTS keeps a bet line's ways: (total, (outcome, line, ways) sorted)."""
    ways, total = counted
    return total, tuple(sorted(((o, line, n) for (o, line), n in ways.items() if n),
                               key=lambda t: (t[0], t[1] or "")))


# (rule set id, version, bet line) -> (ways in all, ((outcome, paytable line, ways), ...)):
# `python -m domain.gamemath` prints it from `derive()`.
COUNTS: dict[tuple[str, int, str], tuple[int, tuple[tuple[str, str | None, int], ...]]] = {
    ("baccarat/live-8d", 1, "banker:no_commission"): (4998398275503360, (
        ("lose", None, 2230518282592256),
        ("push", None, 475627426473216),
        ("win", "banker_no_commission", 2023020261982208),
        ("win", "banker_no_commission_six", 269232304455680),
    )),
    ("baccarat/live-8d", 1, "banker:traditional"): (4998398275503360, (
        ("lose", None, 2230518282592256),
        ("push", None, 475627426473216),
        ("win", "banker_traditional", 2292252566437888),
    )),
    ("baccarat/live-8d", 1, "banker_bonus"): (4998398275503360, (
        ("lose", None, 3495551656153856),
        ("push", None, 89325908267520),
        ("win", "bonus_margin_4", 201147167287296),
        ("win", "bonus_margin_5", 157275882332160),
        ("win", "bonus_margin_6", 119200072366080),
        ("win", "bonus_margin_7", 79517099278336),
        ("win", "bonus_margin_8", 28305092784128),
        ("win", "bonus_margin_9", 15390342909952),
        ("win", "bonus_natural_win", 812685054124032),
    )),
    ("baccarat/live-8d", 1, "banker_natural"): (4998398275503360, (
        ("lose", None, 4051528389022464),
        ("win", "banker_natural", 946869886480896),
    )),
    ("baccarat/live-8d", 1, "banker_pair"): (4998398275503360, (
        ("lose", None, 4625023946489856),
        ("win", "banker_pair", 373374329013504),
    )),
    ("baccarat/live-8d", 1, "either_pair"): (4998398275503360, (
        ("lose", None, 4279544271175680),
        ("win", "either_pair", 718854004327680),
    )),
    ("baccarat/live-8d", 1, "lucky_six"): (4998398275503360, (
        ("lose", None, 4729165971047680),
        ("win", "lucky_six_three_cards", 83058367551488),
        ("win", "lucky_six_two_cards", 186173936904192),
    )),
    ("baccarat/live-8d", 1, "lucky_six_2"): (4998398275503360, (
        ("lose", None, 4812224338599168),
        ("win", "lucky_six_2", 186173936904192),
    )),
    ("baccarat/live-8d", 1, "lucky_six_3"): (4998398275503360, (
        ("lose", None, 4915339907951872),
        ("win", "lucky_six_3", 83058367551488),
    )),
    ("baccarat/live-8d", 1, "perfect_pair"): (4998398275503360, (
        ("lose", None, 4831200682334208),
        ("win", "perfect_pair", 167197593169152),
    )),
    ("baccarat/live-8d", 1, "player"): (4998398275503360, (
        ("lose", None, 2292252566437888),
        ("push", None, 475627426473216),
        ("win", "player", 2230518282592256),
    )),
    ("baccarat/live-8d", 1, "player_bonus"): (4998398275503360, (
        ("lose", None, 3460101558850304),
        ("push", None, 89325908267520),
        ("win", "bonus_margin_4", 186780352174080),
        ("win", "bonus_margin_5", 166169165987840),
        ("win", "bonus_margin_6", 141238897317888),
        ("win", "bonus_margin_7", 89590261473280),
        ("win", "bonus_margin_8", 34097645543424),
        ("win", "bonus_margin_9", 18409431764992),
        ("win", "bonus_natural_win", 812685054124032),
    )),
    ("baccarat/live-8d", 1, "player_natural"): (4998398275503360, (
        ("lose", None, 4051528389022464),
        ("win", "player_natural", 946869886480896),
    )),
    ("baccarat/live-8d", 1, "player_pair"): (4998398275503360, (
        ("lose", None, 4625023946489856),
        ("win", "player_pair", 373374329013504),
    )),
    ("baccarat/live-8d", 1, "tie"): (4998398275503360, (
        ("lose", None, 4522770849030144),
        ("win", "tie", 475627426473216),
    )),
    ("blackjack/live-8d", 1, "pair"): (172640, (
        ("lose", None, 159744),
        ("win", "pair", 12896),
    )),
    ("teen-patti/20-20", 1, "pair_plus_a"): (22100, (
        ("lose", None, 16440),
        ("win", "pair_plus_colour", 1096),
        ("win", "pair_plus_pair", 3744),
        ("win", "pair_plus_pure_sequence", 48),
        ("win", "pair_plus_sequence", 720),
        ("win", "pair_plus_trail", 48),
        ("win", "pair_plus_trail_of_aces", 4),
    )),
    ("teen-patti/20-20", 1, "pair_plus_b"): (22100, (
        ("lose", None, 16440),
        ("win", "pair_plus_colour", 1096),
        ("win", "pair_plus_pair", 3744),
        ("win", "pair_plus_pure_sequence", 48),
        ("win", "pair_plus_sequence", 720),
        ("win", "pair_plus_trail", 48),
        ("win", "pair_plus_trail_of_aces", 4),
    )),
    ("teen-patti/20-20", 1, "player_a"): (407170400, (
        ("lose", None, 203359936),
        ("push", None, 450528),
        ("win", "player", 203359936),
    )),
    ("teen-patti/20-20", 1, "player_b"): (407170400, (
        ("lose", None, 203359936),
        ("push", None, 450528),
        ("win", "player", 203359936),
    )),
    ("teen-patti/20-20", 1, "six_card_bonus"): (20358520, (
        ("lose", None, 18876456),
        ("win", "six_card_flush", 205792),
        ("win", "six_card_four_of_a_kind", 14664),
        ("win", "six_card_full_house", 165984),
        ("win", "six_card_royal_flush", 188),
        ("win", "six_card_straight", 361620),
        ("win", "six_card_straight_flush", 1656),
        ("win", "six_card_three_of_a_kind", 732160),
    )),
    ("teen-patti/20-20", 1, "tie"): (407170400, (
        ("lose", None, 406719872),
        ("win", "tie", 450528),
    )),
}


def _quoted(text: str | None) -> str:
    return "None" if text is None else f'"{text}"'


def counts_source(counted: dict[tuple[str, int, str], Counted]) -> str:
    """The entries of COUNTS as they are written in this file."""
    out = []
    for (ruleset_id, version, key), one in sorted(counted.items()):
        total, lines = stored_form(one)
        out.append(f'    ("{ruleset_id}", {version}, "{key}"): ({total}, (')
        out += [f"        ({_quoted(o)}, {_quoted(line)}, {n})," for o, line, n in lines]
        out.append("    )),")
    return "\n".join(out)


if __name__ == "__main__":
    print(counts_source(derive()))
