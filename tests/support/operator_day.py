"""A studio day of 3 operators whose player ids overlap (`ledger simulate --operators 3`'s
generator), for the isolation matrices of issue 30 (tests/e2e/service/test_operator_isolation.py,
tests/e2e/console/test_operator_isolation_console.py): what OP2 may see, and the tokens of
everyone else's players and bets to search every answer for.

The other operators' bets in rounds where they hold two bets or more are given stakes of their
own (`marked`, 310.01 EUR and up, each a different amount below 455.56 EUR): a per-bet amount
that OP2 may never read, searched too. A round's total of the others' stakes is what OP2 may
see (`other_operators`): the total of two marked stakes is above every marked stake, so the
search finds no total, and a round where another operator holds one bet is not marked. (A
marked bet's return is not searched: a total may equal one.)"""
from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from domain.money import format_minor
from ledger.keys import key_store
from ledger.store import open_app
from ops.sim.simulator import Studio

MINE = "OP2"


def day_lines() -> tuple[list[bytes], set[str]]:
    """The simulated day, the other operators' bets of rounds where they hold two or more at
    stakes of their own (310.01 EUR and up, 0.97 EUR apart: above every stake of the generator,
    within every table's limits); and the ids of the bets marked."""
    commands = [json.loads(line) for line in Studio(3, 10, seed=3, operators=3).lines()]
    bets = [c for c in commands if c.get("type") == "place_bet"]
    others = Counter((b["table_id"], b["round_no"]) for b in bets if b["operator_id"] != MINE)
    marked = [b for b in bets if b["operator_id"] != MINE and others[b["table_id"], b["round_no"]] > 1]
    for n, bet in enumerate(marked):
        bet["stake_minor"] = MARK_FIRST_MINOR + MARK_STEP_MINOR * n
    assert not marked or MARK_FIRST_MINOR + MARK_STEP_MINOR * len(marked) < MARK_LIMIT_MINOR, len(marked)
    late = [{**bets[0], "command_id": f"{LATE}{op}", "bet_id": f"{LATE}{op}-bet", "operator_id": op,
             "player_id": f"p-{LATE}{op}"} for op in ("OP1", MINE)]  # refused: their round is over
    return [json.dumps(c, sort_keys=True).encode() for c in (*commands, *late)], {b["bet_id"] for b in marked}


LATE = "late-"  # a bet of OP1 and one of OP2 sent after their round closed: the refused commands have some


MARK_FIRST_MINOR, MARK_STEP_MINOR = 31_001, 97
MARK_LIMIT_MINOR = 50_000  # the lowest maximum of a bet type the generator places (perfect pair)
_ID = re.compile(r"[\w~-]+")  # an id as a whole: `p0011` inside `OP3~p0011` is no bare id
_AMOUNT = re.compile(r"(?<![\d.,])\d{1,3}(?:,\d{3})*\.\d{2}(?!\d)")  # money as format_minor writes it


class Day:
    """The day's bets: what OP2 may see and the tokens of everyone else's (ids, and the
    amounts of the marked bets as a page or an answer writes money)."""

    def __init__(self, lines: list[bytes], amounts: Iterable[str] = ()) -> None:
        bets = [b for b in map(json.loads, lines) if b.get("type") == "place_bet"]
        mine = [b for b in bets if b["operator_id"] == MINE]
        own_ids = {b["player_id"] for b in mine}
        others = [b for b in bets if b["operator_id"] != MINE]
        self.ids = ({f"{b['operator_id']}~{b['player_id']}" for b in others} | {b["bet_id"] for b in others}
                    | {b["player_id"] for b in others if b["player_id"] not in own_ids})
        self.amounts = set(amounts)
        self.tokens = self.ids | self.amounts
        rounds: dict[str, set[str]] = {}
        for b in (b for b in bets if not b["command_id"].startswith(LATE)):
            rounds.setdefault(f"{b['table_id']}#{b['round_no']}", set()).add(b["operator_id"])
        self.players: dict[str, set[str]] = {}  # operator -> its players' own ids (of bets placed)
        for b in (b for b in bets if not b["command_id"].startswith(LATE)):
            self.players.setdefault(b["operator_id"], set()).add(b["player_id"])
        self.tables = sorted({b["table_id"] for b in bets})
        shared = [r for r, ops in sorted(rounds.items()) if MINE in ops and len(ops) > 1]
        self.shared_round = shared[0]
        # the first shared round of each table (a baccarat and a blackjack one on this day)
        self.shared_rounds = [next(r for r in shared if r.startswith(t + "#")) for t in self.tables
                              if any(r.startswith(t + "#") for r in shared)]
        self.player = sorted(own_ids & {b["player_id"] for b in others})[0]  # an id two operators have
        self.other_player = sorted({b["player_id"] for b in others} - own_ids)[0]  # an id OP2 has not

    def found(self, text: str) -> set[str]:
        """The other operators' ids and per-bet amounts in `text`."""
        return (set(_ID.findall(text)) & self.ids) | (set(_AMOUNT.findall(text)) & self.amounts)


def make_day(folder: Path) -> tuple[Day, str, str]:
    """The day in a SQLite store (the matrices are about what the reads answer), with a
    backoffice key of OP2: (the day, the store's URL, the key)."""
    store_url = f"sqlite:///{folder / 'ops3.db'}"
    lines, marked = day_lines()
    app = open_app(store_url)
    try:
        results = app.ingest(lines)
        assert [r.command_id for r in results if r.status != "accepted"] == [f"{LATE}OP1", f"{LATE}{MINE}"]
        key = key_store(app).add("backoffice", "op2", operators=[MINE])[0]
    finally:
        app.close()
    stakes = {c["stake_minor"] for c in map(json.loads, lines) if c.get("type") == "place_bet" and c["bet_id"] in marked}
    return Day(lines, {format_minor(v, None) for v in stakes}), store_url, key
