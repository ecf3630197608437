"""The deliverer (docs/wallet.md): follows the stored events in order, keeps the wallet
transactions they cause in the store (`projections/wallet_outbox.py`) and calls each
operator's wallet until every transaction has a final answer.

One thread owns the store (reads events, writes transactions and outcomes); each operator
has a pool of `concurrency` threads for its HTTP calls. A player's transactions go one at a
time in ledger order; different players in parallel (with `batch_max` > 1, several players'
transactions in one call, each player's a run in ledger order that the wallet applies in order
and stops at the first it did not apply: each item is the same transaction under the same
rules). Nothing is kept only in memory that the store does not also hold: killed at any
moment, a restarted deliverer resends what has no final answer, with the same ids.
"""
from __future__ import annotations

import sys
import threading
import time
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from itertools import islice

from ledger.eventlog import EventLog
from ops.wallet.client import NO_ANSWER, OK, REFUSED, ROLLED_BACK, Answer, WalletClient
from ops.wallet.config import BATCH_MAX_LIMIT, OperatorWallet
from ops.wallet.jetstream import JetStreamClient
from projections.runner import UNREACHABLE
from projections.sql import Db
from projections.wallet_outbox import Attempt, Concurrent, Outbox
from projections.wallet_tx import OPEN, WALLET_KINDS, Deriver, WalletTx, next_generation, tx_id_for

PAGE_SIZE_DEFAULT = 1000
IDLE_WAIT_S = 0.05
POLL_S = 0.01  # calls in flight and the log read to its head: read again after this (a round trip a turn saved)
RELOAD_S = 2.0  # the open transactions read again from the store (a person's retry of a dead letter shows)
LOCK_NAME = "wallet-deliverer"  # one deliverer per store (Db.exclusive: per database and schema)
WAITING_NOTE_S = 1.0  # the lock not taken by then: one line says whom it waits for
RECONNECTS_IN_A_ROW_MAX = 120  # about a minute of a store that does not answer: then the error ends the run
PlayerKey = tuple[str, str]
_FINAL_BY_OUTCOME = {OK: "delivered", ROLLED_BACK: "rolled_back", REFUSED: "dead"}  # the status a final answer gives


def client_for(wallet: OperatorWallet) -> WalletClient | JetStreamClient:
    """How the operator hears of its transactions: called over HTTP, or published to JetStream."""
    return JetStreamClient(wallet) if wallet.transport == "jetstream" else WalletClient(wallet)


def _run(queue: deque[WalletTx], now: int, room: int) -> list[WalletTx]:
    """The player's transactions for one batch (docs/wallet.md, "Batches"): its head, then those
    after it in ledger order while they are due and not debits, up to `room`. A debit is only
    ever the head and alone: one with no answer has its rollback and next generation sent before
    anything after it, and a void's rollback names the debit generation that stands, known only
    once every debit before it is final."""
    run = [queue[0]]
    if queue[0].kind == "debit":
        return run
    for tx in islice(queue, 1, room):
        if tx.kind == "debit" or tx.next_at_ms > now:
            break
        run.append(tx)
    return run


def _head_seq(item: tuple[PlayerKey, deque[WalletTx]]) -> int:
    queue = item[1]
    return queue[0].seq if queue else -1


def _alone(client: WalletClient | JetStreamClient, kind: str, tx_id: str, body: str) -> list[Answer]:
    return [client.post(kind, tx_id, body)]


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class Delivered:
    """What one run did (`ledger wallet deliver --json`)."""

    events: int = 0
    derived: int = 0
    calls: int = 0  # requests (HTTP calls, JetStream publishes)
    transactions: int = 0  # transactions sent (= calls, unless batched)
    batch_sizes: dict[int, int] = field(default_factory=dict)  # batched: items in a call -> how many calls
    outcomes: dict[str, int] = field(default_factory=dict)
    reconnects: int = 0
    position: int = 0


class Deliverer:
    def __init__(self, url: str, wallets: dict[str, OperatorWallet], *, page_size: int = PAGE_SIZE_DEFAULT) -> None:
        self.url = url
        self.wallets = wallets
        self.page_size = page_size
        self.clients = {op: client_for(w) for op, w in wallets.items()}
        # transactions a call carries: batches over HTTP only (a JetStream message is one transaction)
        self.batch_max = {op: w.batch_max if isinstance(self.clients[op], WalletClient) else 1
                          for op, w in wallets.items()}
        self.pools = {op: ThreadPoolExecutor(w.concurrency, thread_name_prefix=f"wallet-{op}")
                      for op, w in wallets.items()}
        self.in_flight: dict[Future[list[Answer]], list[WalletTx]] = {}  # a call's transactions (a batch's, in order)
        self.busy: set[PlayerKey] = set()
        self.per_operator: dict[str, int] = dict.fromkeys(wallets, 0)  # calls in flight
        self.unrecorded: list[Attempt] = []  # answers not yet in the store (kept across a reconnect)
        # The open transactions per player in ledger order: a mirror of the store's, changed only
        # after the store was, and read again from it every RELOAD_S and after a reconnect.
        self.queues: dict[PlayerKey, deque[WalletTx]] | None = None
        self._loaded_at = 0.0
        self._polled_at = 0.0  # when a page read found nothing new
        self.result = Delivered()
        self._open()

    def _open(self) -> None:
        self.queues = None
        self._position: int | None = None  # the store's position, as last read or written by this connection
        self.log = EventLog.open(self.url, ledger_required=False)
        self.outbox = Outbox(Db.for_store(self.log.backend))
        self.lock = self._one_deliverer(self.outbox.db)
        self.deriver = Deriver(self.log.round_records, self._notices)

    @staticmethod
    def _one_deliverer(db: Db) -> ExitStack:
        """Held for as long as this connection lives (a PostgreSQL session advisory lock, an
        flock beside the SQLite file): a second deliverer on the store waits here, before it
        calls any wallet, until the first stops or dies. Taken again after a reconnect (the
        lost session took its lock along), so a deliverer that lost it waits its turn too."""
        note = threading.Timer(WAITING_NOTE_S, print, ("ledger wallet deliver: another deliverer is running on "
                                                       "this store; waiting until it stops",),
                               {"file": sys.stderr, "flush": True})
        note.daemon = True
        note.start()
        held = ExitStack()
        try:
            held.enter_context(db.exclusive(LOCK_NAME))
        finally:
            note.cancel()
        return held

    def _notices(self, operator: str) -> bool:
        wallet = self.wallets.get(operator)
        return wallet.debit_notices if wallet else True

    def close(self) -> None:
        for pool in self.pools.values():
            pool.shutdown(wait=False, cancel_futures=True)
        for client in self.clients.values():
            client.close()
        self._close_store()

    def _close_store(self) -> None:
        for closing in (self.lock.close, self.outbox.db.close, self.log.close):
            try:
                closing()
            except Exception:  # closing after the store went away: nothing left to keep
                pass

    # ---------------------------------------------------------------- loop
    def run(self, *, until_idle: bool = False, stop: threading.Event | None = None) -> Delivered:
        stop = stop or threading.Event()
        failed = 0
        while not stop.is_set():
            try:
                derived = self.derive(poll=not self.in_flight)
                sent, waiting = self.dispatch()
                recorded = self.collect(IDLE_WAIT_S if not derived else 0)
                if recorded:  # the players whose answers were just recorded: their next call goes now
                    more, waiting = self.dispatch()
                    sent += more
            except UNREACHABLE as exc:
                failed += 1
                if failed > RECONNECTS_IN_A_ROW_MAX:
                    raise
                self._reconnect(exc)
                continue
            failed = 0
            if until_idle and not (derived or sent or waiting or recorded or self.in_flight or self.unrecorded):
                break
        self._drain()
        self.result.position = self._last_position()
        return self.result

    def _last_position(self) -> int:
        """The store's position when stopped; a stop that comes right after the store went away
        (before a turn noticed it) gives the last one this connection knew: the stop is no error."""
        try:
            return self.outbox.position()
        except UNREACHABLE:
            return self._position if self._position is not None else self.result.position

    def _drain(self) -> None:
        """Stopped: the calls in flight answered (each within its timeout) and recorded, so a
        stop loses nothing it could keep; a store that does not answer leaves them to be resent."""
        try:
            while self.in_flight:
                self.collect(1.0)
        except UNREACHABLE:
            pass

    def _reconnect(self, exc: BaseException) -> None:
        print(f"ledger wallet deliver: store unreachable ({type(exc).__name__}: {exc}); reconnecting", file=sys.stderr)
        self.result.reconnects += 1
        time.sleep(0.5)
        self._close_store()
        try:
            self._open()
        except UNREACHABLE:
            pass  # tried again on the next turn

    def derive(self, *, poll: bool = True) -> int:
        """One page of events turned into transactions, stored with the new position. `poll`
        False (calls in flight): the log, read to its head less than POLL_S ago, is not read
        again yet."""
        if not poll and time.monotonic() - self._polled_at < POLL_S:
            return 0
        if self._position is None:
            self._position = self.outbox.position()
        start = self._position + 1
        page = self.log.page(start, self.page_size, WALLET_KINDS)
        if not page.read:
            self._polled_at = time.monotonic()
            return 0
        txs = self.deriver.derive(page.records, now_ms())
        try:
            self.outbox.store_page(txs, start, page.last)
        except Concurrent:
            self.queues = self._position = None  # another deliverer: what is open, and where, read again
            return 0
        self._position = page.last
        if self.queues is not None:
            for tx in txs:
                if tx.status in OPEN:
                    self.queues.setdefault((tx.operator_id, tx.player_id), deque()).append(tx)
        self.result.events += page.read
        self.result.derived += len(txs)
        return page.read

    def dispatch(self) -> tuple[int, int]:
        """Send the next transaction of every player that has none in flight and is due, within
        each operator's concurrency, the oldest heads first (batched: up to `batch_max` transactions in one call, each
        player's a run from its head, `_run`). Returns how many were sent, and how many open ones wait."""
        if self.unrecorded:
            self.outbox.record(self.unrecorded)
            self.unrecorded = []
        if self.queues is None or time.monotonic() - self._loaded_at > RELOAD_S:
            if self.in_flight:
                return 0, 1  # read again once every answer in flight is recorded
            self._load()
        assert self.queues is not None
        now, waiting, sent = now_ms(), 0, 0
        batches: dict[str, list[WalletTx]] = {}  # per operator, the players' runs gathered for its next call
        # the players whose head is oldest first: a player behind gets a free slot before one that
        # is not (each player's own order is its queue's; only which player goes next is chosen)
        for key, queue in sorted(self.queues.items(), key=_head_seq):
            if not queue:
                del self.queues[key]
                continue
            if key in self.busy:
                waiting += len(queue) - 1
                continue
            wallet, tx = self.wallets.get(key[0]), queue[0]
            if wallet is None:
                continue  # an operator without configuration: its transactions wait in the store
            if tx.next_at_ms > now or self.per_operator[tx.operator_id] >= wallet.concurrency:
                waiting += len(queue)
                continue
            batch = batches.setdefault(tx.operator_id, [])
            batch_max = self.batch_max[tx.operator_id]
            run = _run(queue, now, batch_max - len(batch)) if batch_max > 1 else [tx]
            batch.extend(run)
            self.busy.add(key)  # one call of a player's in flight
            if len(batch) >= batch_max:
                self._send(batches.pop(tx.operator_id))
            sent += len(run)
            waiting += len(queue) - len(run)
        for batch in batches.values():
            self._send(batch)
        return sent, waiting

    def _load(self) -> None:
        queues: dict[PlayerKey, deque[WalletTx]] = {}
        for tx in self.outbox.open_txs(None):
            queues.setdefault((tx.operator_id, tx.player_id), deque()).append(tx)
        self.queues, self._loaded_at = queues, time.monotonic()

    def _send(self, txs: list[WalletTx]) -> None:
        """One call: a transaction alone (`batch_max` 1), or a batch of them to `<url>/batch`."""
        operator = txs[0].operator_id
        client = self.clients[operator]
        items = [(tx.kind, tx.tx_id, self._resolved_body(tx)) for tx in txs]
        if self.batch_max[operator] > 1 and isinstance(client, WalletClient):
            future = self.pools[operator].submit(client.post_batch, items)
            self.result.batch_sizes[len(txs)] = self.result.batch_sizes.get(len(txs), 0) + 1
        else:
            future = self.pools[operator].submit(_alone, client, *items[0])
        self.in_flight[future] = txs
        self.per_operator[operator] += 1
        self.result.calls += 1
        self.result.transactions += len(txs)

    def _resolved_body(self, tx: WalletTx) -> str:
        """A void's rollback names the debit generation that stands (a debit sent again after
        no answer has a new id); known before it is sent, since the player's earlier
        transactions are final by then, so every resend carries the same body."""
        if tx.kind != "rollback" or tx.reason != "void":
            return tx.body
        target = self.outbox.get(tx.ref_tx_id)
        while target is not None and target.status == "unanswered":
            target = self.outbox.get(tx_id_for(target.tx_id, "generation", target.generation + 1))
        if target is None or target.tx_id == tx.ref_tx_id:
            return tx.body
        return tx.body.replace(tx.ref_tx_id, target.tx_id)

    def collect(self, timeout: float) -> int:
        """Wait (up to `timeout`) for answers; record those that came. Returns how many."""
        if not self.in_flight:
            if timeout:
                time.sleep(timeout)
            return 0
        done, _ = wait(list(self.in_flight), timeout=timeout or None, return_when=FIRST_COMPLETED)
        attempts = []
        for future in done:
            txs = self.in_flight.pop(future)
            self.per_operator[txs[0].operator_id] -= 1
            for tx, answer in zip(txs, future.result(), strict=True):
                self.busy.discard((tx.operator_id, tx.player_id))
                attempts.append(self.outcome(tx, answer))
        self.unrecorded.extend(attempts)
        self.outbox.record(self.unrecorded)
        self.unrecorded = []
        for attempt in attempts:
            self._follow(attempt)
        return len(attempts)

    def _follow(self, attempt: Attempt) -> None:
        """The mirror after a recorded answer: the transaction stays at its player's head while
        open, leaves when final; a debit's rollback and next generation go first."""
        tx = attempt.tx
        queue = self.queues.get((tx.operator_id, tx.player_id)) if self.queues is not None else None
        # batched, the transaction may follow others of its player's run still open before it
        at = next((i for i, queued in enumerate(islice(queue or (), BATCH_MAX_LIMIT)) if queued.tx_id == tx.tx_id),
                  None)
        if queue is None or at is None or (attempt.more and at != 0):
            self.queues = None  # not what was sent: read again from the store
            return
        if tx.status in OPEN:
            queue[at] = tx
        else:
            del queue[at]
        for more in reversed(attempt.more):
            queue.appendleft(more)

    def outcome(self, tx: WalletTx, answer: Answer) -> Attempt:
        """The transaction after one call's answer (docs/wallet.md, "Rules per kind of call")."""
        self.result.outcomes[answer.outcome] = self.result.outcomes.get(answer.outcome, 0) + 1
        attempts, kept = tx.attempts + 1, answer.text[:2000]  # one `replace` per answer: it is per transaction
        now = now_ms()
        final = _FINAL_BY_OUTCOME.get(answer.outcome)
        if final is not None:
            done = replace(tx, status=final, done_ms=now, attempts=attempts, last_answer=kept)
            return Attempt(done, answer.outcome, answer.http_status, answer.text)
        assert answer.outcome == NO_ANSWER
        if tx.kind == "debit":  # never left in doubt: rolled back, then the stake sent again under a new id
            more = tuple(replace(m, derived_ms=now) for m in next_generation(tx, tx.seq + 1))
            done = replace(tx, status="unanswered", done_ms=now, attempts=attempts, last_answer=kept)
            return Attempt(done, NO_ANSWER, answer.http_status, answer.text, more)
        wallet = self.wallets[tx.operator_id]
        wait_s = min(wallet.backoff_max_s, wallet.backoff_s * 2 ** min(tx.attempts, 20))
        again = replace(tx, status="retrying", next_at_ms=now + int(wait_s * 1000), attempts=attempts, last_answer=kept)
        return Attempt(again, NO_ANSWER, answer.http_status, answer.text)
