"""NATS JetStream intake: `ledger publish` and `ledger consume`.

Subjects. A command goes to `<prefix>.feed.<b0>.<b1>...<b5>.<table>` in the stream
LEDGER_FEED: b0..b5 are the low six bits of the table's slot, partition_of(table, 64)
(ops/service/committer.py, the same on every machine). Consumer I of N (N a power of
two up to 64) filters `<prefix>.feed.<bits of I, low first>.*...*`: since N divides 64,
slot mod N is partition_of(table, N), so one filter subject per consumer (all nats-server
2.9 allows) is exactly its tables, and it receives nothing else.

Dedup. `Nats-Msg-Id` is `<command_id>:<hash of the canonical JSON>`: JetStream's duplicate
window drops a publisher's resend of the same command, but a different command under the
same id reaches the ledger, which refuses it `command_id_conflict` (as `ledger ingest` does).

Delivery. The consumer never trusts a position past what it has committed. At start it
reads its durable's ack floor, deletes the durable and creates it again from the floor + 1
(a new durable starts from the floor of the old layout's consumers that shared its tables,
or from the stream's start). Messages handed to a process that died are therefore
delivered again, first and in stream order; nothing newer of the partition comes before
them. Within one consumer's life every delivery must be the next one (consumer sequence
+1, delivered once): a message a timed-out fetch let slip, or one redelivered after the
ack wait, breaks the run, and the consumer is made again from the last committed
message + 1. A batch is committed in one transaction, its results are published to
`<prefix>.results.<table>`, then its last message is acked (AckAll: everything up to it
was committed, contiguously). What was committed and not acked before a crash comes again
and answers `duplicate`.

Operators. A `configure_operator` names no table: it is published under the table `_` and
committed by that table's partition, while the bets that read it are on every partition. The
feed's order across partitions is the stream's sequence (`ledger publish` sends in feed order),
so, as `ledger ingest --workers` commits one alone after everything before it
(ledger/partitions.py), a consumer commits a batch only once every configure_operator stored
before the batch's last message is committed: the `_` partition's durable has acked past it
(AckAll after commit). It finds them with the stream's next-message-by-subject lookup, once per
configuration (`_configured_before`); the `_` partition itself never waits.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import Awaitable, Callable, Iterable
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any, TypeVar

import nats
from nats.js.api import AckPolicy, ConsumerConfig, ConsumerInfo, DeliverPolicy, StreamConfig
from nats.js.errors import NotFoundError

from domain.text import hostile_at
from ledger import logging as ledger_logging
from ledger.app import LedgerApp
from ledger.batching import Result
from ledger.partitions import is_barrier
from ops.service.committer import partition_of, write_batch

NATS_URL_DEFAULT = "nats://127.0.0.1:4222"
STREAM_DEFAULT = "LEDGER_FEED"
PREFIX_DEFAULT = "ledger"  # subjects <prefix>.feed.<slot bits>.<table> and <prefix>.results.<table>
DUPLICATE_WINDOW_S = 120.0
ACK_WAIT_S_DEFAULT = 30.0
BATCH_DEFAULT = 500
PUBLISH_IN_FLIGHT = 1000
BARRIER_POLL_S = 0.05  # how often a consumer waiting for a configuration asks whether it is committed
CONTROL_ATTEMPTS = 5  # a control request (stream/consumer info, subscribe) timing out under load is asked again
NO_TABLE = "_"  # the subject token of a line with no readable table id (the ledger refuses it)
SLOT_BITS = 6  # one subject token per bit of the table's slot: any power-of-two N up to 64 filters with one subject
PARTITIONS_MAX = 1 << SLOT_BITS
DURABLE_PREFIX = "ledger-p"  # durables ledger-pI-of-N
_UNSAFE = re.compile(r"[^A-Za-z0-9_\-:@/]")
T = TypeVar("T")


async def patiently(request: Callable[[], Awaitable[T]], attempts: int = CONTROL_ATTEMPTS) -> T:
    """A request to the server, asked again when it times out (a busy server answers late; the
    requests asked this way change nothing twice). The last timeout is raised."""
    for _ in range(attempts - 1):
        try:
            return await request()
        except TimeoutError:  # nats' own and the bare one its fetch raises (see Consumer._fetch)
            continue
    return await request()


def token_for(table_id: str | None) -> str:
    """A subject token for a table id: '.', '*', '>', '#', '%' and spaces would break a subject."""
    if not table_id:
        return NO_TABLE
    return _UNSAFE.sub(lambda m: "".join(f"%{b:02X}" for b in m.group().encode()), table_id)


def is_partition_count(n: int) -> bool:
    """N consumers must be a power of two up to 64: then partition_of(table, N) is the low bits of
    the table's slot, which one filter subject can select."""
    return 1 <= n <= PARTITIONS_MAX and n & (n - 1) == 0


def slot_bits(table_id: str | None) -> str:
    """`b0.b1...b5`, the low bits first of partition_of(table, 64); a line without a table id goes
    with the table '_' (the token it is published under)."""
    slot = partition_of(table_id or NO_TABLE, PARTITIONS_MAX)
    return ".".join("1" if slot >> b & 1 else "0" for b in range(SLOT_BITS))


def feed_subject(prefix: str, table_id: str | None) -> str:
    return f"{prefix}.feed.{slot_bits(table_id)}.{token_for(table_id)}"


def filter_subject(prefix: str, partitions: int, partition: int) -> str:
    """Consumer I of N (N = 2^k): I's k bits, low first, then wildcards; exactly as many tokens as a
    feed subject, so subjects of another layout (the old `<prefix>.feed.<table>`) never match."""
    k = partitions.bit_length() - 1
    bits = ["1" if partition >> b & 1 else "0" for b in range(k)] + ["*"] * (SLOT_BITS - k)
    return f"{prefix}.feed.{'.'.join(bits)}.*"


def _overlap(a: str, b: str) -> bool:
    """Two filter subjects of one prefix select common messages (a wildcard token matches any bit)."""
    ta, tb = a.split("."), b.split(".")
    if len(ta) != len(tb):
        return False
    return all(x == y or x == "*" or y == "*" or x == ">" or y == ">" for x, y in zip(ta, tb))


def _parsed(line: bytes) -> dict[str, Any] | None:
    try:
        data = json.loads(line)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _str(data: dict[str, Any] | None, key: str) -> str | None:
    value = data.get(key) if data is not None else None
    return value if isinstance(value, str) else None


def payload_digest(data: dict[str, Any]) -> str:
    """The command's JSON with sorted keys and no spacing, hashed: a resend that differs only in key
    order or spacing is the same command (the ledger's payload hash is on the parsed command too)."""
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(
        "utf-8", "surrogatepass")  # a lone surrogate is hashed too; the ledger refuses it (text_invalid)
    return hashlib.blake2b(canonical, digest_size=12).hexdigest()


async def ensure_stream(js: Any, stream: str, prefix: str = PREFIX_DEFAULT) -> None:
    try:
        await js.stream_info(stream)
    except NotFoundError:
        await js.add_stream(StreamConfig(name=stream, subjects=[f"{prefix}.feed.>"],
                                         duplicate_window=DUPLICATE_WINDOW_S))


async def publish(lines: Iterable[bytes], nats_url: str = NATS_URL_DEFAULT, stream: str = STREAM_DEFAULT,
                  prefix: str = PREFIX_DEFAULT) -> dict[str, int]:
    """Send feed lines in order. Counts: `published` (stored in the stream), `duplicate` (a resend of
    the same command, dropped by the duplicate window) and `conflict` (published lines whose
    command id this run already sent with another payload: the ledger refuses them
    command_id_conflict, as `ledger ingest` does)."""
    nc = await nats.connect(nats_url)
    subjects: dict[str | None, str] = {}  # per table: the slot hash once, not per line
    digests: dict[str, str] = {}  # command id -> payload digest, first seen in this run
    conflicts: list[bool] = []
    try:
        js = nc.jetstream(publish_async_max_pending=PUBLISH_IN_FLIGHT)
        await ensure_stream(js, stream, prefix)
        acks = []
        for line in lines:
            line = line.strip()
            if not line:
                continue
            data = _parsed(line)
            table, cid = _str(data, "table_id"), _str(data, "command_id")
            subject = subjects.get(table)
            if subject is None:
                subject = subjects[table] = feed_subject(prefix, table)
            headers = None
            conflict = False
            if cid and data is not None and hostile_at(cid) is None:  # never a control character into a header
                digest = payload_digest(data)
                conflict = digests.setdefault(cid, digest) != digest
                # The payload in the id: only the same command is deduplicated, never another one.
                headers = {"Nats-Msg-Id": f"{cid}:{digest}"}
            # Awaited one by one, so the messages leave in feed order; the acks are awaited together.
            acks.append(await js.publish_async(subject, line, headers=headers))
            conflicts.append(conflict)
        done = await asyncio.gather(*acks)
    finally:
        await nc.close()
    duplicates = sum(1 for a in done if a.duplicate)
    conflicted = sum(1 for a, c in zip(done, conflicts) if c and not a.duplicate)
    return {"published": len(done) - duplicates, "duplicate": duplicates, "conflict": conflicted}


@dataclass
class ConsumeStats:
    batches: int = 0
    commands: int = 0  # commands committed (duplicates of an earlier delivery included)
    restarts: int = 0  # deliveries out of turn: the consumer was made again from the last commit
    barrier_waits: int = 0  # batches that waited for a configure_operator of the `_` partition


class OutOfTurn(Exception):
    """A delivery that is not the next one of this consumer's life."""


def _floor(info: ConsumerInfo) -> int:
    """The stream sequence up to which a durable of ours had everything committed: its ack floor, or,
    before its first ack, the message before the one it was made to start at (nats-server 2.9
    reports a floor of 0 then, which would replay the stream from its start as duplicates)."""
    acked = info.ack_floor.stream_seq if info.ack_floor else 0
    start = info.config.opt_start_seq or 1
    return max(acked, start - 1)


class Consumer:
    def __init__(self, app: LedgerApp, *, nats_url: str = NATS_URL_DEFAULT, stream: str = STREAM_DEFAULT,
                 partitions: int = 1, partition: int = 0, batch: int = BATCH_DEFAULT,
                 ack_wait_s: float = ACK_WAIT_S_DEFAULT, prefix: str = PREFIX_DEFAULT) -> None:
        if not (is_partition_count(partitions) and 0 <= partition < partitions):
            raise ValueError(f"partitions must be a power of two up to {PARTITIONS_MAX}, 0 <= partition < partitions")
        self.app, self.nats_url, self.stream, self.prefix = app, nats_url, stream, prefix
        self.partitions, self.partition, self.batch, self.ack_wait_s = partitions, partition, batch, ack_wait_s
        self.stop = asyncio.Event()
        self.stats = ConsumeStats()
        self.after_commit: Any = None  # called between commit and ack (tests crash the process there)
        self.committed_seq = 0  # stream sequence of the last message this process committed
        self.configured_to = 0  # stream sequence up to which every configure_operator is known committed
        self.waiting = asyncio.Event()  # set while a batch waits for a configuration (tests)
        self._next_delivery = 1  # consumer sequence the next message must have (a new consumer starts at 1)
        self.fetching = False  # waiting for messages, none in hand
        self.made: ConsumerInfo | None = None  # the durable as this consumer made it (when, from where)
        self.executor: Executor | None = None  # where batches commit (the loop's default threads, or a host's one)

    def write(self, raws: list[bytes]) -> list[Result]:
        """Commit one batch (a lease holder's fences it: ops/jetstream/leased.py)."""
        return write_batch(self.app, raws)

    @property
    def durable(self) -> str:
        return f"{DURABLE_PREFIX}{self.partition}-of-{self.partitions}"

    @property
    def filter(self) -> str:
        return filter_subject(self.prefix, self.partitions, self.partition)

    async def run(self, idle_exit: bool = False, fetch_timeout_s: float = 1.0) -> ConsumeStats:
        """Pull, commit, publish results, ack; until `stop` is set (SIGTERM), or with `idle_exit`
        until a fetch finds nothing left."""
        nc = await nats.connect(self.nats_url)
        try:
            await self.run_on(nc, idle_exit, fetch_timeout_s)
        finally:
            await nc.close()
        return self.stats

    async def run_on(self, nc: Any, idle_exit: bool = False, fetch_timeout_s: float = 1.0) -> None:
        """`run` on a connection the caller owns (a host's slots share one)."""
        js = nc.jetstream()
        await patiently(lambda: ensure_stream(js, self.stream, self.prefix))
        while not self.stop.is_set():
            sub = await self._subscribe(js)
            try:
                if await self._pull(nc, sub, idle_exit, fetch_timeout_s):
                    break
            except OutOfTurn as why:
                self.stats.restarts += 1
                ledger_logging.get_logger().warning("consumer made again", durable=self.durable, reason=str(why),
                                                    from_seq=self.committed_seq + 1)
            finally:
                await sub.unsubscribe()  # what is still queued for it is delivered again, in order

    async def _subscribe(self, js: Any) -> Any:
        """The durable made afresh from the last message known committed + 1: its ack floor (acked
        only after commit), or this process's last commit, whichever is later; a new durable
        starts where the consumers it replaces had all committed. Nothing handed to an earlier
        consumer is trusted: it comes again, before anything newer."""
        try:
            info: ConsumerInfo | None = await patiently(lambda: js.consumer_info(self.stream, self.durable))
        except NotFoundError:
            info = None
        if info is not None:
            if info.config.filter_subject != self.filter:
                raise ValueError(f"durable {self.durable} filters {info.config.filter_subject}, not {self.filter}")
            floor = _floor(info)
            await self._delete(js)
        else:
            floor = await self._inherited_floor(js)
        start = max(floor, self.committed_seq) + 1
        config = ConsumerConfig(durable_name=self.durable, filter_subject=self.filter, ack_policy=AckPolicy.ALL,
                                ack_wait=self.ack_wait_s, max_ack_pending=2 * self.batch, max_deliver=-1,
                                deliver_policy=DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=start)
        self.made = await patiently(lambda: js.add_consumer(self.stream, config))
        self._next_delivery = 1
        return await patiently(lambda: js.pull_subscribe_bind(durable=self.durable, stream=self.stream))

    async def _delete(self, js: Any) -> None:
        try:
            await patiently(lambda: js.delete_consumer(self.stream, self.durable))
        except NotFoundError:  # a retried delete whose first try went through
            pass

    async def _inherited_floor(self, js: Any) -> int:
        """The lowest ack floor of this stream's consumers (another partition count) whose filter
        shares tables with ours; 0 (the stream's start) when there is none. What they committed
        past it comes again as duplicates."""
        infos = await patiently(lambda: js.consumers_info(self.stream))
        floors = [_floor(i) for i in infos if i.name.startswith(DURABLE_PREFIX) and i.config.filter_subject
                  and _overlap(i.config.filter_subject, self.filter)]
        return min(floors, default=0)

    async def _pull(self, nc: Any, sub: Any, idle_exit: bool, fetch_timeout_s: float) -> bool:
        """Batches until stopped (False) or drained with `idle_exit` (True); OutOfTurn after
        committing what came in turn."""
        while not self.stop.is_set():
            self.fetching = True  # nothing in hand: a stop may cancel the wait (ops/jetstream/leased.py)
            try:
                msgs = await self._fetch(sub, fetch_timeout_s)
            finally:
                self.fetching = False
            if msgs is None:
                if idle_exit and await self._drained(sub):
                    return True
                continue
            in_turn = self._in_turn(msgs)
            if in_turn:
                await self._handle(nc, in_turn)
            if len(in_turn) < len(msgs):
                m = msgs[len(in_turn)].metadata
                raise OutOfTurn(f"delivery {m.sequence.consumer} (stream {m.sequence.stream}, delivered "
                                f"{m.num_delivered} times) where {self._next_delivery} was due")
        return False

    def _in_turn(self, msgs: list[Any]) -> list[Any]:
        """The leading messages that are each the next delivery, delivered for the first time: a
        gap (a message a timed-out fetch let slip) or a redelivery (the ack wait ran out) ends it."""
        n = 0
        for m in msgs:
            meta = m.metadata
            if meta.sequence.consumer != self._next_delivery or meta.num_delivered != 1:
                break
            self._next_delivery += 1
            n += 1
        return msgs if n == len(msgs) else msgs[:n]

    async def _fetch(self, sub: Any, timeout_s: float) -> list[Any] | None:
        """The next messages, None when none came in time. nats-py raises its own TimeoutError,
        or a bare asyncio one when its deadline runs out between its two pull requests (seen
        under load: it ended `ledger consume` with service_timeout); both are builtin TimeoutErrors."""
        try:
            msgs: list[Any] = await sub.fetch(self.batch, timeout=timeout_s)
        except TimeoutError:
            return None
        return msgs

    async def _configured_before(self, js: Any, last: int) -> bool:
        """Wait until every configure_operator stored before stream sequence `last` is committed
        (see the module doc); False when stopped while waiting."""
        owner = partition_of(NO_TABLE, self.partitions)
        if owner == self.partition:
            return True  # its configurations come in its own order
        subject = feed_subject(self.prefix, None)
        while self.configured_to < last:
            found = await self._next_stored(js, subject, self.configured_to + 1)
            if found is None:  # none stored after it yet: a later one is stored after `last`
                self.configured_to = last
                break
            if found.seq > last:
                self.configured_to = found.seq - 1
                break
            if found.data and is_barrier(found.data) and not await self._committed(js, owner, found.seq):
                return False
            self.configured_to = found.seq
        return True

    async def _next_stored(self, js: Any, subject: str, start: int) -> Any:
        """The stream's first message on `subject` at sequence `start` or later (None: none)."""
        try:
            return await patiently(lambda: js.get_msg(self.stream, seq=start, subject=subject, next=True))
        except NotFoundError:
            return None

    async def _committed(self, js: Any, owner: int, seq: int) -> bool:
        """Wait until partition `owner`'s durable has acked stream sequence `seq` (False: stopped)."""
        durable = f"{DURABLE_PREFIX}{owner}-of-{self.partitions}"
        waited = False
        while not self.stop.is_set():
            try:
                info = await patiently(lambda: js.consumer_info(self.stream, durable))
                if _floor(info) >= seq:
                    return True
            except NotFoundError:  # not made yet, or being made again
                pass
            if not waited:
                waited = True
                self.stats.barrier_waits += 1
                ledger_logging.get_logger().info("waiting for a configure_operator", durable=self.durable,
                                                 stream_seq=seq, committed_by=durable)
            self.waiting.set()
            await asyncio.sleep(BARRIER_POLL_S)
        return False

    async def _drained(self, sub: Any) -> bool:
        try:
            info = await sub.consumer_info()
        except TimeoutError:  # no answer yet: not known to be drained, fetch again
            return False
        return bool(info.num_pending == 0 and info.num_ack_pending == 0)

    async def _handle(self, nc: Any, msgs: list[Any]) -> None:
        feed = len(self.prefix) + len(".feed.") + 2 * SLOT_BITS  # the table token follows the slot bits
        if not await self._configured_before(nc.jetstream(), msgs[-1].metadata.sequence.stream):
            return  # stopped while waiting: nothing committed, nothing acked; the batch comes again
        raws = [m.data for m in msgs]
        # The store is synchronous: commit in a thread, the connection keeps answering pings.
        results: list[Result] = await asyncio.get_running_loop().run_in_executor(self.executor, self.write, raws)
        for m, result in zip(msgs, results):
            await nc.publish(f"{self.prefix}.results.{m.subject[feed:]}", json.dumps(result.as_dict()).encode())
        self.committed_seq = msgs[-1].metadata.sequence.stream
        if self.after_commit is not None:
            self.after_commit(self.stats.batches + 1)
        await msgs[-1].ack()  # AckAll: every message up to it was delivered in turn and is committed
        try:
            await nc.flush()
        except TimeoutError:  # the ack may be lost: the batch comes again, as duplicates
            pass
        self.stats.batches += 1
        self.stats.commands += len(msgs)
