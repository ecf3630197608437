"""An operator who consumes instead of being called: its transactions published to its
JetStream subject on the real nats-server (127.0.0.1:4222, a stream of this test's own),
`Nats-Msg-Id` = the transaction id, signed as over HTTP. A consumer applying the stream's
messages in order (the fake wallet's state) ends as the ledger, and the reconcile report on its
statement is empty; a resend of a transaction is dropped by the server (docs/wallet.md)."""
from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

from ops.bench.wallet_check import describe, problems
from ops.bench.wallet_js import consumed, delete_stream, stream_messages
from ops.jetstream.intake import NATS_URL_DEFAULT
from ops.wallet.config import load
from ops.wallet.deliverer import Deliverer
from ops.wallet.jetstream import JetStreamClient
from tests.e2e.wallet.conftest import SECRET, SECRET_ENV, filled


def _messages(stream: str) -> list[Any]:
    return asyncio.run(stream_messages(NATS_URL_DEFAULT, stream))[0]


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
        msgs = _messages(stream)
        state, wrong = consumed(msgs, subject, SECRET.encode())
        assert wrong == [] and len(msgs) == deliverer.result.calls
        assert problems(url, state) == [], describe(url, state)

        client = JetStreamClient(wallets["default"])  # a resend after a crash: the same id, dropped
        try:
            first = msgs[0]
            again = client.post(first.subject.rsplit(".", 1)[-1], first.headers["Nats-Msg-Id"], first.data.decode())
        finally:
            client.close()
        assert again.outcome == "ok" and json.loads(again.text)["duplicate"] is True
        assert len(_messages(stream)) == len(msgs)
    finally:
        asyncio.run(delete_stream(NATS_URL_DEFAULT, stream))
