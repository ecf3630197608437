"""A tiny feed writer for ledger tests: JSON command lines with ids, times and seq_nos filled in."""
from __future__ import annotations

import json
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any

from domain.money import round_account

EPOCH = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


class Feed:
    def __init__(self, table_id: str = "T1", round_no: int = 1) -> None:
        self.table_id = table_id
        self.round_no = round_no
        self.n = 0
        self.seq: dict[tuple[str, int], int] = defaultdict(int)

    def at(self, round_no: int) -> Feed:
        self.round_no = round_no
        return self

    def cmd(self, type_: str, **fields: Any) -> dict[str, Any]:
        self.n += 1
        base = {
            "type": type_,
            "command_id": f"{self.table_id}/{self.round_no}/{self.n}",
            "table_id": self.table_id,
            "round_no": self.round_no,
            "studio_time": (EPOCH + timedelta(seconds=self.n)).isoformat(),
        }
        base.update(fields)
        return base

    def open(self, ruleset_id: str, shoe_id: str = "S1", version: int = 1) -> dict[str, Any]:
        return self.cmd(
            "open_round", ruleset_id=ruleset_id, ruleset_version=version, currency="EUR",
            shoe_id=shoe_id, dealer_id="D1",
        )

    def bet(self, bet_id: str, player_id: str, spot: str, bet_type: str, stake_minor: int, **kw: Any) -> dict[str, Any]:
        return self.cmd("place_bet", bet_id=bet_id, player_id=player_id, spot=spot, bet_type=bet_type,
                        stake_minor=stake_minor, **kw)

    def close(self) -> dict[str, Any]:
        return self.cmd("close_betting")

    def card(self, card: str, target: str, seq_no: int | None = None) -> dict[str, Any]:
        key = (self.table_id, self.round_no)
        if seq_no is None:
            self.seq[key] += 1
            seq_no = self.seq[key]
        return self.cmd("deal_card", card=card, target=target, seq_no=seq_no)

    def cards(self, *pairs: str) -> list[dict[str, Any]]:
        """`cards("AS>burn", "9H>player")`."""
        out = []
        for p in pairs:
            card, target = p.split(">")
            out.append(self.card(card, target))
        return out

    def decide(self, hand: str, action: str, source: str = "player", **kw: Any) -> dict[str, Any]:
        return self.cmd("decide", hand=hand, action=action, source=source, **kw)

    def follow(self, bet_id: str, kind: str, accept: bool) -> dict[str, Any]:
        return self.cmd("follow", bet_id=bet_id, kind=kind, accept=accept)

    def pause(self, cause: str, **kw: Any) -> dict[str, Any]:
        return self.cmd("pause", cause=cause, by="supervisor-1", **kw)

    def resume(self) -> dict[str, Any]:
        return self.cmd("resume", by="supervisor-1")

    def void(self, cause: str = "system_error") -> dict[str, Any]:
        return self.cmd("void", cause=cause, by="supervisor-1", note="test void")

    def reverse(self, then: str = "void") -> dict[str, Any]:
        return self.cmd("reverse_settlement", by="supervisor-1", reason="wrong card keyed", then=then)


def lines(*cmds: Any) -> list[bytes]:
    out: list[bytes] = []
    for c in cmds:
        for one in c if isinstance(c, list) else [c]:
            out.append(json.dumps(one).encode())
    return out


def balances(app: Any, round_obj: Any) -> dict[str, int]:
    """Sum of every posting leg of the round's events, by account."""
    totals: dict[str, int] = defaultdict(int)
    for event in app.repository.event_store.get(round_obj.id):
        for leg in getattr(event, "postings", []):
            totals[leg["account"]] += leg["amount_minor"]
    return dict(totals)


def round_balance(app: Any, round_obj: Any) -> int:
    return balances(app, round_obj).get(round_account(str(round_obj.id)), 0)


# Ready-made rounds -----------------------------------------------------------

def teen_patti_round(f: Feed) -> list[Any]:
    """A wins with a pair of kings against B's ace high."""
    return [
        f.open("teen-patti/20-20", shoe_id=f"deck-{f.round_no}"),
        f.bet("tp-a", "alice", "table", "player_a", 1000),
        f.bet("tp-b", "bob", "table", "player_b", 500),
        f.bet("tp-t", "bob", "table", "tie", 100),
        f.close(),
        f.cards("KS>A", "AH>B", "KD>A", "7C>B", "2H>A", "4D>B"),
    ]


def baccarat_round(f: Feed, first_in_shoe: bool = True) -> list[Any]:
    """Player natural 8 beats Banker 5; a new shoe burns AS and one more card."""
    burn = f.cards("AS>burn", "5H>burn") if first_in_shoe else []
    return [
        f.open("baccarat/live-8d"),
        f.bet("bc-p", "alice", "table", "player", 1000),
        f.bet("bc-b", "bob", "table", "banker", 2000, mode="traditional"),
        f.close(),
        burn,
        f.cards("KS>player", "2D>banker", "8D>player", "3C>banker"),
    ]
