"""An operator who consumes instead of being called: its transactions published to its
JetStream subject on the real nats-server (127.0.0.1:4222, a stream of this test's own),
`Nats-Msg-Id` = the transaction id, signed as over HTTP. A consumer applying the stream's
messages in order (the fake wallet's state) ends as the ledger, and the reconcile report on its
statement is empty; a resend of a transaction is dropped by the server (docs/wallet.md)."""
from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import uuid
from pathlib import Path
from typing import Any

import nats

from ops.jetstream.intake import NATS_URL_DEFAULT
from ops.wallet.config import load
from ops.wallet.deliverer import Deliverer
from ops.wallet.jetstream import JetStreamClient
from tests.e2e.wallet.conftest import SECRET, SECRET_ENV, filled
from tests.support.fake_wallet import WalletState
from tests.support.wallet_check import describe, problems


async def _messages(stream: str) -> list[Any]:
    nc = await nats.connect(NATS_URL_DEFAULT)
    try:
        js = nc.jetstream()
        last = (await js.stream_info(stream)).state.last_seq
        return [await js.get_msg(stream, seq) for seq in range(1, last + 1)]
    finally:
        await nc.close()


async def _delete(stream: str) -> None:
    nc = await nats.connect(NATS_URL_DEFAULT)
    try:
        await nc.jetstream().delete_stream(stream)
    finally:
        await nc.close()


def consumed(stream: str, subject: str) -> tuple[WalletState, list[Any]]:
    """What a consumer of the stream holds after applying every message in order."""
    state, msgs = WalletState(), asyncio.run(_messages(stream))
    for m in msgs:
        expected = "sha256=" + hmac.new(SECRET.encode(), m.data, hashlib.sha256).hexdigest()
        assert m.headers["X-Ledger-Signature"] == expected
        body = json.loads(m.data)
        assert m.headers["Nats-Msg-Id"] == body["transaction_id"]
        assert m.subject.startswith(subject + ".")
        state.handle(m.subject.rsplit(".", 1)[-1], body)
    return state, msgs


def test_published_once_per_transaction(store_url: str, tmp_path: Path) -> None:
    url = filled(store_url, rounds=4)
    token = uuid.uuid4().hex[:12]
    stream, subject = f"WALLET2_TEST_{token}", f"ledger.wallet2test.{token}"
    config = tmp_path / "wallet.toml"
    config.write_text(f'[operators.default]\ntransport = "jetstream"\nnats_url = "{NATS_URL_DEFAULT}"\n'
                      f'stream = "{stream}"\nsubject = "{subject}"\nsecret_env = "{SECRET_ENV}"\ntimeout_s = 5\n')
    wallets = load(str(config))
    try:
        deliverer = Deliverer(url, wallets)
        try:
            deliverer.run(until_idle=True)
        finally:
            deliverer.close()
        assert deliverer.result.calls > 0 and set(deliverer.result.outcomes) == {"ok"}
        state, msgs = consumed(stream, subject)
        assert len(msgs) == deliverer.result.calls
        assert problems(url, state) == [], describe(url, state)

        client = JetStreamClient(wallets["default"])  # a resend after a crash: the same id, dropped
        try:
            first = msgs[0]
            again = client.post(first.subject.rsplit(".", 1)[-1], first.headers["Nats-Msg-Id"], first.data.decode())
        finally:
            client.close()
        assert again.outcome == "ok" and json.loads(again.text)["duplicate"] is True
        assert len(asyncio.run(_messages(stream))) == len(msgs)
    finally:
        asyncio.run(_delete(stream))
