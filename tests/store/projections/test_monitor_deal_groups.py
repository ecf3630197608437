"""ops/gamemath/monitor_stats.deal_groups counts rounds per group and probability before the
exact sums; its groups equal the row-by-row fold (each row's terms added as it comes), field
for field, on a simulated studio's deal rows split into several rows per cell."""
from __future__ import annotations

from fractions import Fraction
from typing import Any

from ops.gamemath.monitor_stats import (
    NOT_PLAYED_OUT,
    STRONG_UP,
    Group,
    _add_indicators,
    _indicator_group,
    deal_groups,
)
from projections.monitor_deal import dealer_key, dealer_outcome_probabilities, up_card_probability
from tests.support.monitor_sim import studio


def _row_by_row(rows: list[dict[str, Any]]) -> list[Group]:
    found: dict[tuple[str, str | None, str | None], Group] = {}
    strong = sum((up_card_probability(u) for u in STRONG_UP), Fraction(0))
    for row in rows:
        key = dealer_key(row["ruleset_id"], row["ruleset_version"])
        probs = dealer_outcome_probabilities(*key) if key is not None else None
        n, up, outcome = row["rounds"], row["up"], row["outcome"]
        for table, dealer in ((row["table_id"], None), (None, row["dealer_id"])):
            g = found.setdefault(("up_card", table, dealer), _indicator_group("up_card", table, dealer))
            _add_indicators(g, n, n if up in STRONG_UP else 0, strong)
            if probs is not None and outcome != NOT_PLAYED_OUT:
                g = found.setdefault(("dealer_bust", table, dealer), _indicator_group("dealer_bust", table, dealer))
                _add_indicators(g, n, n if outcome == "bust" else 0, probs[up]["bust"])
    return [g for g in found.values() if g.variance > 0]


def test_deal_groups_equal_the_row_by_row_fold() -> None:
    rows = studio(7, 60, tables=6)[1]
    # the same rounds as more rows (a view cell per page): the counts per probability add up
    split = [dict(r, rounds=part) for r in rows for part in (r["rounds"] // 2, r["rounds"] - r["rounds"] // 2) if part]
    assert any(r["outcome"] == "bust" for r in rows) and any(r["outcome"] == NOT_PLAYED_OUT for r in rows)
    for given in (rows, split):
        grouped = deal_groups(given)
        assert grouped == _row_by_row(given) and {g.level for g in grouped} == {"up_card", "dealer_bust"}
    assert deal_groups(split) == deal_groups(rows)
