"""`ledger round show ID`: one round's events, cards, bets and settlement.
`ledger round list`: rounds by status, table and studio time, from the `rounds` view."""
from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Any
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError

from domain.money import format_minor
from domain.tableconfig import describe_settings
from ledger.round import round_id_for
from ledger.store import open_app, require_ledger
from ops.commands.project import add_db_argument, open_views
from ops.errors import usage
from ops.options import add_period_arguments, check_period, help_for, int_range
from projections.rounds import LIST_LIMIT_MAX, STATUSES, round_list_rows

REF_RE = re.compile(r"^(?P<table>.+)#(?P<no>\d{1,12})$")
COMMON = {"originator_id", "originator_version", "timestamp", "command_id", "studio_time"}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("round", help="look at one round")
    rsub = p.add_subparsers(dest="round_command", metavar="ACTION")
    show = rsub.add_parser("show", help="events, cards, bets and settlement of one round",
                           description="ID is the round UUID or TABLE#ROUND_NO, e.g. bacc-1#12.")
    show.add_argument("id", metavar="ID")
    show.add_argument("--db", help="store URL (default: $LEDGER_DB or sqlite:///./casino-ledger.db)")
    show.add_argument("--json", action="store_true", help="machine-readable JSON")
    show.set_defaults(func=run_show)
    listing = rsub.add_parser(
        "list", help="rounds by status, table and studio time (one JSON object per line with --json)",
        description=LIST_DESCRIPTION, epilog=LIST_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    listing.add_argument("--status", choices=STATUSES, help="only rounds in this state now")
    listing.add_argument("--table", metavar="T", help="only this table")
    add_period_arguments(listing, "rounds opened (studio time)")
    listing.add_argument("--limit", type=int_range(1, LIST_LIMIT_MAX), metavar="N",
                         help=f"at most N rounds (1..{LIST_LIMIT_MAX})")
    add_db_argument(listing)
    listing.add_argument("--json", action="store_true",
                         help="one JSON object per line: round, round_id, status, game, table_id, studio_time, ...")
    listing.set_defaults(func=run_list)
    p.set_defaults(func=help_for(p))


LIST_DESCRIPTION = """\
Rounds in the order the studio opened them (studio time, then table and
number), from the `rounds` view (caught up first). Status is where a round
stands now: open, paused, settled, reversed (a settlement reversed, waiting
for its void or resettlement) or voided. A void that arrived before its round
opened has no table or number and is not listed (`ledger refunds` shows it)."""
LIST_EPILOG = """\
Examples:
  ledger round list --status voided
  ledger round list --table bacc-1 --since 2026-11-21 --until 2026-11-22
  ledger round list --status open --json | jq -r .round
"""
LIST_FIELDS = ("round", "round_id", "status", "game", "table_id", "round_no", "studio_time", "ruleset_id",
               "ruleset_version", "currency", "dealer_id", "settlement_no", "opened_at", "closed_at", "void_cause")


def run_list(args: argparse.Namespace) -> int:
    check_period(args)
    with open_views(args.db) as views:
        rows = round_list_rows(views.db, status=args.status, table_id=args.table, since=args.since,
                               until=args.until, limit=args.limit)
    listed = [{k: (f"{r['table_id']}#{r['round_no']}" if k == "round" else r[k]) for k in LIST_FIELDS} for r in rows]
    if args.json:
        sys.stdout.writelines(json.dumps(r) + "\n" for r in listed)
        return 0
    if not listed:
        print("no rounds match", file=sys.stderr)
        return 0
    width = max(len(r["round"]) for r in listed)
    cause = max(len("void cause"), *(len(r["void_cause"] or "") for r in listed))
    print(f"{'round':<{width}}  {'status':<8}  {'game':<10}  {'studio time (UTC)':<23}  {'void cause':<{cause}}  "
          "round id")
    for r in listed:
        print(f"{r['round']:<{width}}  {r['status']:<8}  {r['game']:<10}  {r['studio_time'][:23]:<23}  "
              f"{r['void_cause'] or '-':<{cause}}  {r['round_id']}")
    return 0


def parse_ref(ref: str) -> UUID:
    m = REF_RE.match(ref)
    if m:
        return round_id_for(m.group("table"), int(m.group("no")))
    return UUID(ref)


def describe(app: Any, round_uuid: UUID) -> dict[str, Any]:
    rnd = app.get_round(round_uuid)
    events = []
    for e in app.repository.event_store.get(round_uuid):
        fields = {k: v for k, v in vars(e).items() if k not in COMMON}
        events.append({"version": e.originator_version, "event": type(e).__name__, "command_id": e.command_id,
                       "studio_time": e.studio_time, "recorded_at": e.timestamp.isoformat(), **fields})
    return {
        "round_id": str(rnd.id), "table_id": rnd.table_id, "round_no": rnd.round_no, "game": rnd.game,
        "ruleset": f"{rnd.rules.id} v{rnd.rules.version}" if rnd.rules else None, "currency": rnd.currency,
        "table_config": ({"version": rnd.table_config[0], "hash": rnd.table_config[1],
                          "settings": rnd.table_settings.as_dict() if rnd.table_settings else {}}
                         if rnd.table_config else None),
        "shoe_id": rnd.shoe_id, "round_in_shoe": rnd.round_in_shoe, "phase": rnd.phase, "paused": rnd.paused,
        "voided": rnd.voided, "balance_minor": rnd.balance_minor,
        "bets": [{"bet_id": b.bet_id, "player_id": b.player_id, "spot": b.spot, "bet_type": b.bet_type,
                  "stake_minor": b.stake_minor, "mode": b.mode} for b in rnd.bets.values()],
        "cards": [{"seq_no": s, "card": c, "target": t} for s, c, t in rnd.cards],
        "settlements": rnd.settlements, "view": rnd.model.view() if rnd.model else None, "events": events,
    }


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
    try:
        round_uuid = parse_ref(args.id)
    except ValueError:
        raise usage(f"{args.id!r} is neither a round UUID nor TABLE#ROUND_NO") from None
    require_ledger(args.db)
    app = open_app(args.db)
    try:
        info = describe(app, round_uuid)
    except AggregateNotFoundError:
        print(f"no round {args.id} in the store", file=sys.stderr)
        return 1
    finally:
        app.close()
    story = _story(args.db, round_uuid, args.id)
    if args.json:
        print(json.dumps({**info, "story": story}, indent=2, default=str))
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


def _story(db: str | None, round_uuid: UUID, ref: str) -> dict[str, Any]:
    """What is in force (projections/round_story.py), from the round's records and a replay,
    the same the dispute page and `ledger replay` show."""
    from ledger.eventlog import EventLog
    from projections.replay import recompute
    from projections.round_story import round_story

    events = EventLog.open(db).round_records(round_uuid)
    return round_story(round_uuid, events, recompute(events).outcome, ref)


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
