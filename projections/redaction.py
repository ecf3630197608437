"""A shared round as one operator may see it (issue 30, item 4): its own players' bets in
full, the other operators' only as a count and a total, never their player ids, bet ids or
per-bet amounts. Applied to what a read answers (a round's timeline), after the views,
for a scope of some operators; every operator's scope sees the round as recorded."""
from __future__ import annotations

import json
import re
from typing import Any

from domain.operators import DEFAULT_OPERATOR_ID, OperatorScope
from projections.audit import REDACTED, Link
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


def token_pattern(tokens: set[str]) -> re.Pattern[str] | None:
    """The ids `tokens` where a text names them whole (not inside a longer id: `p-1` is not in
    `p-17`, nor a bare id after `~`), longest first; None for no tokens."""
    if not tokens:
        return None
    return re.compile("|".join(rf"(?<![\w~-]){re.escape(t)}(?![\w-])" for t in sorted(tokens, key=len, reverse=True)))


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
    out = _strip(doc, scope, set(bets), token_pattern(players | set(bets)))
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
                if not (pattern is not None and isinstance(k, str) and pattern.search(k))}
    if isinstance(node, list):
        kept = [_strip(v, scope, bets, pattern) for v in node if not _hidden(v, scope, bets, pattern)]
        return _summed_legs(kept) if pattern is not None else kept
    if isinstance(node, str) and pattern is not None and pattern.search(node):
        return OTHER
    return node


def _summed_legs(items: list[Any]) -> list[Any]:
    """Postings (legs with `account` and `amount_minor`): a player's legs as they are (the scope's
    own: the others' are gone), every other account's (the round's, the house's) summed into one
    leg, where its first was: a leg per bet of the house would show another operator's bet's amount."""
    if not items or not all(isinstance(i, dict) and "account" in i and isinstance(i.get("amount_minor"), int)
                            for i in items):
        return items
    out: list[Any] = []
    sums: dict[str, dict[str, Any]] = {}
    for leg in items:
        account = leg["account"]
        if isinstance(account, str) and account.startswith(PLAYER_PREFIX):
            out.append(leg)
        elif account in sums:
            sums[account]["amount_minor"] += leg["amount_minor"]
        else:
            sums[account] = {**leg}
            out.append(sums[account])
    return out


def _theirs(obj: dict[str, Any], scope: OperatorScope, bets: set[str]) -> bool:
    """An object about another operator's player or bet alone: it names one, or it moves only
    their stakes (a decision on their hand: its postings would show their bet's amount)."""
    if _foreign(obj, scope) is not None or obj.get("bet_id") in bets:
        return True
    moves = obj.get("stake_moves")
    return isinstance(moves, list) and bool(moves) and all(
        isinstance(m, dict) and _foreign(m, scope) is not None for m in moves)


def _hidden(item: Any, scope: OperatorScope, bets: set[str], pattern: re.Pattern[str] | None) -> bool:
    if isinstance(item, dict):
        return _theirs(item, scope, bets)
    return isinstance(item, str) and pattern is not None and pattern.search(item) is not None


# ---------------------------------------------------------------- refused commands

PLAYER_COMMANDS = frozenset({"place_bet", "decide", "pause"})  # a player's, when they name one


def command_operator(payload: str) -> str | None:
    """The operator a refused command's payload is about: a player's command names its
    player's operator (none named: the default operator), a configuration names the operator
    it configures. None: the command names no operator's player (a dealer's, the table's, a
    line that is not a command): the studio's own, shown to keys of every operator only."""
    try:
        sent = json.loads(payload)
    except (ValueError, RecursionError):
        return None
    if not isinstance(sent, dict):
        return None
    kind, operator = sent.get("type"), sent.get("operator_id")
    if kind == "configure_operator" or (kind in PLAYER_COMMANDS and sent.get("player_id") is not None):
        operator = DEFAULT_OPERATOR_ID if operator is None and kind != "configure_operator" else operator
        return operator if isinstance(operator, str) else None
    return None


# A player key in a text (domain/operators.py `player_key`: OPERATOR~PLAYER), as a refusal's message names one.
KEY_IN_TEXT = re.compile(r"(?<![\w.~-])([A-Za-z0-9_.-]{1,64})~[A-Za-z0-9_.:/#@-]+")


def redact_text(text: str, scope: OperatorScope) -> str:
    """`text` with every player key of an operator outside `scope` replaced: a refusal of the
    scope's own bet may name another player (`seat_taken`: the seat's holder)."""
    if scope.everyone or "~" not in text:
        return text
    return KEY_IN_TEXT.sub(lambda m: m.group(0) if scope.allows(m.group(1)) else OTHER, text)


def shows_rejection(payload: str, scope: OperatorScope) -> bool:
    """A refused command a read of `scope` may show: every one for every operator's scope,
    else only those naming one of its operators (docs/operators.md)."""
    if scope.everyone:
        return True
    operator = command_operator(payload)
    return operator is not None and scope.allows(operator)


def scoped_rejection(row: dict[str, Any], scope: OperatorScope) -> dict[str, Any] | None:
    """A rejections-log row as a read of `scope` shows it (its message redacted), or None when
    the scope may not see it: the one rule the HTTP route, the CLI and the console share."""
    if not shows_rejection(row["payload"], scope):
        return None
    return row if scope.everyone else row | {"message": redact_text(row["message"], scope)}


# ---------------------------------------------------------------- the audit trail

class LinkRedactor:
    """The audit trail's lines (projections/audit.py `Link`, in chain order) as `scope` may
    see them: a line keeps its hash and prev (the chain and its tree still verify), and its
    record's fields lose what names another operator's player or bet (an event wholly about
    one, e.g. its bet, keeps no field), marked `"redacted": true`. A bet's id named without
    its player (a follow decision) is known from the bet's earlier BetPlaced: the other
    operators' bet ids are kept per round (only of rounds they bet in)."""

    def __init__(self, scope: OperatorScope) -> None:
        self.scope = scope
        self.bets: dict[str, set[str]] = {}  # round (originator id) -> other operators' bet ids

    def __call__(self, link: Link) -> Link:
        fields = link.record.get("fields")
        if self.scope.everyone or not isinstance(fields, dict):
            return link
        found: dict[str, int] = {}
        players: set[str] = set()
        _collect(fields, self.scope, found, players)
        round_id = str(link.record.get("originator_id"))
        if found:
            self.bets.setdefault(round_id, set()).update(found)
        bets = self.bets.get(round_id, set())
        if not players and not (bets and _names_any(fields, bets)):
            return link
        if _theirs(fields, self.scope, bets):
            shown: dict[str, Any] = {}  # the event is about another operator's bet or player alone
        else:
            shown = _strip(fields, self.scope, bets, token_pattern(players | bets))
        return Link({**link.record, "fields": shown, REDACTED: True}, link.prev, link.hash)


def _names_any(node: Any, bets: set[str]) -> bool:
    if isinstance(node, dict):
        return any(_names_any(v, bets) for v in node.values())
    if isinstance(node, list):
        return any(_names_any(v, bets) for v in node)
    return isinstance(node, str) and node in bets
