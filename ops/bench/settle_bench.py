"""Settlement speed per game: rounds/s of play + settle through the pure rules
engine, beside a raw baseline measured in the same run (decoding the same
facts: parsing every card and building every bet, no rules).

    python -m ops.bench.settle_bench [--rounds 400] [--seed 7]
"""
from __future__ import annotations

import argparse
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from domain.cards import parse_card
from domain.roundfile import parse_bet, play
from ops.sim.feed_rounds import round_files
from ops.sim.simulator import simulate


def raw_decode(files: list[dict[str, Any]]) -> int:
    n = 0
    for f in files:
        for b in f["bets"]:
            parse_bet(b)
        for s in f["steps"]:
            if "card" in s:
                parse_card(s["card"])
        n += 1
    return n


def settle_all(files: list[dict[str, Any]]) -> int:
    for f in files:
        played = play(f, outcome=False)  # play + settle; the description of what happened is display
        if not played.complete:
            raise SystemExit(f"round did not settle: {played.refusal} at {played.refused_at}")
    return len(files)


def timed(fn: Callable[[list[dict[str, Any]]], int], files: list[dict[str, Any]]) -> float:
    start = time.perf_counter()
    fn(files)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=400, help="rounds per table (5 tables, one per rule set)")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args(argv)
    by_rules: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for f in round_files(simulate(5, args.rounds, args.seed, 0)):
        by_rules[f["ruleset_id"]].append(f)
    print(f"{'rule set':<24}{'rounds':>8}{'settle rounds/s':>18}{'raw decode rounds/s':>22}{'ratio':>8}")
    for rid, files in sorted(by_rules.items()):
        raw_s, settle_s = timed(raw_decode, files), timed(settle_all, files)
        per_s_settle, per_s_raw = len(files) / settle_s, len(files) / raw_s
        print(f"{rid:<24}{len(files):>8}{per_s_settle:>18,.0f}{per_s_raw:>22,.0f}{per_s_settle / per_s_raw:>8.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
