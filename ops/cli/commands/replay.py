"""`ledger replay ROUND`: one round's timeline, state after each step, and its
settlement recomputed on a fresh domain model, bet by bet (projections/replay.py)."""
from __future__ import annotations

import argparse
import json
import sys
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from domain.money import format_minor
from domain.text import escaped
from ledger.records import Opened, Record, Voided
from ops.cli.errors import CliError, ErrorCode, usage
from ops.cli.options import (
    add_command,
    add_json_argument,
    add_operator_argument,
    int_range,
    operator_scope,
    round_uuid_of,
)

if TYPE_CHECKING:  # imported lazily at run time: keeps --help fast
    from ledger.eventlog import EventLog
    from projections.sql import Db

EPILOG = """\
ROUND is the round's UUID or TABLE#ROUND_NO (e.g. bacc-1#12).

The settlement is recomputed from the recorded facts (bets, cards, decisions,
follows) under the recorded rule-set id and version with a FRESH model of
the rules (independent of how the ledger recorded the round) and compared
with the recorded Settled results bet by bet. Any difference is a finding; nothing is corrected.
Finding kinds: docs/audit.md.

Examples:
  ledger replay bacc-1#12
  ledger replay bj-live-1#3 --at 5          # the round as of its 5th event
  ledger replay bj-live-1#3 --json | jq '.results'
  ledger replay tp-1#9 --proof               # also each event's audit-chain hash
  ledger replay bj-live-1#3 --html dispute.html        # open it in any browser, offline
  ledger replay bj-live-1#3 --bundle dispute.zip --manifest exports/day1/manifest.json
  python3 verify.py dispute.zip               # (verify.py is inside the bundle) exit 0 ok, 1 findings

Exit status: 0 no findings; 1 findings (printed) or no such round; 2 bad arguments or store.
"""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = add_command(
        sub, "replay", "replay one round: timeline, state per step, settlement recomputed and compared", run,
        description="Replay one round for a dispute: every event with its position, studio and server time, "
        "the state after each step, and each bet's payout recomputed under the recorded rule set.", epilog=EPILOG,
    )
    p.add_argument("round", metavar="ROUND", help="round UUID or TABLE#ROUND_NO")
    p.add_argument("--at", type=int_range(1), metavar="N", help="show the round as of its N-th event (1-based)")
    add_json_argument(p, "print machine-readable JSON")
    p.add_argument("--proof", action="store_true",
                   help="also print each event's audit-chain hash and the store's head hash, from the audit chain "
                   "kept in the store (extended first; the round's events checked against it: chain_mismatch "
                   "if one changed after it was chained)")
    p.add_argument("--html", metavar="FILE",
                   help="write the dispute page: one self-contained HTML file (no network), cards, a step control, "
                   "state per step, settlement with explanations, refunds, the chain proof")
    p.add_argument("--bundle", metavar="FILE.zip",
                   help="write a self-verifying dispute bundle: the round's canonical events with their Merkle proof "
                   "against the chain's tree root, the page, replay.json and verify.py (python3 verify.py FILE.zip, "
                   "standard library only); its size does not grow with the store")
    p.add_argument("--manifest", metavar="PATH",
                   help="with --bundle: anchor the proof to this audit export's manifest.json (its tree_root and head) "
                   "(default: the store's head now)")
    add_operator_argument(p, "bets in full, the other operators' only as a count and a total (with --json, --html "
                             "or --bundle: the bundle's other operators' events redacted, their hashes still proved)")
    p.add_argument("--db", metavar="URL", help="store URL (default: LEDGER_DB or sqlite:///./casino-ledger.db)")


def run(args: argparse.Namespace) -> int:
    from ledger.eventlog import EventLog
    from projections.audit_store import round_events
    from projections.document import replay_document
    from projections.redaction import redact_document
    from projections.replay import recompute, table_config_findings

    round_id = round_uuid_of(args.round)
    if args.operator is not None and not (args.json or args.html or args.bundle):
        raise usage("--operator needs --json, --html or --bundle (the text timeline names every player)")
    log = EventLog.open(args.db)
    events = round_events(log, round_id)
    if not events:
        print(f"no round {args.round} (id {round_id}) in this store", file=sys.stderr)
        return 1
    if args.at is not None:
        if not 1 <= args.at <= len(events):
            raise usage(f"--at must be 1..{len(events)} for this round")
        events = events[: args.at]
    replay = recompute(events)
    replay.findings.extend(table_config_findings(events, log.table_history))
    wants_proof = args.proof or args.html or args.bundle
    if args.bundle:
        return _bundle(args, log, round_id, events, replay)
    proof = _checked_proof(log, {e.position for e in events}) if wants_proof else None
    document = replay_document(round_id, events, replay, proof, args.at, args.round)
    if args.html:
        return _write_files(args, log, document)
    if args.json:
        print(json.dumps(redact_document(document, operator_scope(args)), indent=2, default=str))
    else:
        _print_text(round_id, events, replay, proof, args.at, document)
    return 1 if replay.findings else 0


def _checked_proof(log: EventLog, positions: set[int]) -> dict[str, Any]:
    """The round's proof from the audit chain kept in the store (extended first; its events
    checked against it), as the bundle's: no pass over the whole chain."""
    from projections import chain_index

    try:
        return chain_index.checked_proof(log, positions)
    except chain_index.ChainMismatch as exc:
        raise CliError(ErrorCode.CHAIN_MISMATCH, str(exc)) from None


def _bundle(args: argparse.Namespace, log: EventLog, round_id: Any, events: list[Record], replay: Any) -> int:
    """--bundle: the proof from the audit chain kept in the store (projections/chain_index.py,
    extended first), so the bundle costs the same at any store size."""
    from projections import chain_index
    from projections.document import replay_document
    from projections.sql import Db

    views = Db.for_store(log.backend)
    try:
        try:
            chain_index.extend(log, views)
        except chain_index.ChainMismatch as exc:  # say so, do not bundle
            raise CliError(ErrorCode.CHAIN_MISMATCH, str(exc)) from None
        proof = chain_index.proof(views, {e.position for e in events})
        document = replay_document(round_id, events, replay, proof, args.at, args.round)
        return _write_files(args, log, document, views)
    finally:
        views.close()


def _write_files(args: argparse.Namespace, log: EventLog, document: dict[str, Any], views: Db | None = None) -> int:
    """--html and --bundle: the dispute page and the self-verifying bundle (ops/bundle/build.py)."""
    from ops.bundle.build import BundleError, write_bundle
    from projections.redaction import redact_document
    from projections.replay_page import render_html

    try:
        if args.html:
            with open(args.html, "w", encoding="utf-8") as f:
                f.write(render_html(redact_document(document, operator_scope(args))))
            print(f"wrote {args.html}", file=sys.stderr)
        if args.bundle:
            summary = write_bundle(args.bundle, log, document, manifest_path=args.manifest, views=views,
                                   scope=operator_scope(args))
            print(f"wrote {args.bundle}: {summary}", file=sys.stderr)
    except BundleError as exc:
        raise CliError(ErrorCode.BUNDLE_REFUSED, str(exc)) from None
    except OSError as exc:  # an output: not the input_unreadable an OSError means elsewhere
        raise CliError(ErrorCode.OUTPUT_UNWRITABLE, f"{exc.filename or ''}: {exc.strerror or exc}") from None
    return 1 if document["findings"] else 0


def _opened(events: list[Record]) -> Opened | None:
    return events[0] if isinstance(events[0], Opened) else None


def _void(events: list[Record]) -> Voided | None:
    """The void that ended the round (a void is final: nothing is settled after it)."""
    return next((e for e in reversed(events) if isinstance(e, Voided)), None)


def _print_text(round_id: Any, events: list[Record], replay: Any, proof: Any, at: int | None,
                document: dict[str, Any]) -> None:
    from projections.replay import describe_step

    opened = _opened(events)
    label = f"{opened.table_id}#{opened.round_no}" if opened else (document.get("round") or str(round_id))
    print(f"Round {label}  id {round_id}" + (f"  (as of event {at})" if at else ""))
    if opened:
        print(f"rule set {opened.ruleset_id} v{opened.ruleset_version}  recorded hash {opened.ruleset_hash}")
    print(f"\nTimeline ({len(replay.steps)} events; times are server time, then studio time):")
    for step in replay.steps:
        print("  " + describe_step(step))
        if proof and step.position in proof["events"]:
            p = proof["events"][step.position]
            print(f"       chain seq {p['seq']} hash {p['hash']}")
        state = compact_state(step.state)
        if state:
            print(f"       state: {state}")
    void = _void(events)
    if void is None or replay.results:
        _print_results(replay, opened.currency if opened else None,
                       {st["settlement_no"]: st["status"] for st in document["settlements"]})
    if void is not None:
        _print_void(void, opened.currency if opened else None)
    _print_in_force(document, opened.currency if opened else None)
    if proof:
        print(f"\nStore head: position {proof['head_position']} hash {proof['head_hash']} "
              "(compare with a published audit manifest's head_hash)")
    print()
    if replay.findings:
        print(f"FINDINGS ({len(replay.findings)}):")
        for f in replay.findings:
            print(f"  {f}")
    else:
        print(f"No findings: {_verdict(void, replay)}")


def _print_in_force(document: dict[str, Any], currency: str | None) -> None:
    """What stands now (projections/round_story.py): a reversed settlement above is not the result."""
    from projections.round_story import story_lines

    print("\nWhat is in force:")
    for line in story_lines(document, currency):
        print(f"  {line}")


def _verdict(void: Voided | None, replay: Any) -> str:
    """What a clean replay established, and no more."""
    if void is not None:
        return "every recorded fact replays, and the void refunded every amount put in."
    if not replay.results:
        return "every recorded fact replays (nothing settled yet)."
    return "every recorded fact replays, and every recorded payout equals the recomputed one."


def _print_void(void: Voided, currency: str | None) -> None:
    total = sum(r.amount_minor for r in void.refunds)
    print(f"\nVOIDED at position {void.position}: {void.cause} by {void.by}"
          + (f" ({escaped(void.note)})" if void.note else "") + f"; {len(void.refunds)} refund(s), "
          f"{format_minor(total, currency)} in all:")
    for r in void.refunds:
        print(f"  refund {r.bet_id:<24} {r.player_id:<12} {format_minor(r.amount_minor, currency)}")


def _print_results(replay: Any, currency: str | None, status: dict[int, str] | None = None) -> None:
    if not replay.results:
        print("\nNo settlement in these events.")
        return
    current = None
    for check in replay.results:
        if check.settlement_no != current:
            current = check.settlement_no
            mark = " REVERSED (not in force)" if (status or {}).get(current) == "reversed" else ""
            print(f"\nSettlement {current} (position {check.position}){mark}, recomputed on a fresh model:")
        mark = "ok " if check.agrees else "DIFF"
        rec, new = check.recorded, check.recomputed
        line = rec or new or {}
        print(f"  [{mark}] {check.bet_id:<14} {line.get('player_id', ''):<12} {line.get('bet_type', ''):<14} "
              f"recorded {_short(rec, currency)}  |  recomputed {_short(new, currency)}")
        explanation = (new or rec or {}).get("explanation")
        if explanation:
            print(f"         {explanation}")


def _short(r: dict[str, Any] | None, currency: str | None) -> str:
    """`win: staked 50.00, returned 75.00 EUR`: money as people read it (--json keeps minor units)."""
    if r is None:
        return "—"
    rem = (f" (+{format_minor(Fraction(r['remainder_num'], r['remainder_den']), currency)} kept by rounding)"
           if r.get("remainder_num") else "")
    return (f"{r['outcome']}: staked {format_minor(r['staked_minor'])}, "
            f"returned {format_minor(r['returned_minor'], currency)}{rem}")


def compact_state(view: dict[str, Any] | None) -> str:
    """One line from a model's view(): each hand's cards and total, and the phase."""
    if not view:
        return ""
    parts = []
    for key, value in view.items():
        if isinstance(value, dict) and "cards" in value:
            parts.append(_hand(key, value))
    for hand in view.get("hands", []) or []:
        if isinstance(hand, dict) and "cards" in hand:
            parts.append(_hand(hand.get("name", "?"), hand))
    phase = view.get("phase")
    result = view.get("result")
    tail = f"  [{phase}]" if phase else ""
    if result:
        tail += f"  {result}"
    return "  ".join(parts) + tail


def _hand(name: str, hand: dict[str, Any]) -> str:
    cards = " ".join(hand.get("cards") or []) or "-"
    total = hand.get("total", hand.get("hand"))
    status = f" {hand['status']}" if hand.get("status") not in (None, "open", "playing") else ""
    return f"{name}: {cards}" + (f" ={total}" if total not in (None, "") else "") + status
