"""The RTP and integrity monitor (issue 12 item 6).

Power and false alarms are seeded: fair studios folded straight from the
simulator's own settlements (tests/support/monitor_sim.py, no ledger, so
many seeds fit in a test). The runs through `ledger ingest`, the `monitor` view
and `ledger monitor` on a store are in tests/store/projections/test_monitor_end_to_end.py."""
from __future__ import annotations

import json
import math
import os
from fractions import Fraction
from math import comb
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ops.cli import main
from ops.gamemath.monitor_stats import (
    Finding,
    Group,
    bennett,
    binomial_upper,
    holm,
    ops_findings,
    rtp_findings,
    rtp_p_value,
)
from projections.monitor_math import bet_math, bet_math_texts, decimal_text, ratio_text
from projections.monitor_math import tested_bets as exact_bets
from tests.support.monitor_sim import rule_sets, studio_rows

FAIR_SEEDS = 100
FAIR_ROUNDS = 10  # per table and seed; 3 tables (baccarat, Teen Patti, blackjack live-8d)
BIASED = "bacc-1"


def test_fair_studios_are_flagged_at_most_alpha_of_the_time() -> None:
    """One pass over the fair seeds (the expensive part), three checks:
    at each alpha at most alpha of the fair studios have anything flagged; and
    the conservative p-values must not hide a wrong variance: on the main bets
    (many lines, near-symmetric) the table-level z over the seeds is ~N(0, 1)."""
    fair = [rtp_findings(studio_rows(seed, FAIR_ROUNDS)) for seed in range(FAIR_SEEDS)]
    for alpha in (0.001, 0.05, 0.2):
        flagged = sum(any(f.flagged for f in holm(found, alpha)) for found in fair)
        assert flagged <= alpha * FAIR_SEEDS, f"{flagged} of {FAIR_SEEDS} fair studios flagged at alpha {alpha}"
    zs = [f.detail["z"] for found in fair for f in found if f.level == "table" and f.table_id in ("bacc-1", "tp-1")]
    mean = sum(zs) / len(zs)
    sd = math.sqrt(sum((z - mean) ** 2 for z in zs) / (len(zs) - 1))
    assert len(zs) == 2 * FAIR_SEEDS
    assert abs(mean) < 0.3 and 0.75 < sd < 1.25, (mean, sd)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_biased_baccarat_table_is_flagged(seed: int) -> None:
    rows = studio_rows(seed, 200, tables=1, rules=rule_sets(("baccarat/live-8d",)), biased=frozenset({BIASED}))
    found = holm(rtp_findings(rows), 0.001)
    table = next(f for f in found if f.level == "table" and f.table_id == BIASED)
    assert table.flagged and table.detail["observed_rtp"] < table.detail["theoretical_rtp"], table


def test_the_same_table_unbiased_is_not_flagged() -> None:
    rows = studio_rows(1, 200, tables=1, rules=rule_sets(("baccarat/live-8d",)))
    assert not any(f.flagged for f in holm(rtp_findings(rows), 0.001))


def test_simulate_biased_table_is_deterministic_and_touches_only_that_table(
        tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    outs = []
    for n, extra in enumerate(([], ["--biased-table", BIASED], ["--biased-table", BIASED])):
        out = tmp_path / f"{n}.jsonl"
        assert main(["simulate", "--tables", "5", "--rounds", "30", "--seed", "4", "--quiet", "--out", str(out),
                     *extra]) == 0
        outs.append([json.loads(line) for line in out.read_bytes().splitlines()])
    assert outs[1] == outs[2]
    fair, biased = outs[0], outs[1]
    assert [c for c in fair if c["table_id"] != BIASED] == [c for c in biased if c["table_id"] != BIASED]
    assert [c for c in fair if c["table_id"] == BIASED] != [c for c in biased if c["table_id"] == BIASED]
    assert main(["simulate", "--biased-table", "no-such-table", "--quiet"]) == 2


# ------------------------------------------------------------------ the statistics, against brute force
def test_binomial_upper_tail_is_exact() -> None:
    n, p = 30, Fraction(1, 7)
    for k in (0, 1, 5, 12, 30):
        exact = sum(comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1))
        assert binomial_upper(k, n, float(p)) == pytest.approx(float(exact), rel=1e-9)


def test_holm_adjusts_step_down_and_keeps_the_order() -> None:
    found = [Finding("table", str(i), None, None, p) for i, p in enumerate([0.04, 0.001, 0.03, 0.5])]
    adjusted = holm(found, 0.01)
    assert [f.p_adjusted for f in adjusted] == pytest.approx([0.09, 0.004, 0.09, 0.5])
    assert [f.flagged for f in adjusted] == [False, True, False, False]


def test_bennett_bounds_the_true_tail_of_a_jackpot_bet() -> None:
    """20 lines of a bet paying 1000 with probability 1/1000 (else 0): one hit is
    likely enough (2%) not to be an anomaly; a normal tail would call it one."""
    mean, var, top, n = Fraction(1), Fraction(999), Fraction(1000), 20
    g = Group(None, None, None, "table", lines=n, staked=n, returned=Fraction(1000), expected=mean * n,
              variance=var * n, tail=top - mean)
    true_tail = 1 - (Fraction(999, 1000)) ** n
    assert bennett(float(g.returned - g.expected), float(g.variance), float(g.tail)) >= float(true_tail)
    assert rtp_p_value(g) > 0.01


def test_a_dealer_voiding_far_more_than_the_studio_is_flagged() -> None:
    rows = [{"dealer_id": f"d{i}", "rounds": 500, "voided": 3, "human_errors": 2} for i in range(6)]
    rows.append({"dealer_id": "d-bad", "rounds": 200, "voided": 25, "human_errors": 2})
    found = holm(ops_findings(rows), 0.001)
    flagged = {(f.level, f.dealer_id) for f in found if f.flagged}
    assert flagged == {("void_rate", "d-bad")}


# ------------------------------------------------------------------ the exact math
def test_every_tested_bet_has_a_positive_variance_and_a_house_edge() -> None:
    for key in exact_bets():
        m = bet_math(*key)
        assert m is not None and m.variance > 0 and 0 < m.mean < 1 < m.top, key
    assert bet_math("blackjack/live-8d", 1, "main") is None  # documented: depends on the players' play


def _check_exact_math(*, long: bool) -> None:
    from tests.support.monitor_distributions import all_distributions, moments

    fresh = all_distributions(long=long)
    for (ruleset, bet), dist in fresh.items():
        m = bet_math(ruleset, 1, bet)
        assert m is not None and (m.mean, m.variance, m.top) == moments(dist), (ruleset, bet)
    if long:
        assert sorted((r, 1, b) for r, b in fresh) == exact_bets()


def test_exact_math_equals_a_fresh_enumeration_through_ops_rtp() -> None:
    """Baccarat, the blackjack Pair, Teen Patti Pair Plus (about 2 s of CPU)."""
    _check_exact_math(long=False)


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("LEDGER_SLOW"), reason="Teen Patti hands: seconds of CPU; LEDGER_SLOW=1 runs it")
def test_exact_math_of_every_bet_equals_a_fresh_enumeration() -> None:
    _check_exact_math(long=True)


@given(st.integers(-10**12, 10**12), st.integers(-10**9, 10**9).filter(bool))
def test_ratio_text_is_decimal_text_of_the_fraction(num: int, den: int) -> None:
    """The monitor's integer form of an observed RTP: the same text as the Fraction's, halves to even."""
    assert ratio_text(num, den) == decimal_text(Fraction(num, den))


@pytest.mark.parametrize(("num", "den"), [(1, 2 * 10**6), (3, 2 * 10**6), (-1, 2 * 10**6), (-3, -2 * 10**6),
                                          (5, 10**7), (15, 10**7), (1, 3), (-2, 3), (0, 7)])
def test_ratio_text_rounds_halves_as_round_does(num: int, den: int) -> None:
    assert ratio_text(num, den) == decimal_text(Fraction(num, den))


def test_bet_math_texts_are_the_exact_figures_as_text() -> None:
    for key in exact_bets():
        math = bet_math(*key)
        assert math is not None
        assert bet_math_texts(*key) == (decimal_text(math.mean), math.sd_text())
    assert bet_math_texts("baccarat/live-8d", 1, "no_such_bet") == (None, None)
