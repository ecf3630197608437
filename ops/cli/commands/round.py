"""`ledger round show ID`: one round's events, cards, bets and settlement.
`ledger round list`: rounds by status, player, table and studio time (projections/round_search.py)."""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from datetime import time
from typing import Any

from domain.money import format_minor
from domain.operators import player_key
from domain.tableconfig import describe_settings
from ledger.eventlog import EventLog
from ops.cli.errors import usage
from ops.cli.options import (
    add_command,
    add_db_argument,
    add_json_argument,
    add_operator_argument,
    add_period_arguments,
    check_period,
    int_range,
    open_views,
    operator_scope,
    round_uuid_of,
    say_cut,
)
from projections import queries
from projections.csvtext import csv_lines
from projections.round_search import PLAYER_SORTS, SORTS, RoundQuery
from projections.rounds import LIST_LIMIT_MAX, STATUSES


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = add_command(sub, "round", "look at one round")
    rsub = p.add_subparsers(dest="round_command", metavar="ACTION")
    show = add_command(rsub, "show", "events, cards, bets and settlement of one round", run_show,
                       description="ID is the round UUID or TABLE#ROUND_NO, e.g. bacc-1#12.", wrap=True)
    show.add_argument("id", metavar="ID")
    show.add_argument("--db", help="store URL (default: $LEDGER_DB or sqlite:///./casino-ledger.db)")
    add_json_argument(show, "machine-readable JSON")
    listing = add_command(rsub, "list",
                          "rounds by status, player, table and studio time (--json: one object per line; --csv)",
                          run_list, description=LIST_DESCRIPTION, epilog=LIST_EPILOG)
    listing.add_argument("--status", choices=STATUSES,
                         help="only rounds in this state now; reversed: every round with a settlement reversed")
    listing.add_argument("--player", metavar="P", help="a player's rounds, with the player's own stake, result and "
                         "net (P: the id or its start, any case)")
    listing.add_argument("--table", metavar="T", help="only tables whose id starts with T (any case)")
    listing.add_argument("--dealer", metavar="D", help="only this dealer")
    add_period_arguments(listing, "rounds opened (studio time)")
    listing.add_argument("--time-from", type=time_of_day, metavar="HH:MM",
                         help="only rounds opened at or after this time of day (UTC), any day")
    listing.add_argument("--time-to", type=time_of_day, metavar="HH:MM",
                         help="only rounds opened before this time of day (UTC; before --time-from: past midnight)")
    listing.add_argument("--sort", choices=SORTS, default="time",
                         help="time (default), table, stake or net (the player's: with --player); "
                              "a leading - for descending, e.g. --sort=-net")
    listing.add_argument("--limit", type=int_range(1, LIST_LIMIT_MAX), metavar="N",
                         help=f"at most N rounds (1..{LIST_LIMIT_MAX})")
    add_db_argument(listing)
    add_operator_argument(listing, "rounds (with --player: PLAYER as that operator names it)")
    shape = listing.add_mutually_exclusive_group()
    add_json_argument(shape, "one JSON object per line: round, round_id, status, game, table_id, studio_time, ...")
    shape.add_argument("--csv", action="store_true", help="CSV with a header line (money as plain amounts)")


LIST_DESCRIPTION = """\
Rounds in the order the studio opened them (studio time, then table and
number), from the `rounds` view (caught up first). Status is where a round
stands now: open, paused, settled, reversed (a settlement reversed, waiting
for its void or resettlement) or voided; --status reversed lists every
corrected round (a settlement reversed, whatever came after), each marked
with its count of reversals. --player and --table match any id that starts
with what is given, in any case. With --player: a line per round and matching
player, with that player's stake, result and net. A void that arrived before
its round opened has no table or number and is not listed (`ledger refunds`
shows it). The text ends with the count of rounds matched."""
LIST_EPILOG = """\
Examples:
  ledger round list --status voided
  ledger round list --status reversed                     # every corrected round
  ledger round list --player p00 --sort=-net --limit 20   # players p00..., worst losses last
  ledger round list --table bacc --since 2026-11-21 --until 2026-11-22 --time-from 20:00 --time-to 23:00
  ledger round list --status open --json | jq -r .round
  ledger round list --player p0008 --csv > p0008.csv
"""


def time_of_day(text: str) -> time:
    """An argparse type: HH:MM or HH:MM:SS."""
    try:
        return time.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a time of day (HH:MM)") from None


time_of_day.__name__ = "time of day"  # argparse names the type in its messages


def run_list(args: argparse.Namespace) -> int:
    check_period(args)
    if args.sort.lstrip("-") in PLAYER_SORTS and not args.player:
        raise usage(f"--sort {args.sort} needs --player (it is the player's own figure)")
    scope = operator_scope(args)
    player = player_key(args.operator, args.player) if args.player else None
    q = RoundQuery(player=player, scope=scope, table=args.table, status=args.status, dealer=args.dealer, since=args.since,
                   until=args.until, time_from=args.time_from, time_to=args.time_to, sort=args.sort)
    with open_views(args.db) as views:
        found = queries.round_list(views.db, q, limit=args.limit)
    if args.csv:
        sys.stdout.writelines(csv_lines(queries.ROUND_CSV, queries.round_csv_rows(found.rounds)))
        return 0
    listed = [asdict(r) for r in found.rounds]
    _print_rounds(listed, args.json, bool(args.player), found.count)
    if len(listed) < found.count:
        say_cut("round list", len(listed), "a larger --limit, or a narrower --since/--until, --table or --status",
                args.json)
    return 0


def _print_rounds(listed: list[dict[str, Any]], as_json: bool, by_player: bool, count: int) -> None:
    if as_json:
        sys.stdout.writelines(json.dumps(r) + "\n" for r in listed)
        return
    if not listed:
        print("no rounds match", file=sys.stderr)
        return
    _print_table(listed, by_player)
    shown = f"{len(listed):,} of {count:,}" if len(listed) < count else f"{count:,}"
    print(f"{shown} {'round' if count == 1 else 'rounds'}" + (" (a line per player and round)" if by_player else ""))


def _print_table(listed: list[dict[str, Any]], by_player: bool) -> None:
    """A table for people: money as money, a corrected round marked in its own column."""
    width = max(len(r["round"]) for r in listed)
    for r in listed:
        r["corrected"] = f"{r['reversals']} reversed" if r["reversals"] else "-"
    head = f"{'round':<{width}}  {'status':<8}  {'corrected':<10}  "
    if by_player:
        who = max(len("player"), *(len(r["player_id"]) for r in listed))
        print(f"{head}{'player':<{who}}  {'studio time (UTC)':<23}  {'stake':>14}  {'net':>14}  result")
        for r in listed:
            net = "-" if r["player_net_minor"] is None else format_minor(r["player_net_minor"], r["currency"])
            print(f"{r['round']:<{width}}  {r['status']:<8}  {r['corrected']:<10}  {r['player_id']:<{who}}  "
                  f"{r['studio_time'][:23]:<23}  {format_minor(r['player_staked_minor'], r['currency']):>14}  "
                  f"{net:>14}  {r['player_result']}")
        return
    cause = max(len("void cause"), *(len(r["void_cause"] or "") for r in listed))
    print(f"{head}{'game':<10}  {'studio time (UTC)':<23}  {'void cause':<{cause}}  round id")
    for r in listed:
        print(f"{r['round']:<{width}}  {r['status']:<8}  {r['corrected']:<10}  {r['game']:<10}  "
              f"{r['studio_time'][:23]:<23}  {r['void_cause'] or '-':<{cause}}  {r['round_id']}")


def as_money(value: Any, currency: str | None) -> Any:
    """An event's fields for text: each `..._minor` field under the name without the
    suffix, an integer as money (`"stake": "5.00 EUR"`, not `"stake_minor": 500`);
    --json keeps them."""
    if isinstance(value, dict):
        return {(k.removesuffix("_minor")): (format_minor(v, currency) if k.endswith("_minor") and type(v) is int
                                             else as_money(v, currency))
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [as_money(v, currency) for v in value]
    return value


def run_show(args: argparse.Namespace) -> int:
    round_uuid = round_uuid_of(args.id)
    log = EventLog.open(args.db)
    try:
        detail = queries.round_detail(log, round_uuid, args.id)
    finally:
        log.close()
    if detail is None:
        print(f"no round {args.id} in the store", file=sys.stderr)
        return 1
    info = asdict(detail)
    story = info["story"]
    if args.json:
        print(json.dumps(info, indent=2, default=str))
        return 0
    if story["tombstone"]:
        return _print_tombstone(info, story)
    print(f"round {info['table_id']}#{info['round_no']}  {info['round_id']}")
    print(f"  {info['ruleset']}  {info['currency']}  shoe {info['shoe_id']} (round {info['round_in_shoe']})  "
          f"phase {info['phase']}")
    if info["table_config"]:
        config = info["table_config"]
        print(f"  at table configuration v{config['version']} ({config['hash'][:12]}): "
              f"{describe_settings(config['settings'])}")
    for b in info["bets"]:
        print(f"  bet {b['bet_id']:<16} {b['player_id']:<12} {b['spot']:<10} {b['bet_type']:<14} "
              f"{format_minor(b['stake_minor'])}")
    print("  cards: " + " ".join(f"{c['card']}>{c['target']}" for c in info["cards"]))
    for e in info["events"]:
        extra = {k: v for k, v in e.items() if k not in ("version", "event", "command_id", "studio_time",
                                                           "recorded_at", "postings", "results")}
        print(f"  {e['version']:>3} {e['event']:<19} {e['command_id']:<28} "
              f"{json.dumps(as_money(extra, info['currency']), default=str, ensure_ascii=False)[:120]}")
    status = {st["settlement_no"]: st["status"] for st in story["settlements"]}
    for s in info["settlements"]:
        mark = "REVERSED, not in force" if status.get(s["settlement_no"]) == "reversed" else "in force"
        print(f"  settlement {s['settlement_no']} ({mark}):")
        for r in s["results"]:
            print(f"    {r['bet_id']:<16} {r['outcome']:<9} staked {format_minor(r['staked_minor'])} "
                  f"returned {format_minor(r['returned_minor'])}  {r['explanation']}")
    _print_story(story, info["currency"])
    return 0


def _print_story(story: dict[str, Any], currency: str | None) -> None:
    from projections.round_story import story_lines

    print("what is in force:")
    for line in story_lines(story, currency):
        print(f"  {line}")


def _print_tombstone(info: dict[str, Any], story: dict[str, Any]) -> int:
    """A void that came before the round opened: no table, rules or cards, only the void."""
    t = story["tombstone"]
    name = f"{t['table_id']}#{t['round_no']}" if t["table_id"] else "(table and number not recorded)"
    print(f"round {name}  {info['round_id']}  phase voided (before it opened)")
    _print_story(story, None)
    return 0
