"""Wallet transactions published to a JetStream subject, for an operator who consumes instead
of being called (docs/wallet.md, "JetStream"). The same signed bodies as over HTTP, one message
per transaction on `<subject>.<kind>`, `Nats-Msg-Id` = the transaction id: a resend (after no
acknowledgement, a crash, a restart) within the stream's duplicate window is dropped by the
server, and the consumer applies each transaction id once, as an HTTP wallet does.

The stream's acknowledgement is the answer: stored (or a duplicate of what was stored) is
`ok`; no acknowledgement in time is no answer, and the rules per kind of call apply as over
HTTP. nats-py is asyncio: one event loop in its own thread per operator, which the
deliverer's worker threads hand their publishes to.
"""
from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import nats
from nats.js.api import StreamConfig
from nats.js.errors import NotFoundError

from ops.wallet.client import NO_ANSWER, OK, SIGNATURE_HEADER, Answer, sign
from ops.wallet.config import OperatorWallet


class JetStreamClient:
    """Publishes one operator's transactions; `post` is safe to call from several threads."""

    def __init__(self, wallet: OperatorWallet) -> None:
        self.wallet = wallet
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"wallet-js-{wallet.operator_id}",
                                        daemon=True)
        self._thread.start()
        self._nc: Any = None
        self._js: Any = None
        self._ready = asyncio.Lock()

    async def _jetstream(self) -> Any:
        async with self._ready:
            if self._nc is None or self._nc.is_closed:
                self._nc = await nats.connect(self.wallet.nats_url, connect_timeout=self.wallet.timeout_s,
                                              allow_reconnect=False)
                self._js = self._nc.jetstream(timeout=self.wallet.timeout_s)
                try:
                    await self._js.stream_info(self.wallet.stream)
                except NotFoundError:
                    await self._js.add_stream(StreamConfig(name=self.wallet.stream,
                                                           subjects=[f"{self.wallet.subject}.>"],
                                                           duplicate_window=self.wallet.duplicate_window_s))
            return self._js

    async def _publish(self, kind: str, tx_id: str, data: bytes) -> Any:
        js = await self._jetstream()
        headers = {"Nats-Msg-Id": tx_id, SIGNATURE_HEADER: sign(data, self.wallet.secret)}
        return await js.publish(f"{self.wallet.subject}.{kind}", data, headers=headers,
                                stream=self.wallet.stream)

    def post(self, kind: str, tx_id: str, body: str) -> Answer:
        future = asyncio.run_coroutine_threadsafe(self._publish(kind, tx_id, body.encode()), self._loop)
        try:
            ack = future.result(self.wallet.timeout_s * 3)  # connect, stream, publish: each within its timeout
        except Exception as exc:  # no acknowledgement: stored or not, the same id is sent again
            future.cancel()
            self._forget()
            return Answer(NO_ANSWER, 0, f"{type(exc).__name__}: {exc}"[:300])
        answer = {"status": "ok", "transaction_id": tx_id, "stream": ack.stream, "seq": ack.seq,
                  "duplicate": bool(ack.duplicate)}
        return Answer(OK, 0, json.dumps(answer))

    def _forget(self) -> None:
        """The connection dropped after a failure: the next publish connects again."""
        asyncio.run_coroutine_threadsafe(self._drop(), self._loop)

    async def _drop(self) -> None:
        nc, self._nc = self._nc, None
        if nc is not None and not nc.is_closed:
            try:
                await nc.close()
            except Exception:  # closing a broken connection: nothing to keep
                pass

    def close(self) -> None:
        try:
            asyncio.run_coroutine_threadsafe(self._drop(), self._loop).result(5)
        except Exception:  # a loop stuck on a dead server: the thread is a daemon
            pass
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
