"""Exact return distributions of every bet type the monitor tests, recomputed
independently of projections/monitor_math.py from ops/rtp.py's enumerations
(the engine's own settlement functions). Used by test_monitor_math.py and to
print the constants: `python -m tests.projections.monitor_distributions`."""
from __future__ import annotations

from collections import Counter
from fractions import Fraction
from itertools import combinations

from domain import baccarat as bac
from domain import teenpatti as tp
from domain.blackjack_rules import LIVE_8D_V1 as BJ_LIVE
from ops import rtp, rtp_blackjack

Distribution = dict[Fraction, Fraction]  # return per unit staked -> probability


def _dist(weights: Counter[tuple[str, str | None]], total: int, odds_of) -> Distribution:  # type: ignore[no-untyped-def]
    out: Counter[Fraction] = Counter()
    for (outcome, line), w in weights.items():
        back = Fraction(0) if outcome == "lose" else Fraction(1) if outcome == "push" else 1 + odds_of(line).ratio
        out[back] += w
    assert sum(out.values()) == total
    return {back: Fraction(w, total) for back, w in sorted(out.items())}


def baccarat() -> dict[str, Distribution]:
    rules = bac.LIVE_8D_V1
    coups, total = rtp.baccarat_coups(rules)
    out = {}
    for _label, bet_type, mode in rtp.BACCARAT_LINES:
        weights: Counter[tuple[str, str | None]] = Counter()
        for coup, w in coups.items():
            res = bac.resolve_bet(rules, bet_type, mode, coup)
            weights[(res.outcome, res.line)] += w
        out[f"{bet_type}:{mode}" if mode else bet_type] = _dist(weights, total, rules.odds)
    return out


def teen_patti_hands() -> dict[str, Distribution]:
    """Teen Patti A, B, Tie and 6 Card Bonus: the long enumerations (seconds of CPU)."""
    rules = tp.TWENTY_TWENTY_V1
    main, pairs_total = rtp._teenpatti_main(rules)
    out = {}
    for bet_type, mine in (("player_a", 1), ("player_b", -1)):
        weights = Counter({("win", "player"): main[mine], ("push", None): main[0], ("lose", None): main[-mine]})
        out[bet_type] = _dist(weights, pairs_total, rules.odds)
    out["tie"] = _dist(Counter({("win", "tie"): main[0], ("lose", None): main[1] + main[-1]}), pairs_total, rules.odds)
    six, six_total = rtp._six_card_weights(rules)
    sc: Counter[tuple[str, str | None]] = Counter()
    for category, n in six.items():
        res = tp.resolve_six_card(category)
        sc[(res.outcome, res.line)] += n
    out["six_card_bonus"] = _dist(sc, six_total, rules.odds)
    return out


def teen_patti_pair_plus() -> dict[str, Distribution]:
    rules = tp.TWENTY_TWENTY_V1
    hands = list(combinations(rtp.DECK, 3))
    pp: Counter[tuple[str, str | None]] = Counter()
    for hand in hands:
        res = tp.resolve_pair_plus("pair_plus_a", hand)
        pp[(res.outcome, res.line)] += 1
    dist = _dist(pp, len(hands), rules.odds)
    return {"pair_plus_a": dist, "pair_plus_b": dist}


def blackjack_pair() -> Distribution:
    """The live-8d Pair side bet pays one line (11:1) or loses: two points, mean = ops' exact RTP."""
    mean = rtp_blackjack.pair_rtp(BJ_LIVE, BJ_LIVE.decks)
    back = 1 + BJ_LIVE.odds_pair.ratio
    return {Fraction(0): 1 - mean / back, back: mean / back}


def all_distributions(*, long: bool = True) -> dict[tuple[str, str], Distribution]:
    """Every tested bet's distribution; `long=False` leaves out teen_patti_hands()."""
    out = {("baccarat/live-8d", k): d for k, d in baccarat().items()}
    out.update({("teen-patti/20-20", k): d for k, d in teen_patti_pair_plus().items()})
    if long:
        out.update({("teen-patti/20-20", k): d for k, d in teen_patti_hands().items()})
    out[("blackjack/live-8d", "pair")] = blackjack_pair()
    return out


DEALER_OUTCOME_NAMES = {rtp_blackjack.BUST: "bust", rtp_blackjack.DEALER_BJ: "blackjack",
                        **{t: str(t) for t in range(17, 22)}}


def dealer_outcomes(stands_soft_17: bool, decks: int) -> dict[str, dict[str, Fraction]]:
    """The dealer's final outcome by up-card value class (A, 2..9, T), exactly: every
    drawing path of ops/rtp_blackjack.dealer_paths (the engine's dealer rule and hand
    totals), weighted by drawing it without replacement from a full shoe of `decks`
    decks less the up card (the same weights as rtp_blackjack.dealer_shoe, in integers)."""
    out: dict[str, dict[str, Fraction]] = {}
    for up in rtp_blackjack.VALUES:
        counts = [4 * decks] * 9 + [16 * decks]
        counts[up - 1] -= 1
        left = sum(counts)
        acc: dict[str, Fraction] = {}
        den: dict[int, int] = {}
        for drawn, ways, outcome in rtp_blackjack.dealer_paths(stands_soft_17, up):
            n = sum(drawn)
            if n not in den:
                den[n] = _falling(left, n)
            num = ways
            for c, k in zip(counts, drawn, strict=True):
                num *= _falling(c, k)
            if num:
                name = DEALER_OUTCOME_NAMES[outcome]
                acc[name] = acc.get(name, Fraction(0)) + Fraction(num, den[n])
        assert sum(acc.values()) == 1, (stands_soft_17, decks, up)
        out["A" if up == 1 else "T" if up == 10 else str(up)] = dict(sorted(acc.items()))
    return out


def _falling(c: int, k: int) -> int:
    out = 1
    for i in range(k):
        out *= c - i
    return out


def moments(d: Distribution) -> tuple[Fraction, Fraction, Fraction]:
    """(mean, variance, largest return) per unit staked."""
    mean = sum((x * p for x, p in d.items()), Fraction(0))
    second = sum((x * x * p for x, p in d.items()), Fraction(0))
    return mean, second - mean * mean, max(d)


if __name__ == "__main__":
    import sys

    if sys.argv[1:] == ["dealer"]:
        for key in ((True, 8), (True, 6), (False, 8), (False, 6)):
            print(f"    {key}: {{")
            for up, dist in dealer_outcomes(*key).items():
                print(f'        "{up}": {{' + ", ".join(f'"{k}": "{v}"' for k, v in dist.items()) + "},")
            print("    },")
        sys.exit(0)
    for (ruleset, bet), d in all_distributions().items():
        m, v, top = moments(d)
        print(f'    ("{ruleset}", "{bet}"): ("{m.numerator}/{m.denominator}", "{v.numerator}/{v.denominator}", "{top}"),')
