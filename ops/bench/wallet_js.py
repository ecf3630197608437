"""An operator consuming its wallet transactions over JetStream, as the trials and tests see it
(docs/wallet.md, "JetStream"): every publish on the operator's subjects as it happens (resends
included, before the stream drops them by `Nats-Msg-Id`), the stream's messages, and a
consumer applying them in order (`WalletState`, as the fake HTTP wallet does).
"""
from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from typing import Any

import nats

from ops.bench.fake_wallet import WalletState
from ops.wallet.client import sign


async def stream_messages(nats_url: str, stream: str) -> tuple[list[Any], float]:
    """Every message the stream holds, in order, and its duplicate window in seconds."""
    nc = await nats.connect(nats_url)
    try:
        js = nc.jetstream()
        info = await js.stream_info(stream)
        msgs = [await js.get_msg(stream, seq) for seq in range(info.state.first_seq or 1, info.state.last_seq + 1)]
        return msgs, float(info.config.duplicate_window or 0)
    finally:
        await nc.close()


async def delete_stream(nats_url: str, stream: str) -> None:
    nc = await nats.connect(nats_url)
    try:
        await nc.jetstream().delete_stream(stream)
    finally:
        await nc.close()


def consumed(msgs: list[Any], subject: str, secret: bytes) -> tuple[WalletState, list[str]]:
    """What a consumer applying `msgs` in order holds, and what is wrong with the messages
    themselves (a bad signature, an id that is not the body's, a subject not the operator's)."""
    state, wrong = WalletState(), []
    for m in msgs:
        body = json.loads(m.data)
        if m.headers.get("X-Ledger-Signature") != sign(m.data, secret):
            wrong.append(f"message {m.seq}: bad signature")
        if m.headers.get("Nats-Msg-Id") != body["transaction_id"]:
            wrong.append(f"message {m.seq}: Nats-Msg-Id {m.headers.get('Nats-Msg-Id')} is not its transaction id")
        if not m.subject.startswith(subject + "."):
            wrong.append(f"message {m.seq}: subject {m.subject}")
        state.handle(m.subject.rsplit(".", 1)[-1], body)
    return state, wrong


class PublishWatch:
    """Every publish on `<subject>.>` as the server relays it (a plain subscription beside the
    stream: it sees the resends the stream drops), with when each id was first and last seen.
    `on_publish` is called for each (the trials count the deliverer's calls with it)."""

    def __init__(self, nats_url: str, subject: str, on_publish: Callable[[], None] = lambda: None) -> None:
        self.nats_url, self.subject, self.on_publish = nats_url, subject, on_publish
        self.published = 0
        self.seen: dict[str, tuple[float, float]] = {}  # msg id -> (first, last) monotonic time
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="wallet-js-watch", daemon=True)
        self._nc: Any = None

    def __enter__(self) -> PublishWatch:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._subscribe(), self._loop).result(10)
        return self

    async def _subscribe(self) -> None:
        self._nc = await nats.connect(self.nats_url)
        await self._nc.subscribe(f"{self.subject}.>", cb=self._seen)
        await self._nc.flush()

    async def _seen(self, msg: Any) -> None:
        now, msg_id = time.monotonic(), (msg.headers or {}).get("Nats-Msg-Id", "")
        self.published += 1
        self.seen[msg_id] = (self.seen.get(msg_id, (now, now))[0], now)
        self.on_publish()

    def resend_gap_max_s(self) -> float:
        """The longest a resend of an id came after its first publish (0: none resent)."""
        return max((last - first for first, last in self.seen.values()), default=0.0)

    def __exit__(self, *exc: object) -> None:
        async def close() -> None:
            await self._nc.flush()
            await self._nc.close()

        try:
            asyncio.run_coroutine_threadsafe(close(), self._loop).result(10)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
