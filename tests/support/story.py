"""A player's story as the read service answers it (`ledger recall --json`, GET
/v1/recall/{player}, queries.player_story as dicts): the checks every reader of it shares."""
from __future__ import annotations

from typing import Any


def assert_adds_up(rounds: list[dict[str, Any]], totals: dict[str, dict[str, Any]], *, every_round: bool) -> None:
    """Rounds in ledger order; each row adds up (net = returned + refunded - staked, after =
    before + net) and starts where the row before it ended; the newest row ends at the
    period's closing balance. With `every_round` (the rounds are the whole period), the first
    row starts at the opening balance and the totals are the rows' sums."""
    assert [r["seq"] for r in rounds] == sorted(r["seq"] for r in rounds)
    last: dict[str, int] = {}
    for r in rounds:
        assert r["net_minor"] == r["returned_minor"] + r["refunded_minor"] - r["staked_minor"], r
        assert r["balance_after_minor"] == r["balance_before_minor"] + r["net_minor"], r
        if r["currency"] in last:
            assert r["balance_before_minor"] == last[r["currency"]], r
        elif every_round:
            assert r["balance_before_minor"] == totals[r["currency"]]["opening_minor"], r
        last[r["currency"]] = r["balance_after_minor"]
    for cur, t in totals.items():
        assert t["closing_minor"] == t["opening_minor"] + t["net_minor"]
        if cur in last:
            assert last[cur] == t["closing_minor"], cur
        if every_round:
            mine = [r for r in rounds if r["currency"] == cur]
            assert t["rounds"] == len(mine)
            for name in ("staked_minor", "returned_minor", "refunded_minor", "net_minor"):
                assert t[name] == sum(r[name] for r in mine), name
