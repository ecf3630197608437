"""`ledger consume --lease`: a host takes the slots nobody holds, by leases in the store.

The 64 slots of `partition_of(table, 64)` are the unit (docs/scaling.md, "Partition leases"):
slot s is consumed through the durable `ledger-p<s>-of-64` (the same as `--partitions 64
--partition s`), and held by the lease `slot-<s>` in the ledger's PostgreSQL
(ledger/leases.py). A host is one process; it announces itself with the lease `host-<id>`.
Every T/3 (T the lease time) a host:

- renews its host lease and its slots' leases and reads every lease, in one transaction (one
  server instant: the leases it holds run out at the moment its host lease does, so no one
  sees its slots free while it still counts as live); a slot whose lease is gone (it was
  frozen or cut off past T and another host took it) is dropped at once;
- from the snapshot: the live hosts, how many slots each holds, which slots are free; its
  fair share is ceil(64 / live hosts);
- takes free slots while it holds fewer than its share (64 // hosts, one more for the first
  64 % hosts by id), or any free slot when every live host has its share (a slot is never
  left unheld);
- above its share, while the free slots do not cover the other hosts' deficit, hands ONE
  slot back per round: the slot's consumer finishes its batch in hand (committed, acked),
  then the lease is released at once and a host below its share takes it. One handover
  at a time per host, each at a batch boundary; nothing else stops.
A host takes nothing in its first rounds (one lease time): it announces itself first, so
hosts started together share the slots from the start instead of one taking all of them and
handing them over one by one.

Every batch a slot commits is fenced (`LedgerApp.run_batch(fence=...)`): its lease's token is
checked and the row locked in the batch's own transaction, so a holder that lost a slot can
never commit for it after the successor took it over, whatever its clock says; it is refused
(`LeaseLost`, counted as `refused`), drops the slot and goes on with the others. The successor
binds the slot's durable at its ack floor: what was committed and not acked comes again and
answers duplicate; nothing is skipped and a table's commands stay in order.

Takeover bound: a holder that dies, hangs or loses its network stops renewing; its leases
run out T after its last renewal (at most T/3 before it stopped), and the others see them
free within T/3 more: 4/3 T (4 s at the default 3 s), plus binding the durable and one batch.
SIGTERM: every slot finishes its batch and acks, every lease is released, exit 0.
"""
from __future__ import annotations

import asyncio
import math
import os
import random
import socket
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import nats
from nats.js.errors import NotFoundError
from psycopg.errors import LockNotAvailable, QueryCanceled

from ledger import logging as ledger_logging
from ledger.app import LedgerApp
from ledger.batching import Result
from ledger.leases import Lease, LeaseLost, Leases
from ledger.library.recorders import Fence
from ledger.store import env_for, pg_connect_args
from ops.jetstream.intake import (
    ACK_WAIT_S_DEFAULT,
    BATCH_DEFAULT,
    NATS_URL_DEFAULT,
    PARTITIONS_MAX,
    PREFIX_DEFAULT,
    STREAM_DEFAULT,
    Consumer,
    OutOfTurn,
    ensure_stream,
    patiently,
)
from ops.service.committer import write_batch

SLOTS = PARTITIONS_MAX
TTL_MS_DEFAULT = 3000
SLOT_LEASE = "slot-"
HOST_LEASE = "host-"
QUIET_ROUNDS = 3  # rounds a new host only announces itself
ACQUIRE_WAITS_MAX = 2  # lock waits that ran out in one round before it stops taking slots
BUSY_ROUND_S = 0.1  # between rounds while slots change hands (renewals stay within T/3 either way)


def default_host_id() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


def lease_connection(url: str, ttl_ms: int) -> Any:
    """An autocommit connection in the store's schema for the leases. A statement that does not
    answer within the lease time fails (a cut link must not hang the renewals: the host then
    learns on its next round whether it still holds anything), and so does a lock wait."""
    import psycopg

    env = env_for(url)
    conn = psycopg.connect(
        **pg_connect_args(env), connect_timeout=max(2, math.ceil(ttl_ms / 1000)), tcp_user_timeout=ttl_ms,
        # A round's transaction left open by a host frozen or cut off in it holds its leases'
        # rows: the server ends it after T/3, before the leases run out.
        options=(f"-c statement_timeout={ttl_ms} -c lock_timeout={lock_timeout_ms(ttl_ms)} "
                 f"-c idle_in_transaction_session_timeout={max(100, ttl_ms // 3)}"),
    )
    schema = env["POSTGRES_SCHEMA"] or "public"
    conn.execute(f'SET search_path TO "{schema}"')
    return conn


def lock_timeout_ms(ttl_ms: int) -> int:
    """How long taking a slot waits for its old holder's batch in flight (then: next round)."""
    return max(20, min(ttl_ms // 6, 250))


class LeaseExpired(LeaseLost):
    """This host could not renew for a lease time: it drops the slot before the store says so."""


class SlotConsumer(Consumer):
    """One slot's consumer, its every commit fenced by the slot's lease token."""

    def __init__(self, app: LedgerApp, slot: int, token: int, **kwargs: Any) -> None:
        super().__init__(app, partitions=SLOTS, partition=slot, **kwargs)
        self.fence = Fence(f"{SLOT_LEASE}{slot}", token)
        self.expired: Callable[[], bool] = lambda: False  # the host's: no renewal for a lease time

    def write(self, raws: list[bytes]) -> list[Result]:
        return write_batch(self.app, raws, fence=self.fence)

    def _check(self) -> None:
        if self.expired():
            raise LeaseExpired(f"lease {self.fence.name}: not renewed within the lease time")

    async def _subscribe(self, js: Any) -> Any:
        self._check()
        return await super()._subscribe(js)

    async def _fetch(self, sub: Any, timeout_s: float) -> list[Any] | None:
        """As a fixed consumer's; when nothing came, the durable is checked: a holder that lost
        the slot while frozen may have deleted or remade it on waking (before it learnt of the
        loss), and a pull on a durable gone or remade would wait for good. Then it is made
        again from this consumer's last commit (OutOfTurn)."""
        self._check()
        msgs = await super()._fetch(sub, timeout_s)
        if msgs is None and self.made is not None:
            try:
                info = await sub.consumer_info()
            except TimeoutError:
                return None
            except NotFoundError:
                raise OutOfTurn(f"durable {self.durable} is gone") from None
            if info.created != self.made.created:
                raise OutOfTurn(f"durable {self.durable} was made again by another process")
        return msgs


@dataclass
class HostStats:
    taken: int = 0  # slots acquired
    handed: int = 0  # slots released to another host (rebalancing)
    lost: int = 0  # slots dropped: the lease was gone at a renewal, or a commit was refused
    refused: int = 0  # batches the store refused (LeaseLost): nothing of them committed
    batches: int = 0
    commands: int = 0


@dataclass
class Plan:
    """What one round decided from the leases: slots to take, and at most one to hand back."""
    take: list[int]
    give: int | None
    hosts: int
    target: int
    deficit: int  # slots the hosts below their share are short of


def targets(hosts: Iterable[str]) -> dict[str, int]:
    """Each live host's fair share of the 64 slots: 64 // H, one more for the first 64 % H hosts
    by id (every host computes the same)."""
    ranked = sorted(hosts)
    base, extra = divmod(SLOTS, len(ranked))
    return {h: base + (i < extra) for i, h in enumerate(ranked)}


def plan(me: str, held: Iterable[int], leases: Iterable[Lease], rng: random.Random) -> Plan:
    """The fair-share rule of the module doc, on a snapshot of the lease table."""
    rows = list(leases)
    share = targets({r.holder for r in rows if r.name.startswith(HOST_LEASE) and r.live} | {me})
    counts = dict.fromkeys(share, 0)
    taken: set[int] = set()
    for r in rows:
        if r.name.startswith(SLOT_LEASE) and r.live:
            taken.add(int(r.name[len(SLOT_LEASE):]))
            counts[r.holder] = counts.get(r.holder, 0) + 1
    mine = sorted(held)
    counts[me] = len(mine)
    free = [s for s in range(SLOTS) if s not in taken and s not in mine]
    rng.shuffle(free)  # hosts taking at once try different slots first
    deficit = sum(max(0, share[h] - counts[h]) for h in share)
    # Below its share a host takes free slots up to it; when no live host is below its share
    # (a dead host's lease not yet run out), anyone takes them: a slot is never left unheld.
    room = max(0, share[me] - len(mine)) if deficit else len(free)
    # Above its share, one slot per round handed back while the free ones do not cover the others'
    # deficit: each handover at a batch boundary, the next only after a round.
    give = mine[-1] if len(mine) > share[me] and len(free) < deficit else None
    return Plan(free[:room], give, len(share), share[me], deficit)


class LeasedHost:
    """One host: its slots' consumers on one NATS connection, their commits on one thread."""

    def __init__(self, app: LedgerApp, url: str, *, host_id: str | None = None, ttl_ms: int = TTL_MS_DEFAULT,
                 nats_url: str = NATS_URL_DEFAULT, stream: str = STREAM_DEFAULT, prefix: str = PREFIX_DEFAULT,
                 batch: int = BATCH_DEFAULT, ack_wait_s: float = ACK_WAIT_S_DEFAULT) -> None:
        self.app, self.url, self.ttl_ms = app, url, ttl_ms
        self.host_id = host_id or default_host_id()
        self.consumer_args: dict[str, Any] = {"nats_url": nats_url, "stream": stream, "prefix": prefix,
                                              "batch": batch, "ack_wait_s": ack_wait_s}
        self.stop = asyncio.Event()
        self.stats = HostStats()
        self.slots: dict[int, tuple[SlotConsumer, asyncio.Task[None]]] = {}
        self.handing: asyncio.Task[None] | None = None  # the one handover under way
        self.leaving: int | None = None  # its slot (still renewed until released)
        self.renewed_at = time.monotonic()  # when the last round that renewed began
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="commit")  # the app is one thread's
        self.lease_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lease")  # one connection
        self.leases: Leases | None = None
        self.host_token: int | None = None
        self.quiet_rounds = QUIET_ROUNDS
        self.rng = random.Random(self.host_id)
        self.log = ledger_logging.get_logger().bind(host=self.host_id)

    @property
    def round_s(self) -> float:
        return self.ttl_ms / 3000

    async def run(self) -> HostStats:
        nc = await nats.connect(self.consumer_args["nats_url"], max_reconnect_attempts=-1)
        try:
            js = nc.jetstream()
            await patiently(lambda: ensure_stream(js, self.consumer_args["stream"], self.consumer_args["prefix"]))
            while not self.stop.is_set():
                busy = await self._round(nc)
                try:
                    await asyncio.wait_for(self.stop.wait(), BUSY_ROUND_S if busy else self.round_s)
                except TimeoutError:
                    pass
            await self._hand_back_all()
        finally:
            self.executor.shutdown(wait=True)
            self.lease_executor.shutdown(wait=True)
            await nc.close()
            if self.leases is not None:
                self.leases.conn.close()
        return self.stats

    # ------------------------------------------------------------ one round
    async def _round(self, nc: Any) -> bool:
        """One round; True while slots are changing hands (the next round comes sooner)."""
        self._reap()
        tokens = {c.fence.name: c.fence.token for c, _ in self.slots.values()}
        began = time.monotonic()
        try:
            kept, taken, give, busy = await self._db(lambda: self._renew_and_take(tokens))
        except Exception as exc:  # the store out of reach: the slots go on (their commits are fenced)
            self.log.warning("lease round failed", error=_line(exc))
            self._drop_connection()
            return False
        self.renewed_at = began  # the leases kept run at least T from here (the server's clock is later)
        for slot in [s for s, (c, _) in self.slots.items() if c.fence.name not in kept]:
            self._lost(slot, "its lease was taken over")
        for slot, token in taken.items():
            self._start(nc, slot, token)
        if give is not None and give in self.slots and (self.handing is None or self.handing.done()):
            # In a task of its own: the rounds (the renewals) go on while the slot finishes its batch.
            self.handing = asyncio.get_running_loop().create_task(self._hand_back(give))
        return bool(busy)

    def _renew_and_take(self, tokens: dict[str, int]) -> tuple[set[str], dict[int, int], int | None, bool]:
        """The host's lease and its slots' renewed and every lease read, in one transaction (one
        `now()`); then the round's plan made and its free slots taken, each on its own (a slot
        whose old holder's fenced batch is still in flight waits a moment at most, and the
        renewals never wait behind it). The slot leases still this host's, the slots taken with
        their tokens, the slot to hand back, and whether slots are changing hands."""
        leases = self._lease()
        with leases.conn.transaction():
            self.host_token = leases.acquire(f"{HOST_LEASE}{self.host_id}")
            kept = leases.renew_all(tokens) if tokens else set()
            snapshot = leases.snapshot()
        if self.quiet_rounds:  # announced; hosts started together see each other before taking anything
            self.quiet_rounds -= 1
            return kept, {}, None, False
        held = [int(n[len(SLOT_LEASE):]) for n in kept]
        decided = plan(self.host_id, held, snapshot, self.rng)
        taken: dict[int, int] = {}
        waits = 0
        for slot in decided.take:
            try:
                token = leases.acquire(f"{SLOT_LEASE}{slot}")
            except (LockNotAvailable, QueryCanceled):  # its old holder's fenced batch in flight: next round
                waits += 1
                if waits >= ACQUIRE_WAITS_MAX:
                    break
                continue
            if token is not None:
                taken[slot] = token
        return kept, taken, decided.give, decided.deficit > 0

    def _lease(self) -> Leases:
        if self.leases is None:
            self.leases = Leases(lease_connection(self.url, self.ttl_ms), self.host_id, self.ttl_ms)
        return self.leases

    def _drop_connection(self) -> None:
        if self.leases is not None:
            try:
                self.leases.conn.close()
            finally:
                self.leases = None

    async def _db(self, work: Any) -> Any:
        """Lease statements off the event loop (the slots' fetches and acks go on meanwhile)."""
        return await asyncio.get_running_loop().run_in_executor(self.lease_executor, work)

    # ------------------------------------------------------------ slots
    def _start(self, nc: Any, slot: int, token: int) -> None:
        consumer = SlotConsumer(self.app, slot, token, **self.consumer_args)
        consumer.expired = self._expired
        consumer.executor = self.executor
        self.slots[slot] = (consumer, asyncio.get_running_loop().create_task(self._consume(nc, consumer)))
        self.stats.taken += 1
        self.log.info("slot taken", slot=slot, token=token)

    async def _consume(self, nc: Any, consumer: SlotConsumer) -> None:
        # Another host moved this slot's rounds on since this process last held it: read them afresh.
        await asyncio.get_running_loop().run_in_executor(self.executor, self.app.forget_cached)
        try:
            await consumer.run_on(nc)
        except LeaseExpired as why:
            self._lost(consumer.partition, str(why), consumer)
        except LeaseLost as why:
            self.stats.refused += 1
            self._lost(consumer.partition, str(why), consumer)
        except Exception as exc:
            self.log.warning("slot stopped", slot=consumer.partition, error=_line(exc))
            self._lost(consumer.partition, "it failed", consumer)
        finally:
            self.stats.batches += consumer.stats.batches
            self.stats.commands += consumer.stats.commands

    def _expired(self) -> bool:
        """No round renewed the leases for a lease time (this host was frozen or cut off): they
        may be another's now. The slots stop touching their durables until a round says
        (a stale holder waking up would otherwise remake its successors' durables)."""
        return time.monotonic() - self.renewed_at > self.ttl_ms / 1000

    def _lost(self, slot: int, why: str, dropped: SlotConsumer | None = None) -> None:
        """Drop `slot` (the round found its lease gone), or note that `dropped`, a slot's consumer,
        ended on its own finding (a refused batch, no renewal): then only its own entry is
        dropped, never a newer consumer of the same slot, and a loss found while stopping counts too."""
        held = self.slots.get(slot)
        if held is not None and (dropped is None or held[0] is dropped):
            self.slots.pop(slot)
            consumer, task = held
            consumer.stop.set()
            if task is not asyncio.current_task():
                task.cancel()  # a batch in hand cannot commit (fenced); it comes again to the new holder
        elif dropped is None:
            return
        self.stats.lost += 1
        self.log.warning("slot lost", slot=slot, reason=why)

    def _reap(self) -> None:
        """Slots whose consumer ended by itself: no longer held (the lease runs out, or is taken
        back next round)."""
        for slot, (_, task) in list(self.slots.items()):
            if task.done() and slot != self.leaving:
                self.slots.pop(slot)
                self.stats.lost += 1

    async def _hand_back(self, slot: int) -> None:
        """At a batch boundary: the batch in hand committed and acked, then the lease released."""
        consumer, task = self.slots[slot]
        self.leaving = slot
        try:
            await _stopped(consumer, task)
            if self.slots.get(slot, (None, None))[0] is consumer:  # not lost meanwhile
                await self._db(lambda: self._lease().release(consumer.fence.name, consumer.fence.token))
                self.slots.pop(slot, None)
                self.stats.handed += 1
                self.log.info("slot handed back", slot=slot)
        except Exception as exc:  # the store out of reach: the lease runs out by itself
            self.slots.pop(slot, None)
            self.log.warning("slot not handed back", slot=slot, error=_line(exc))
        finally:
            self.leaving = None

    async def _hand_back_all(self) -> None:
        if self.handing is not None:
            await self.handing
        held = list(self.slots.items())
        self.slots.clear()
        await asyncio.gather(*(_stopped(c, t) for _, (c, t) in held), return_exceptions=True)

        def release() -> None:
            leases = self._lease()
            for _, (consumer, _) in held:
                leases.release(consumer.fence.name, consumer.fence.token)
            if self.host_token is not None:
                leases.release(f"{HOST_LEASE}{self.host_id}", self.host_token)
        for attempt in range(2):  # once more on a new connection: its session may be gone (terminated, a restart)
            try:
                await self._db(release)
                return
            except Exception as exc:  # the store out of reach: the leases run out by themselves
                self._drop_connection()
                if attempt:
                    self.log.warning("leases not released", error=_line(exc))


async def _stopped(consumer: SlotConsumer, task: asyncio.Task[None]) -> None:
    """The slot's consumer stopped at a batch boundary: its batch in hand committed and acked; a
    wait for messages (nothing in hand) is cut short rather than waited out."""
    consumer.stop.set()
    if consumer.fetching:
        task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        if not task.cancelled():
            raise


def _line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"
