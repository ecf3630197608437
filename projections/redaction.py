"""A shared round as one operator may see it (issue 30, item 4): its own players' bets in
full, the other operators' only as a count and a total, never their player ids, bet ids or
per-bet amounts. Applied to what a read answers (a round's timeline), after the views,
for a scope of some operators; every operator's scope sees the round as recorded."""
from __future__ import annotations

from typing import Any

from domain.operators import OperatorScope

OTHERS_EVENT = "other_operators_bets"  # the entry that stands for the hidden bets


def redact_timeline(entries: list[dict[str, Any]], scope: OperatorScope) -> list[dict[str, Any]]:
    """The timeline entries (projections/recall.py `expand_timeline`) with another operator's
    bets replaced by one closing entry (`bets`, `staked_minor`), their stake moves dropped,
    and the player id, bet id and amount of a fact about them removed."""
    if scope.everyone:
        return entries
    out: list[dict[str, Any]] = []
    hidden: set[str] = set()
    staked = 0
    for entry in entries:
        player = entry.get("player_id")
        if isinstance(player, str) and not scope.allows_key(player) and "stake_minor" in entry:
            hidden.add(str(entry.get("bet_id")))
            staked += int(entry["stake_minor"] or 0)
            continue
        out.append(_redacted(entry, scope, hidden))
    if hidden:
        out.append({"event": OTHERS_EVENT, "bets": len(hidden), "staked_minor": staked})
    return out


def _redacted(entry: dict[str, Any], scope: OperatorScope, hidden: set[str]) -> dict[str, Any]:
    moves = entry.get("stake_moves")
    mine = [m for m in moves if scope.allows_key(str(m.get("player_id")))] if isinstance(moves, list) else None
    theirs = (mine is not None and moves and not mine) or entry.get("bet_id") in hidden
    player = entry.get("player_id")
    drop = {"bet_id", "amount_minor"} if theirs else set()
    if isinstance(player, str) and not scope.allows_key(player):
        drop.add("player_id")
    kept = {k: v for k, v in entry.items() if k not in drop}
    if mine is not None:
        kept["stake_moves"] = mine
    return kept
