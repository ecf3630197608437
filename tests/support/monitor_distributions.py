"""Exact return distributions of every bet line the monitor tests, counted afresh
by domain/gamemath.py (the engine's own settlement functions) rather than read
from its stored COUNTS, and the dealer's outcomes by up card from
ops/gamemath/rtp_blackjack.py. Used by tests/unit/projections/test_monitor.py and
test_monitor_deals.py, and to print the dealer constants:
`python -m tests.support.monitor_distributions dealer`."""
from __future__ import annotations

from fractions import Fraction

from domain import baccarat as bac
from domain import gamemath
from domain import teenpatti as tp
from domain.blackjack_rules import LIVE_8D_V1 as BJ_LIVE
from ops.gamemath import rtp_blackjack

Distribution = gamemath.Distribution  # return per unit staked -> probability


def all_distributions(*, long: bool = True) -> dict[tuple[str, str], Distribution]:
    """Every tested bet line's distribution; `long=False` leaves out Teen Patti's bets on both hands."""
    out = {(bac.LIVE_8D_V1.id, k): gamemath.distribution(c, bac.LIVE_8D_V1.odds)
           for k, c in gamemath.baccarat_counts(bac.LIVE_8D_V1).items()}
    out.update({(tp.TWENTY_TWENTY_V1.id, k): gamemath.distribution(c, tp.TWENTY_TWENTY_V1.odds)
                for k, c in gamemath.teenpatti_counts(tp.TWENTY_TWENTY_V1, long=long).items()})
    pair = gamemath.blackjack_pair(BJ_LIVE, BJ_LIVE.decks)
    out[(BJ_LIVE.id, "pair")] = gamemath.distribution(pair, gamemath.blackjack_odds(BJ_LIVE))
    return out


DEALER_OUTCOME_NAMES = {rtp_blackjack.BUST: "bust", rtp_blackjack.DEALER_BJ: "blackjack",
                        **{t: str(t) for t in range(17, 22)}}


def dealer_outcomes(stands_soft_17: bool, decks: int) -> dict[str, dict[str, Fraction]]:
    """The dealer's final outcome by up-card value class (A, 2..9, T), exactly: every
    drawing path of ops/gamemath/rtp_blackjack.dealer_paths (the engine's dealer rule and hand
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


moments = gamemath.moments


if __name__ == "__main__":
    for key in ((True, 8), (True, 6), (False, 8), (False, 6)):
        print(f"    {key}: {{")
        for up, dist in dealer_outcomes(*key).items():
            print(f'        "{up}": {{' + ", ".join(f'"{k}": "{v}"' for k, v in dist.items()) + "},")
        print("    },")
