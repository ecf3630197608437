"""The wallet transactions each stored event causes (docs/wallet.md): the event log is the
outbox, and this module is what a page of it means to the operators' wallets.

Every transaction's id is derived from the event that caused it (its round, version and
line), so every redelivery after any crash carries the same id. Each goes to the wallet of the
operator its player key names (domain/operators.py: every line of a round, stake moves,
settlement, void and reversal, names a player key), with the player's own id, as that
operator names the player. `seq` is the ledger's order
(the event's position, then its line): a player's transactions are sent in it. Reads only:
records, and a round's own events when an event needs what came before it in the round (a
resettlement the settlement it replaces, a void the stakes it rolls back).
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Literal
from uuid import UUID, uuid5

from domain.errors import require
from domain.operators import player_key, split_key
from ledger.ids import NAMESPACE
from ledger.records import (
    BetPlaced,
    DecisionTaken,
    FollowDecided,
    Opened,
    Record,
    Settled,
    SettlementReversed,
    Voided,
)
from projections.balances import PLAYER_PREFIX

Kind = Literal["debit", "credit", "rollback", "round"]
# Statuses: sent until final; `notice_off`: a stake the operator takes itself (never sent, but
# its id is what a void's rollback names); `unanswered`: a debit with no answer, rolled back
# and sent again under the next generation's id.
OPEN = ("pending", "retrying")
FINAL = ("delivered", "rolled_back", "unanswered", "dead", "resolved", "notice_off")
LINE_STEP, SEQ_STEP = 1000, 1_000_000  # seq = position * SEQ_STEP + line * LINE_STEP + sub
WALLET_KINDS = frozenset({Opened, BetPlaced, DecisionTaken, FollowDecided, Settled, Voided})


@dataclass(frozen=True, slots=True)
class WalletTx:
    """One wallet transaction (a row of `wallet_tx`)."""

    tx_id: str
    seq: int
    operator_id: str  # whose wallet: the operator the player key names
    player_id: str  # the player as that operator names it (`player_of(key)`)
    kind: str
    reason: str
    amount_minor: int
    currency: str
    round_id: str
    reference: str
    ref_tx_id: str
    generation: int
    body: str  # the JSON sent, exactly (the same bytes on every redelivery)
    status: str
    attempts: int = 0
    next_at_ms: int = 0
    last_answer: str = ""
    derived_ms: int = 0  # when the deliverer derived it (epoch ms): the lag's start
    done_ms: int = 0  # when it reached a final status


def tx_id_for(*parts: object) -> str:
    return str(uuid5(NAMESPACE, "wallet/" + "/".join(map(str, parts))))


@dataclass(frozen=True, slots=True)
class RoundFacts:
    table_id: str
    round_no: int
    currency: str


def make_tx(facts: RoundFacts, round_id: str, seq: int, position: int, tx_id: str, kind: Kind, reason: str,
            player: str, amount: int, reference: str, ref_tx_id: str = "", generation: int = 1,
            status: str = "pending", derived_ms: int = 0) -> WalletTx:
    """`player`: the player key (the ledger's name); the transaction carries its operator and
    the operator's own player id."""
    operator, player = split_key(player)
    body = {"transaction_id": tx_id, "operator_id": operator, "player_id": player, "currency": facts.currency,
            "round_id": round_id, "table_id": facts.table_id, "round_no": facts.round_no, "amount_minor": amount,
            "reference": reference, "reason": reason, "event_position": position}
    if ref_tx_id:
        body["reference_transaction_id"] = ref_tx_id
    text = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return WalletTx(tx_id, seq, operator, player, kind, reason, amount, facts.currency, round_id, reference,
                    ref_tx_id, generation, text, status, derived_ms=derived_ms)


def next_generation(debit: WalletTx, seq: int) -> tuple[WalletTx, WalletTx]:
    """A debit with no answer: its rollback, and the stake sent again under a new id (both
    derived from the debit's id, so a crash between them re-derives the same two)."""
    facts = RoundFacts(*_facts_of(debit.body))
    rollback = make_tx(facts, debit.round_id, seq, _position_of(debit.body), tx_id_for(debit.tx_id, "rollback"),
                       "rollback", "debit_unanswered", key_of(debit), debit.amount_minor, debit.reference,
                       ref_tx_id=debit.tx_id)
    again = make_tx(facts, debit.round_id, seq + 1, _position_of(debit.body),
                    tx_id_for(debit.tx_id, "generation", debit.generation + 1), "debit", debit.reason,
                    key_of(debit), debit.amount_minor, debit.reference, generation=debit.generation + 1)
    return rollback, again


def key_of(tx: WalletTx) -> str:
    """The player key of a transaction's player (its operator and own id, joined back)."""
    return player_key(tx.operator_id, tx.player_id)


def _facts_of(body: str) -> tuple[str, int, str]:
    b = json.loads(body)
    return b["table_id"], b["round_no"], b["currency"]


def _position_of(body: str) -> int:
    return int(json.loads(body)["event_position"])


class Deriver:
    """Turns records into wallet transactions. `round_events(round_id)`: a round's records
    (the store's); `notices(operator)`: whether that operator wants stakes as debit notices."""

    def __init__(self, round_events: Callable[[UUID], list[Record]], notices: Callable[[str], bool]) -> None:
        self.round_events = round_events
        self.notices = notices
        self.facts: dict[str, RoundFacts] = {}  # a round's Opened never changes: a cache, not state
        self._stamp = 0  # `derive`'s derived_ms

    def derive(self, records: Iterable[Record], derived_ms: int = 0) -> list[WalletTx]:
        """The records' transactions, each stamped `derived_ms` (when the deliverer derived them)."""
        self._stamp = derived_ms
        out: list[WalletTx] = []
        for record in records:
            out.extend(self.of(record))
        return out

    def of(self, ev: Record) -> list[WalletTx]:
        match ev:
            case Opened():
                self.facts[ev.originator_id] = RoundFacts(ev.table_id, ev.round_no, ev.currency)
                return []
            case BetPlaced():
                return [self._debit(ev, 0, ev.player_id, ev.stake_minor, ev.bet_id, "stake")]
            case DecisionTaken() | FollowDecided():
                return [self._debit(ev, i, m.player_id, m.amount_minor, f"{m.bet_id}+{m.reason}", "stake_move")
                        for i, m in enumerate(ev.stake_moves) if m.amount_minor > 0]
            case Settled():
                return self._settled(ev)
            case Voided():
                return self._voided(ev)
        return []

    # ------------------------------------------------------------ the kinds
    def _round(self, ev: Record) -> RoundFacts:
        facts = self.facts.get(ev.originator_id)
        if facts is None:
            for r in self.round_events(UUID(ev.originator_id)):
                if isinstance(r, Opened):
                    facts = self.facts[ev.originator_id] = RoundFacts(r.table_id, r.round_no, r.currency)
        return facts or RoundFacts("", 0, "")

    def _tx(self, ev: Record, line: int, kind: Kind, reason: str, player: str, amount: int, reference: str,
            ref_tx_id: str = "") -> WalletTx:
        require(0 <= line < SEQ_STEP // LINE_STEP, f"event {ev.position}: line {line} past an event's lines")
        tx_id = tx_id_for(ev.originator_id, ev.originator_version, line, kind)
        return make_tx(self._round(ev), ev.originator_id, ev.position * SEQ_STEP + line * LINE_STEP, ev.position,
                       tx_id, kind, reason, player, amount, reference, ref_tx_id, derived_ms=self._stamp)

    def _debit(self, ev: Record, line: int, player: str, amount: int, reference: str, reason: str) -> WalletTx:
        tx = self._tx(ev, line, "debit", reason, player, amount, reference)
        return tx if self.notices(tx.operator_id) else replace(tx, status="notice_off")

    def _settled(self, ev: Settled) -> list[WalletTx]:
        returns: dict[str, int] = {}
        for r in ev.results:
            returns[r.player_id] = returns.get(r.player_id, 0) + r.returned_minor
        out: list[WalletTx] = []
        if ev.settlement_no == 1:
            out += [self._tx(ev, i, "credit", "return", r.player_id, r.returned_minor, r.bet_id)
                    for i, r in enumerate(ev.results) if r.returned_minor > 0]
        else:  # a resettlement: the correction's net against what the reversed settlement paid
            taken = self._taken_back(ev.originator_id, ev.settlement_no - 1)
            out += self._corrections(ev, returns, taken, f"{ev.originator_id}@s{ev.settlement_no}")
        return out + self._closes(ev, sorted(returns), "completed", max(len(out), len(ev.results)))

    def _corrections(self, ev: Record, returns: dict[str, int], taken: dict[str, int],
                     reference: str) -> list[WalletTx]:
        out: list[WalletTx] = []
        for player in sorted(set(returns) | set(taken)):
            net = returns.get(player, 0) - taken.get(player, 0)
            if net:
                line = len(out)
                out.append(self._tx(ev, line, "credit" if net > 0 else "debit", "correction", player, abs(net),
                                    reference))
        return out

    def _taken_back(self, round_id: str, settlement_no: int) -> dict[str, int]:
        """What the reversal of `settlement_no` took back from each player."""
        taken: dict[str, int] = {}
        for r in self.round_events(UUID(round_id)):
            if isinstance(r, SettlementReversed) and r.settlement_no == settlement_no:
                for leg in r.postings:
                    if leg.account.startswith(PLAYER_PREFIX) and leg.amount_minor < 0:
                        player = leg.account[len(PLAYER_PREFIX):]
                        taken[player] = taken.get(player, 0) - leg.amount_minor
        return taken

    def _voided(self, ev: Voided) -> list[WalletTx]:
        if not ev.refunds:  # a tombstone (void before open) or nothing staked: no money moved
            return []
        earlier = [r for r in self.round_events(UUID(ev.originator_id)) if r.originator_version < ev.originator_version]
        out: list[WalletTx] = []
        last = next((r for r in reversed(earlier) if isinstance(r, Settled | SettlementReversed)), None)
        if isinstance(last, SettlementReversed):  # reversed, then voided: take back what was paid
            out += self._corrections(ev, {}, self._taken_back(ev.originator_id, last.settlement_no),
                                     f"{ev.originator_id}@s{last.settlement_no}")
        debits = [tx for r in earlier for tx in self.of_stakes(r)]
        refunded: dict[str, int] = {}
        for f in ev.refunds:
            refunded[f.player_id] = refunded.get(f.player_id, 0) + f.amount_minor
        for debit in debits:
            key = key_of(debit)
            out.append(self._tx(ev, len(out), "rollback", "void", key, debit.amount_minor, debit.reference,
                                ref_tx_id=debit.tx_id))
            refunded[key] = refunded.get(key, 0) - debit.amount_minor
        # A refund the stakes do not account for (none known) still reaches the wallet, as its net.
        out += self._corrections(ev, {p: n for p, n in refunded.items() if n > 0},
                                 {p: -n for p, n in refunded.items() if n < 0}, f"{ev.originator_id}@void")
        players = sorted({f.player_id for f in ev.refunds})
        return out + self._closes(ev, players, "cancelled", len(out))

    def of_stakes(self, r: Record) -> list[WalletTx]:
        if isinstance(r, BetPlaced | DecisionTaken | FollowDecided):
            return self.of(r)
        return []

    def _closes(self, ev: Record, players: list[str], how: str, first_line: int) -> list[WalletTx]:
        return [self._tx(ev, first_line + i, "round", how, p, 0, ev.originator_id) for i, p in enumerate(players)]
