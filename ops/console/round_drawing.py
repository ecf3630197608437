"""The dispute view of one round, drawn on the server from the replay document
(projections/document.py: the same document `ledger replay --json` prints and the
dispute page draws with its script), so it reads with JavaScript off: the step control
is a set of links (`?step=N`), each step's table drawn as the page's script draws it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from domain.money import format_minor
from ops.console.render import player_name

SUITS = {"S": ("\u2660", False), "H": ("\u2665", True), "D": ("\u2666", True), "C": ("\u2663", False)}
RANKS = {"T": "10"}


@dataclass(frozen=True)
class CardFace:
    code: str
    rank: str
    suit: str
    red: bool
    new: bool


@dataclass(frozen=True)
class Hand:
    name: str
    cards: list[CardFace]
    meta: str
    stakes: str


def card_face(code: str, new: bool = False) -> CardFace:
    suit, red = SUITS.get(code[1:2], ("?", False))
    return CardFace(code, RANKS.get(code[0], code[0]), suit, red, new)


def hands_of(state: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Hands of any game's view, as the dispute page's script finds them: objects with
    `cards` (dealer, player, banker, A, B), the `hands` list, the burn."""
    hands: list[dict[str, Any]] = []
    if not state:
        return hands
    for key, value in state.items():
        if isinstance(value, dict) and isinstance(value.get("cards"), list):
            hands.append({"name": key, **value})
    hands += [h for h in state.get("hands") or [] if isinstance(h, dict) and isinstance(h.get("cards"), list)]
    if isinstance(state.get("burn"), list) and state["burn"]:
        hands.append({"name": "burn", "cards": state["burn"]})
    return hands


def _meta(doc: dict[str, Any], h: dict[str, Any]) -> str:
    parts = []
    if h.get("total") is not None and h["cards"]:
        parts.append(f"total {h['total']}" + (" (soft)" if h.get("soft") else ""))
    for flag, text in (("status", None), ("doubled", "doubled"), ("from_split", "from a split")):
        if h.get(flag):
            parts.append(text or str(h[flag]))
    outcome = doc.get("outcome") or {}
    for o in [outcome.get("dealer"), *(outcome.get("hands") or [])]:
        if o and o.get("hand") == h["name"] and o.get("cards") == h["cards"]:
            if o.get("name"):
                parts.append(o["name"])
            if o.get("result"):
                parts.append(o["result"])
    return " \u00b7 ".join(parts)


def table_at(doc: dict[str, Any], n: int) -> list[Hand]:
    """The hands on the table after step n (1-based), the cards dealt at that step marked new."""
    steps = doc["steps"]
    step = steps[n - 1]
    before = {h["name"]: len(h["cards"]) for h in hands_of(steps[n - 2]["state"])} if n > 1 else {}
    out = []
    for h in hands_of(step["state"]):
        fresh = step["event"] == "CardDealt"
        cards = [card_face(c, fresh and k >= before.get(h["name"], 0)) for k, c in enumerate(h["cards"])]
        stakes = ", ".join(f"{s['bet_id']} {money(doc, s['amount_minor'])} ({s['reason']})" for s in h.get("stakes") or [])
        out.append(Hand(h["name"], cards, _meta(doc, h), stakes))
    return out


def money(doc: dict[str, Any], minor: int | None) -> str:
    return "" if minor is None else format_minor(minor, doc.get("currency"))


def bets_text(doc: dict[str, Any], n: int) -> str:
    bets = (doc["steps"][n - 1].get("state") or {}).get("bets") or []
    return "; ".join(f"{b['bet_id']} by {player_name(b['player_id'])} at {b.get('spot') or 'table'}: {b['bet_type']} "
                     f"{money(doc, b['stake_minor'])}" for b in bets)


def bet_now(doc: dict[str, Any], bet: dict[str, Any]) -> str:
    """What is in force for a bet, as the dispute page says it."""
    f = bet.get("in_force")
    if not f:
        return "nothing yet"
    if f["how"] == "refunded":
        return f"refunded {money(doc, f['amount_minor'])} (void)"
    return f"{f['outcome']}, returned {money(doc, f['returned_minor'])} (settlement #{f['settlement_no']})"


def bet_reversed(doc: dict[str, Any], bet: dict[str, Any]) -> str:
    return "; ".join(f"settlement #{x['settlement_no']}: {x['outcome']}, returned {money(doc, x['returned_minor'])}"
                     f" \u2014 reversed by {x['by']}" for x in bet.get("reversed") or [])


def result_line(doc: dict[str, Any], c: dict[str, Any]) -> dict[str, Any]:
    """One settlement line as the page shows it: recorded (or recomputed) figures as money."""
    line = c.get("recorded") or c["recomputed"]
    rem = (f" (+{line['remainder_num']}/{line['remainder_den']} minor unit kept)"
           if line.get("remainder_num") else "")
    differs = "agrees" if c["agrees"] else "DIFFERS: " + (
        f"{money(doc, c['recomputed']['returned_minor'])} by the rules" if c.get("recomputed") else "no such line by the rules")
    return {"settlement_no": c["settlement_no"], "position": c["position"], "status": c.get("status", "in_force"),
            "bet_id": c["bet_id"], "player_id": line["player_id"], "bet_type": line["bet_type"],
            "outcome": line["outcome"], "staked": money(doc, line["staked_minor"]),
            "returned": money(doc, line["returned_minor"]) + rem,
            "net": money(doc, line["returned_minor"] - line["staked_minor"]), "agrees": c["agrees"],
            "check": differs, "explanation": (c.get("recomputed") or c.get("recorded") or {}).get("explanation", "")}


def step_number(doc: dict[str, Any], asked: int | None) -> int:
    count = len(doc["steps"])
    return count if asked is None else max(1, min(count, asked))
