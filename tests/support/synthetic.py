"""Synthetic ledger events shaped exactly like docs/events.md, for testing the
views without the ledger's rules: a `RoundScript` writes the records of one
round (with balanced postings), `random_history` plays many seeded rounds,
and `store` records them in a real eventsourcing store, under the ledger's
own event topics, so the runner reads them through its `EventLog` like the
ledger's."""
from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from typing import Any
from uuid import NAMESPACE_URL, uuid5

from eventsourcing.application import Application
from eventsourcing.persistence import StoredEvent

from ledger import round as ledger_round
from ledger.records import (
    BetPlaced,
    BettingClosed,
    CardDealt,
    DecisionTaken,
    Opened,
    Paused,
    Record,
    Resumed,
    Settled,
    SettlementReversed,
    Voided,
    fields_of,
    record_of,
    short_name,
)

NAMESPACE = uuid5(NAMESPACE_URL, "https://casino-ledger/tests/synthetic")
T0 = datetime(2024, 3, 1, 23, 0, tzinfo=UTC)


def transfer(src: str, dst: str, amount: int) -> list[dict[str, Any]]:
    return [{"account": src, "amount_minor": -amount}, {"account": dst, "amount_minor": amount}]


class RoundScript:
    """Builds one round's records in order (position 0: `number` assigns them)."""

    def __init__(self, table_id: str, round_no: int, *, game: str = "blackjack", currency: str = "EUR",
                 clock: list[datetime] | None = None) -> None:
        self.id = str(uuid5(NAMESPACE, f"round/{table_id}/{round_no}"))
        self.table_id, self.round_no, self.game, self.currency = table_id, round_no, game, currency
        self.events: list[Record] = []
        self.clock = clock if clock is not None else [T0]
        self.put_in: dict[tuple[str, str], int] = {}  # (bet_id, player) -> amount
        self.bet_types: dict[str, str] = {}
        self.settlements: list[list[dict[str, Any]]] = []
        self.cards = 0

    @property
    def account(self) -> str:
        return f"round:{self.id}"

    def _emit(self, kind: type[Record], **fields: Any) -> RoundScript:
        self.clock[0] += timedelta(seconds=7)
        fields = {"command_id": f"c-{self.id[:8]}-{len(self.events)}", "studio_time": self.clock[0].isoformat(),
                  **fields}
        self.events.append(record_of(kind, 0, self.id, len(self.events) + 1, self.clock[0], fields))
        return self

    def open(self) -> RoundScript:
        return self._emit(Opened, table_id=self.table_id, round_no=self.round_no, game=self.game,
                          ruleset_id=f"{self.game}-x", ruleset_version=1, ruleset_hash="h",
                          currency=self.currency, shoe_id="shoe-1", round_in_shoe=self.round_no, dealer_id="d1")

    def bet(self, bet_id: str, player: str, stake: int, bet_type: str = "main") -> RoundScript:
        self.put_in[(bet_id, player)] = self.put_in.get((bet_id, player), 0) + stake
        self.bet_types[bet_id] = bet_type
        return self._emit(BetPlaced, bet_id=bet_id, player_id=player, spot="seat:1", bet_type=bet_type,
                          stake_minor=stake, mode=None, seat_no=None,
                          postings=transfer(f"player:{player}", self.account, stake))

    def close(self) -> RoundScript:
        return self._emit(BettingClosed)

    def card(self, card: str, target: str = "dealer") -> RoundScript:
        self.cards += 1
        return self._emit(CardDealt, card=card, target=target, seq_no=self.cards)

    def double(self, bet_id: str, player: str, amount: int) -> RoundScript:
        self.put_in[(bet_id, player)] += amount
        moves = [{"bet_id": bet_id, "player_id": player, "amount_minor": amount, "reason": "double"}]
        return self._emit(DecisionTaken, hand="seat:1", action="double", source="player", amount_minor=None,
                          stake_moves=moves, postings=transfer(f"player:{player}", self.account, amount))

    def pause(self, cause: str = "host_interruption") -> RoundScript:
        return self._emit(Paused, cause=cause, by="pitboss", note="", flag_code=None)

    def resume(self) -> RoundScript:
        return self._emit(Resumed, by="pitboss", note="")

    def settle(self, returned: dict[str, tuple[int, Fraction]]) -> RoundScript:
        """`returned[bet_id] = (returned_minor, remainder)`; unlisted bets lose."""
        results, postings, house = [], [], 0
        for (bet_id, player), staked in self.put_in.items():
            back, rem = returned.get(bet_id, (0, Fraction(0)))
            outcome = "win" if back > staked else "push" if back == staked else "lose"
            results.append({"bet_id": bet_id, "player_id": player, "bet_type": self.bet_types[bet_id],
                            "outcome": outcome, "staked_minor": staked, "returned_minor": back,
                            "remainder_num": rem.numerator, "remainder_den": rem.denominator,
                            "explanation": f"{outcome} by test"})
            postings.append({"account": self.account, "amount_minor": -staked})
            if back:
                postings.append({"account": f"player:{player}", "amount_minor": back})
            house += staked - back
        if house:
            postings.append({"account": f"house:{self.table_id}", "amount_minor": house})
        self.settlements.append(postings)
        return self._emit(Settled, settlement_no=len(self.settlements), ruleset_id=f"{self.game}-x",
                          ruleset_version=1, results=results, postings=postings)

    def reverse(self) -> RoundScript:
        last = self.settlements[-1]
        negated = [{"account": p["account"], "amount_minor": -p["amount_minor"]} for p in last]
        return self._emit(SettlementReversed, settlement_no=len(self.settlements), by="auditor",
                          reason="wrong card", postings=negated)

    def void(self, cause: str = "host_interruption") -> RoundScript:
        refunds = [{"bet_id": b, "player_id": p, "amount_minor": a} for (b, p), a in self.put_in.items()]
        postings = [leg for r in refunds for leg in transfer(self.account, f"player:{r['player_id']}", r["amount_minor"])]
        return self._emit(Voided, cause=cause, by="pitboss", note="", refunds=refunds, postings=postings)

    def tombstone(self) -> RoundScript:
        return self._emit(Voided, cause="other", by="studio", note="void before open", refunds=[], postings=[])


def number(events: list[Record], first: int = 1) -> list[Record]:
    return [e._replace(position=first + i) for i, e in enumerate(events)]


def interleave(scripts: list[RoundScript], rng: random.Random) -> list[Record]:
    """Merge rounds' events in a random global order (each round's own order kept)."""
    queues = [list(s.events) for s in scripts if s.events]
    out: list[Record] = []
    while queues:
        q = rng.choice(queues)
        out.append(q.pop(0))
        if not q:
            queues.remove(q)
    return number(out)


def random_round(rng: random.Random, table_id: str, round_no: int, players: list[str],
                 clock: list[datetime]) -> RoundScript:
    game, currency = {"t1": ("blackjack", "EUR"), "t2": ("baccarat", "EUR"), "t3": ("teenpatti", "INR")}.get(
        table_id, ("blackjack", "EUR"))
    s = RoundScript(table_id, round_no, game=game, currency=currency, clock=clock)
    if rng.random() < 0.03:
        return s.tombstone()
    s.open()
    bets = []
    for i, player in enumerate(rng.sample(players, rng.randint(1, min(4, len(players))))):
        bet_id = f"{table_id}-{round_no}-b{i}"
        s.bet(bet_id, player, rng.choice([100, 250, 1000, 1500]), rng.choice(["main", "pair", "tie"]))
        bets.append((bet_id, player))
    s.close()
    for c in rng.sample(["AS", "TD", "9H", "2C", "KD", "5S"], rng.randint(2, 5)):
        s.card(c)
    if rng.random() < 0.3:
        bet_id, player = rng.choice(bets)
        s.double(bet_id, player, s.put_in[(bet_id, player)])
    if rng.random() < 0.1:
        s.pause()
        if rng.random() < 0.5:
            return s.void(rng.choice(["host_interruption", "system_error", "human_error"]))
        s.resume()
    if rng.random() < 0.05:
        return s  # still open at the end of the history
    s.settle(_random_returns(rng, s))
    if rng.random() < 0.1:
        s.reverse()
        if rng.random() < 0.5:
            return s.void("human_error")
        s.settle(_random_returns(rng, s))
    return s


def _random_returns(rng: random.Random, s: RoundScript) -> dict[str, tuple[int, Fraction]]:
    out = {}
    for (bet_id, _player), staked in s.put_in.items():
        odds = rng.choice([None, Fraction(1), Fraction(3, 2), Fraction(19, 20), Fraction(0)])
        if odds is None:
            continue
        exact = staked * odds
        win = exact.numerator // exact.denominator
        out[bet_id] = (staked + win, exact - win)
    return out


def random_history(seed: int, rounds: int = 40) -> list[Record]:
    rng = random.Random(seed)
    clock = [T0]
    players = [f"p{i}" for i in range(6)]
    scripts = [random_round(rng, rng.choice(["t1", "t2", "t3"]), n, players, clock) for n in range(1, rounds + 1)]
    return interleave(scripts, rng)


# ------------------------------------------------------------- storing them


def sqlite_app(path: str) -> Application:
    return Application(env={"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": path})


def postgres_app(dbname: str, schema: str = "public") -> Application:
    return Application(env={"PERSISTENCE_MODULE": "eventsourcing.postgres", "POSTGRES_DBNAME": dbname,
                            "POSTGRES_HOST": "127.0.0.1", "POSTGRES_PORT": "5432", "POSTGRES_USER": "postgres",
                            "POSTGRES_PASSWORD": "", "POSTGRES_SCHEMA": schema})


def store(app: Application, events: list[Record]) -> None:
    """Record events as the ledger would (its event classes, so its topics; same envelope and mapper)."""
    from uuid import UUID

    stored: list[StoredEvent] = []
    for e in events:
        obj = object.__new__(getattr(ledger_round.Round, short_name(e)))
        object.__setattr__(obj, "__dict__", {"originator_id": UUID(e.originator_id), "originator_version": e.originator_version,
                                             "timestamp": e.timestamp, **fields_of(e)})
        stored.append(app.mapper.to_stored_event(obj))
    for i in range(0, len(stored), 500):  # inserted in order: the global order is the list's
        app.recorder.insert_events(stored[i:i + 500])
