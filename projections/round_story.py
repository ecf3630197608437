"""What is in force in one round, and what was corrected: pure, no I/O.

A round's settlement can be reversed (`reverse_settlement`) and the round then
voided (refunds) or settled again. A reader of the replay (the dispute page,
`ledger replay`, `ledger round show`) must never take a reversed settlement for
the result, so `round_story(...)` says, from the recorded events alone:

- `status`: open | paused | settled | reversed | voided (where the round stands now);
- `settlements`: each one `in_force` or `reversed` (by which command, who, when, why);
- `bets`: each bet with what it put in, what is in force for it (the returned amount
  of the settlement in force, or its refund) and the reversed lines beside it;
- `players`: each player's final net for the round, which is the sum of the postings
  on the player's account (the money actually moved), beside its parts;
- `headline`: one line a handler can read out (the winner and the hands' names,
  or the void), and whether that result is in force;
- `tombstone`: a void that arrived before the round opened, with what it carries.

Amounts are integers in minor units; texts show them as money (format_minor).
"""
from __future__ import annotations

from typing import Any
from uuid import UUID

from domain.money import format_minor, player_account
from domain.text import escaped
from ledger.ids import round_id_for
from ledger.records import (
    BetPlaced,
    BettingClosed,
    DecisionTaken,
    FollowDecided,
    Opened,
    Paused,
    Record,
    Resumed,
    Settled,
    SettlementReversed,
    Voided,
    postings_of,
)
from projections.audit import iso_utc
from projections.audit_store import round_ref_parts

PLAYER = player_account("")  # the prefix of a player's account


def ref_parts(round_id: UUID | str, ref: str | None) -> tuple[str, int] | None:
    """(table, round number) of a TABLE#NO reference that names this round id. A tombstone
    records neither (its Voided event has no table), so only the reference can name it."""
    parts = round_ref_parts(ref) if ref else None
    if parts is None or str(round_id_for(*parts)) != str(round_id):
        return None
    return parts


def _stamp(e: Record) -> dict[str, Any]:
    return {"position": e.position, "command_id": e.command_id, "server_time": iso_utc(e.timestamp),
            "studio_time": e.studio_time}


def round_story(round_id: UUID | str, events: list[Record], outcome: dict[str, Any] | None,
                ref: str | None = None) -> dict[str, Any]:
    """See the module doc. `outcome` is the replay's (projections/replay.py `Replay.outcome`)."""
    opened = events[0] if events and isinstance(events[0], Opened) else None
    currency = opened.currency if opened else None
    settlements: list[dict[str, Any]] = []
    reversal_of: dict[int, dict[str, Any]] = {}
    void: dict[str, Any] | None = None
    paused = False
    bets: dict[str, dict[str, Any]] = {}
    moved: dict[str, int] = {}  # player -> net of the postings on the player's account
    for e in events:
        for account, amount in postings_of(e):
            if account.startswith(PLAYER):
                pid = account.removeprefix(PLAYER)
                moved[pid] = moved.get(pid, 0) + amount
        if isinstance(e, BetPlaced):
            bets[e.bet_id] = {"bet_id": e.bet_id, "player_id": e.player_id, "spot": e.spot, "bet_type": e.bet_type,
                              "put_in_minor": e.stake_minor}
        elif isinstance(e, DecisionTaken | FollowDecided):
            for m in e.stake_moves:  # splits, doubles, insurance, follows add to what the bet put in
                bet = bets.setdefault(m.bet_id, {"bet_id": m.bet_id, "player_id": m.player_id, "spot": None,
                                                 "bet_type": None, "put_in_minor": 0})
                bet["put_in_minor"] += m.amount_minor
        elif isinstance(e, Paused):
            paused = True
        elif isinstance(e, Resumed):
            paused = False
        elif isinstance(e, Settled):
            settlements.append({"settlement_no": e.settlement_no, **_stamp(e), "status": "in_force",
                                "returned_minor": sum(r.returned_minor for r in e.results),
                                "lines": [r._asdict() for r in e.results], "reversal": None})
        elif isinstance(e, SettlementReversed):
            reversal_of[e.settlement_no] = {**_stamp(e), "by": e.by, "reason": e.reason}
        elif isinstance(e, Voided):
            void = {**_stamp(e), "cause": e.cause, "by": e.by, "note": e.note,
                    "refunded_minor": sum(r.amount_minor for r in e.refunds),
                    "refunds": [r._asdict() for r in e.refunds]}
    for s in settlements:
        if s["settlement_no"] in reversal_of:
            s["status"], s["reversal"] = "reversed", reversal_of[s["settlement_no"]]
            s["reversal"]["then"] = _then(s["settlement_no"], settlements, void)
            s["reversal"].update(_what_changed(s, settlements, void, currency))
    in_force = next((s for s in settlements if s["status"] == "in_force"), None)
    status = ("voided" if void else "settled" if in_force else "reversed" if settlements
              else "paused" if paused else "open")
    bet_rows = _bets(bets, settlements, in_force, void)
    tombstone = opened is None and void is not None and len(events) == 1
    parts = ref_parts(round_id, ref) if tombstone else None
    return {
        "status": status, "phase": status if status in ("voided", "reversed") else _phase(events, status),
        "in_force": (f"settlement {in_force['settlement_no']}" if in_force else "void" if void else None),
        "settlements": [{k: v for k, v in s.items() if k != "lines"} for s in settlements],
        "void": void, "bets": bet_rows, "players": _players(bet_rows, moved),
        "headline": (_tombstone_headline(void) if tombstone and void else
                     _headline(status, outcome, settlements, in_force, void, currency)),
        "outcome": outcome,
        "tombstone": ({"table_id": parts[0] if parts else None, "round_no": parts[1] if parts else None,
                       "cause": void["cause"], "by": void["by"], "note": void["note"],
                       "server_time": void["server_time"], "studio_time": void["studio_time"],
                       "command_id": void["command_id"]} if tombstone and void else None),
    }


def _then(no: int, settlements: list[dict[str, Any]], void: dict[str, Any] | None) -> str:
    later = [s["settlement_no"] for s in settlements if s["settlement_no"] > no]
    if later:
        return f"settled again (settlement {later[0]})"
    return "voided" if void else "waiting for a void or a new settlement"


def _what_changed(s: dict[str, Any], settlements: list[dict[str, Any]], void: dict[str, Any] | None,
                  currency: str | None) -> dict[str, Any]:
    """What reversing settlement `s` changed, bet by bet: its line against what took its place
    (the next settlement's line, the void's refund, or nothing in force yet). `changes` lists
    only the bets whose outcome or amounts differ; `changed` says it in a sentence."""
    no = s["settlement_no"]
    later = next((t for t in settlements if t["settlement_no"] > no), None)
    before = {line["bet_id"]: line for line in s["lines"]}
    after: dict[str, dict[str, Any]] = {}
    if later is not None:
        after = {line["bet_id"]: {"how": "settled", **_figures(line)} for line in later["lines"]}
    elif void is not None:
        for r in void["refunds"]:
            refund = after.setdefault(r["bet_id"], {"how": "refunded", "player_id": r["player_id"], "amount_minor": 0})
            refund["amount_minor"] += r["amount_minor"]
    changes = []
    for bet_id in dict.fromkeys([*before, *after]):
        was, now = before.get(bet_id), after.get(bet_id)
        if was is not None and now is not None and now["how"] == "settled" and _figures(was) == _figures(now):
            continue  # settled again alike
        who, bet_type = (was or now or {}).get("player_id"), (was or now or {}).get("bet_type")
        change = {"bet_id": bet_id, "player_id": who, "before": _figures(was) if was else None, "after": now}
        change["text"] = (f"{bet_id} ({who}{', ' + bet_type if bet_type else ''}): "
                          f"{_line_text(change['before'], currency)} -> {_line_text(now, currency)}")
        changes.append(change)
    return {"changes": changes, "changed": _changed_text(no, later, void, changes, len(dict.fromkeys([*before, *after])))}


def _figures(line: dict[str, Any]) -> dict[str, Any]:
    return {k: line[k] for k in ("player_id", "bet_type", "outcome", "staked_minor", "returned_minor")}


def _line_text(line: dict[str, Any] | None, currency: str | None) -> str:
    if line is None:
        return "nothing in force"
    if line.get("how") == "refunded":
        return f"refunded {format_minor(line['amount_minor'], currency)} (void)"
    return (f"{line['outcome']}, staked {format_minor(line['staked_minor'], currency)}, "
            f"returned {format_minor(line['returned_minor'], currency)}")


def _changed_text(no: int, later: dict[str, Any] | None, void: dict[str, Any] | None,
                  changes: list[dict[str, Any]], bets: int) -> str:
    if later is not None:
        if not changes:
            return (f"changed nothing: settlement {later['settlement_no']} settles every bet as settlement {no} did "
                    "(same outcomes, stakes and returns)")
        return f"changed {len(changes)} of {bets} bets (settlement {no} -> settlement {later['settlement_no']})"
    if void is not None:
        return f"every bet's result of settlement {no} replaced by the refund of what it put in (void)"
    return f"every bet's result of settlement {no} taken back: nothing in force until a void or a new settlement"


def _phase(events: list[Record], status: str) -> str:
    if status == "settled":
        return "settled"
    if any(isinstance(e, BettingClosed) for e in events):
        return "dealing"
    return "betting"


def _bets(bets: dict[str, dict[str, Any]], settlements: list[dict[str, Any]], in_force: dict[str, Any] | None,
          void: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Each bet: what it put in, what is in force for it, the reversed lines beside it."""
    rows: dict[str, dict[str, Any]] = {}

    def row_of(bet_id: str, player_id: str, bet_type: str | None) -> dict[str, Any]:
        # a line or refund without a BetPlaced of its own (a derived line) still gets its row
        bet = bets.get(bet_id) or {"bet_id": bet_id, "player_id": player_id, "spot": None, "bet_type": bet_type,
                                   "put_in_minor": 0}
        return rows.setdefault(bet_id, {**bet, "in_force": None, "returned_minor": 0, "refunded_minor": 0,
                                        "reversed": []})

    for bet_id, bet in bets.items():
        row_of(bet_id, bet["player_id"], bet["bet_type"])
    for s in settlements:
        for line in s["lines"]:
            row = row_of(line["bet_id"], line["player_id"], line["bet_type"])
            entry = {"settlement_no": s["settlement_no"], "outcome": line["outcome"],
                     "staked_minor": line["staked_minor"], "returned_minor": line["returned_minor"]}
            if s is in_force:
                row["in_force"] = {"how": "settled", **entry}
                row["returned_minor"] += line["returned_minor"]
            else:
                reversal = s["reversal"] or {}
                row["reversed"].append({**entry, "by": reversal.get("by"), "reason": reversal.get("reason")})
    if void is not None:
        for r in void["refunds"]:
            row = row_of(r["bet_id"], r["player_id"], None)
            row["refunded_minor"] += r["amount_minor"]
            row["in_force"] = {"how": "refunded", "amount_minor": row["refunded_minor"], "cause": void["cause"],
                               "by": void["by"], "position": void["position"]}
    for row in rows.values():
        row["net_minor"] = row["returned_minor"] + row["refunded_minor"] - row["put_in_minor"]
    return list(rows.values())


def _players(bets: list[dict[str, Any]], moved: dict[str, int]) -> list[dict[str, Any]]:
    """Each player's final net: the money actually moved on the player's account by this round
    (stakes out, returns and refunds in, reversals out again), beside its parts from the bets;
    `agrees` says the parts add up to it."""
    out: dict[str, dict[str, Any]] = {}
    for b in bets:
        p = out.setdefault(b["player_id"], {"player_id": b["player_id"], "put_in_minor": 0, "returned_minor": 0,
                                            "refunded_minor": 0})
        for k in ("put_in_minor", "returned_minor", "refunded_minor"):
            p[k] += b[k]
    for pid in moved:
        out.setdefault(pid, {"player_id": pid, "put_in_minor": 0, "returned_minor": 0, "refunded_minor": 0})
    for p in out.values():
        p["net_minor"] = moved.get(p["player_id"], 0)
        p["agrees"] = p["returned_minor"] + p["refunded_minor"] - p["put_in_minor"] == p["net_minor"]
    return list(out.values())


def _headline(status: str, outcome: dict[str, Any] | None, settlements: list[dict[str, Any]],
              in_force: dict[str, Any] | None, void: dict[str, Any] | None, currency: str | None) -> dict[str, Any]:
    """One line: the winner and the hands' names when a settlement is in force; the void
    otherwise, saying what the cards had said and that it is not in force."""
    reversed_nos = [s["settlement_no"] for s in settlements if s["status"] == "reversed"]
    rev = (f" after settlement {', '.join(map(str, reversed_nos))} was reversed" if reversed_nos else "")
    hands = _hands_text(outcome)
    if void is not None:
        text = (f"VOIDED{rev}: {void['cause']} by {void['by']}; every amount put in was refunded "
                f"({format_minor(void['refunded_minor'], currency)}). No result is in force")
        if outcome:
            text += f" (the cards had said: {outcome['summary']})"
        return {"text": text + ".", "winner": None, "hands": hands, "in_force": False}
    if in_force is None:
        what = "reversed, waiting for a void or a new settlement" if reversed_nos else "not settled yet"
        return {"text": f"No result in force: {what}.", "winner": None, "hands": hands, "in_force": False}
    summary = outcome["summary"] if outcome else "settled"
    note = f" (settlement {in_force['settlement_no']} in force{rev})" if reversed_nos else ""
    return {"text": summary + note,  # the summary names the winner and the hands; `hands` has each one's name
            "winner": outcome.get("winner") if outcome else None, "hands": hands, "in_force": True}


def _tombstone_headline(void: dict[str, Any]) -> dict[str, Any]:
    return {"text": f"VOIDED before it opened: {void['cause']} by {void['by']}. No bet was taken, no card dealt, "
                    "no money moved; the round can no longer be opened.",
            "winner": None, "hands": "", "in_force": False}


def _hands_text(outcome: dict[str, Any] | None) -> str:
    """Each hand's name (and Teen Patti rank), e.g. "A: High Card J-9-2 (high_card), lose"."""
    if not outcome:
        return ""
    hands = ([outcome["dealer"]] if outcome.get("dealer") else []) + list(outcome.get("hands", []))
    return "; ".join(f"{h['hand']}: {h.get('name') or ' '.join(h['cards'])}"
                     + (f" ({h['category']})" if outcome.get("game") == "teen-patti" and h.get("category") else "")
                     + (f", {h['result']}" if h.get("result") else "") for h in hands)


def story_lines(story: dict[str, Any], currency: str | None) -> list[str]:
    """The story as text lines (`ledger replay` and `ledger round show`)."""
    def money(minor: int) -> str:
        return format_minor(minor, currency)

    lines = [f"status: {story['status']}  (phase {story['phase']})", f"outcome: {story['headline']['text']}"]
    if story["headline"]["hands"]:
        lines.append(f"hands: {story['headline']['hands']}")
    for s in story["settlements"]:
        if s["status"] == "in_force":
            lines.append(f"settlement {s['settlement_no']} (position {s['position']}): IN FORCE, "
                         f"returned {money(s['returned_minor'])}")
        else:
            r = s["reversal"]
            lines.append(f"settlement {s['settlement_no']} (position {s['position']}): REVERSED at position "
                         f"{r['position']} by {r['by']} ({r['command_id']}, {r['server_time']}): {escaped(r['reason'])}; "
                         f"then {r['then']}")
            lines.append(f"  what the correction changed: {r['changed']}")
            lines += [f"    {escaped(c['text'])}" for c in r["changes"]]
    if story["void"]:
        v = story["void"]
        lines.append(f"void (position {v['position']}): {v['cause']} by {v['by']} ({v['command_id']}, "
                     f"{v['server_time']}){': ' + escaped(v['note']) if v['note'] else ''}; refunded {money(v['refunded_minor'])}")
    if story["bets"]:
        lines.append("bets, and what is in force for each:")
    for b in story["bets"]:
        f = b["in_force"]
        if f is None:
            now = "nothing yet"
        elif f["how"] == "refunded":
            now = f"refunded {money(f['amount_minor'])} (void)"
        else:
            now = f"{f['outcome']}, returned {money(f['returned_minor'])} (settlement {f['settlement_no']})"
        was = "".join(f"; REVERSED settlement {r['settlement_no']}: {r['outcome']}, returned "
                      f"{money(r['returned_minor'])}" for r in b["reversed"])
        lines.append(f"  {b['bet_id']:<16} {b['player_id']:<12} {b['bet_type'] or '':<14} put in "
                     f"{money(b['put_in_minor'])}; now {now}; net {money(b['net_minor'])}{was}")
    if story["players"]:
        lines.append("final net per player (money moved by this round):")
    for p in story["players"]:
        lines.append(f"  {p['player_id']:<12} {money(p['net_minor'])}  (put in {money(p['put_in_minor'])}, "
                     f"returned {money(p['returned_minor'])}, refunded {money(p['refunded_minor'])})")
    t = story["tombstone"]
    if t:
        where = f"{t['table_id']}#{t['round_no']}" if t["table_id"] else "table and number not recorded"
        lines.insert(0, f"voided before it opened ({where}): {t['cause']} by {t['by']} at studio time "
                        f"{t['studio_time']}{': ' + escaped(t['note']) if t['note'] else ''}")
    return lines
