"""`ledger rtp`: exact return to player of every bet type, by exhaustive enumeration
through the engine's own settlement functions (see ops/rtp.py)."""
from __future__ import annotations

import argparse
import json
import time

GAMES = ("baccarat", "teen-patti")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "rtp",
        help="exact game math: probability of win/push/lose and RTP of every bet type",
        description="Enumerate every deal exhaustively (weighted by card counts, no sampling) "
        "under the v1 rule sets and print each bet type's win/push/lose probability and RTP.",
    )
    parser.add_argument("--game", choices=(*GAMES, "all"), default="all")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    from ops import rtp  # imported lazily: the CLI starts fast for other commands

    games = GAMES if args.game == "all" else (args.game,)
    report: dict[str, dict[str, object]] = {}
    for game in games:
        started = time.perf_counter()
        rows = rtp.tables(game)
        report[game] = {"seconds": round(time.perf_counter() - started, 2), "bets": [r.as_dict() for r in rows]}
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    for game, data in report.items():
        print(f"{game}  (exhaustive enumeration, {data['seconds']} s)")
        print(f"  {'bet type':<28}{'win':>10}{'push':>10}{'lose':>10}{'RTP':>10}")
        for row in data["bets"]:
            print(f"  {row['bet']:<28}{row['win']:>10.4%}{row['push']:>10.4%}{row['lose']:>10.4%}{row['rtp']:>10.4%}")
        print()
    return 0
