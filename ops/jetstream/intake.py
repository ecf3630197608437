"""NATS JetStream intake: `ledger publish` and `ledger consume`.

Commands go to `ledger.feed.<table>` in the stream LEDGER_FEED with the
`Nats-Msg-Id` header set to the command id, so JetStream's duplicate window drops
a publisher's resends. Consumer I of N owns the tables whose stable hash is I
(ops/service/committer.partition_of, the same in every process and machine). Each
partition has its own durable pull consumer over the whole stream (nats-server 2.9
has no per-consumer subject partitioning), and acks, without writing them, the
messages of tables it does not own. A consumer pulls a batch, commits it in one
transaction, publishes each result to `ledger.results.<table>`, and only then acks
(AckAll on the batch's last message). `max_ack_pending` is one batch: after a crash
the server redelivers the unacked batch, in order, before anything newer, and
command-id idempotency turns what was already committed into duplicates.
"""
from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

import nats
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, StreamConfig
from nats.js.errors import NotFoundError

from ledger.app import LedgerApp
from ledger.batching import Result
from ops.service.committer import partition_of, write_batch

NATS_URL_DEFAULT = "nats://127.0.0.1:4222"
STREAM_DEFAULT = "LEDGER_FEED"
PREFIX_DEFAULT = "ledger"  # subjects <prefix>.feed.<table> and <prefix>.results.<table>
DUPLICATE_WINDOW_S = 120.0
ACK_WAIT_S_DEFAULT = 30.0
BATCH_DEFAULT = 500
PUBLISH_IN_FLIGHT = 1000
CONTROL_ATTEMPTS = 5  # a control request (stream/consumer info, subscribe) timing out under load is asked again
NO_TABLE = "_"  # the subject token of a line with no readable table id (the ledger refuses it)
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


def table_of_token(token: str) -> str:
    from urllib.parse import unquote

    return unquote(token)


def _ids(line: bytes) -> tuple[str | None, str | None]:
    try:
        data = json.loads(line)
    except ValueError:
        return None, None
    if not isinstance(data, dict):
        return None, None
    table, cid = data.get("table_id"), data.get("command_id")
    return (table if isinstance(table, str) else None), (cid if isinstance(cid, str) else None)


async def ensure_stream(js: Any, stream: str, prefix: str = PREFIX_DEFAULT) -> None:
    try:
        await js.stream_info(stream)
    except NotFoundError:
        await js.add_stream(StreamConfig(name=stream, subjects=[f"{prefix}.feed.>"],
                                         duplicate_window=DUPLICATE_WINDOW_S))


async def publish(lines: Iterable[bytes], nats_url: str = NATS_URL_DEFAULT, stream: str = STREAM_DEFAULT,
                  prefix: str = PREFIX_DEFAULT) -> dict[str, int]:
    """Send feed lines in order; counts of published and duplicate (dropped by the window) messages."""
    nc = await nats.connect(nats_url)
    try:
        js = nc.jetstream(publish_async_max_pending=PUBLISH_IN_FLIGHT)
        await ensure_stream(js, stream, prefix)
        acks = []
        for line in lines:
            line = line.strip()
            if not line:
                continue
            table, cid = _ids(line)
            headers = {"Nats-Msg-Id": cid} if cid else None
            # Awaited one by one, so the messages leave in feed order; the acks are awaited together.
            acks.append(await js.publish_async(f"{prefix}.feed.{token_for(table)}", line, headers=headers))
        done = await asyncio.gather(*acks)
    finally:
        await nc.close()
    duplicates = sum(1 for a in done if a.duplicate)
    return {"published": len(done) - duplicates, "duplicate": duplicates}


@dataclass
class ConsumeStats:
    batches: int = 0
    commands: int = 0  # commands of this partition committed (duplicates included)
    skipped: int = 0  # messages of other partitions, acked unread


class Consumer:
    def __init__(self, app: LedgerApp, *, nats_url: str = NATS_URL_DEFAULT, stream: str = STREAM_DEFAULT,
                 partitions: int = 1, partition: int = 0, batch: int = BATCH_DEFAULT,
                 ack_wait_s: float = ACK_WAIT_S_DEFAULT, prefix: str = PREFIX_DEFAULT) -> None:
        self.app, self.nats_url, self.stream, self.prefix = app, nats_url, stream, prefix
        self.partitions, self.partition, self.batch, self.ack_wait_s = partitions, partition, batch, ack_wait_s
        self.stop = asyncio.Event()
        self.stats = ConsumeStats()
        self.after_commit: Any = None  # called between commit and ack (tests crash the process there)

    @property
    def durable(self) -> str:
        return f"ledger-p{self.partition}-of-{self.partitions}"

    async def run(self, idle_exit: bool = False, fetch_timeout_s: float = 1.0) -> ConsumeStats:
        """Pull, commit, publish results, ack; until `stop` is set (SIGTERM), or with `idle_exit`
        until a fetch finds nothing left."""
        nc = await nats.connect(self.nats_url)
        try:
            js = nc.jetstream()
            await patiently(lambda: ensure_stream(js, self.stream, self.prefix))
            config = ConsumerConfig(ack_policy=AckPolicy.ALL, ack_wait=self.ack_wait_s, max_ack_pending=self.batch,
                                    deliver_policy=DeliverPolicy.ALL, max_deliver=-1)
            sub = await patiently(lambda: js.pull_subscribe(f"{self.prefix}.feed.>", durable=self.durable,
                                                            stream=self.stream, config=config))
            while not self.stop.is_set():
                msgs = await self._fetch(sub, fetch_timeout_s)
                if msgs is None:
                    if idle_exit and await self._drained(sub):
                        break
                    continue
                await self._handle(nc, msgs)
        finally:
            await nc.close()
        return self.stats

    async def _fetch(self, sub: Any, timeout_s: float) -> list[Any] | None:
        """The next messages, None when none came in time. nats-py raises its own TimeoutError,
        or a bare asyncio one when its deadline runs out between its two pull requests (seen
        under load: it ended `ledger consume` with service_timeout); both are builtin TimeoutErrors."""
        try:
            msgs: list[Any] = await sub.fetch(self.batch, timeout=timeout_s)
        except TimeoutError:
            return None
        return msgs

    async def _drained(self, sub: Any) -> bool:
        try:
            info = await sub.consumer_info()
        except TimeoutError:  # no answer yet: not known to be drained, fetch again
            return False
        return bool(info.num_pending == 0 and info.num_ack_pending == 0)

    async def _handle(self, nc: Any, msgs: list[Any]) -> None:
        feed = f"{self.prefix}.feed."
        tokens = [m.subject[len(feed):] for m in msgs]
        mine = [i for i, t in enumerate(tokens) if partition_of(table_of_token(t), self.partitions) == self.partition]
        if mine:
            raws = [msgs[i].data for i in mine]
            # The store is synchronous: commit in a thread, the connection keeps answering pings.
            results: list[Result] = await asyncio.get_running_loop().run_in_executor(None, write_batch, self.app, raws)
            for i, result in zip(mine, results):
                await nc.publish(f"{self.prefix}.results.{tokens[i]}", json.dumps(result.as_dict()).encode())
        if self.after_commit is not None:
            self.after_commit(self.stats.batches + 1)
        await msgs[-1].ack()  # AckAll: the whole batch, only now that it is committed
        try:
            await nc.flush()
        except TimeoutError:  # the ack may be lost: the batch comes again, as duplicates
            pass
        self.stats.batches += 1
        self.stats.commands += len(mine)
        self.stats.skipped += len(msgs) - len(mine)
