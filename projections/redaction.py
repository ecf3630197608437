"""A shared round as one operator may see it (issue 30, item 4): its own players' bets in
full, the other operators' only as a count and a total, never their player ids, bet ids or
per-bet amounts. Applied to what a read answers (a round's timeline), after the views,
for a scope of some operators; every operator's scope sees the round as recorded."""
from __future__ import annotations

import re
from typing import Any

from domain.operators import OperatorScope
from projections.balances import PLAYER_PREFIX

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


OTHER = "(another operator's)"  # what stands for a text naming another operator's player or bet


def redact_document(doc: dict[str, Any], scope: OperatorScope) -> dict[str, Any]:
    """A round's document (its detail or replay, as plain JSON) for `scope`: every object naming
    another operator's player (`player_id`, `owner`, a `player:` account) or bet (`bet_id`)
    dropped from its list, every text naming one dropped (in a list) or replaced, and
    `other_operators` saying how many bets they placed and their total stake."""
    if scope.everyone:
        return doc
    bets: dict[str, int] = {}
    players: set[str] = set()
    _collect(doc, scope, bets, players)
    tokens = sorted(players | set(bets), key=len, reverse=True)
    pattern = re.compile("|".join(rf"(?<![\w~-]){re.escape(t)}(?![\w-])" for t in tokens)) if tokens else None
    out = _strip(doc, scope, set(bets), pattern)
    out["other_operators"] = {"bets": len(bets), "staked_minor": sum(bets.values())}
    return out  # type: ignore[no-any-return]


def _foreign(obj: dict[str, Any], scope: OperatorScope) -> str | None:
    """The other operator's player an object names, if it names one."""
    for field in ("player_id", "owner"):
        value = obj.get(field)
        if isinstance(value, str) and value and not scope.allows_key(value):
            return value
    account = obj.get("account")
    if isinstance(account, str) and account.startswith(PLAYER_PREFIX) and not scope.allows_key(
            account[len(PLAYER_PREFIX):]):
        return account[len(PLAYER_PREFIX):]
    return None


def _collect(node: Any, scope: OperatorScope, bets: dict[str, int], players: set[str]) -> None:
    if isinstance(node, dict):
        player = _foreign(node, scope)
        if player is not None:
            players.add(player)
            bet = node.get("bet_id")
            if isinstance(bet, str):
                stake = node.get("stake_minor")
                bets.setdefault(bet, stake if isinstance(stake, int) else 0)
                if isinstance(stake, int) and bets[bet] == 0:
                    bets[bet] = stake
        for value in node.values():
            _collect(value, scope, bets, players)
    elif isinstance(node, list):
        for value in node:
            _collect(value, scope, bets, players)


def _strip(node: Any, scope: OperatorScope, bets: set[str], pattern: re.Pattern[str] | None) -> Any:
    if isinstance(node, dict):
        return {k: _strip(v, scope, bets, pattern) for k, v in node.items()
                if not (pattern is not None and pattern.search(k))}
    if isinstance(node, list):
        return [_strip(v, scope, bets, pattern) for v in node if not _hidden(v, scope, bets, pattern)]
    if isinstance(node, str) and pattern is not None and pattern.search(node):
        return OTHER
    return node


def _hidden(item: Any, scope: OperatorScope, bets: set[str], pattern: re.Pattern[str] | None) -> bool:
    if isinstance(item, dict):
        return _foreign(item, scope) is not None or item.get("bet_id") in bets
    return isinstance(item, str) and pattern is not None and pattern.search(item) is not None
