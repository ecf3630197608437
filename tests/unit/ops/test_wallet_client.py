"""What a wallet's answer means (docs/wallet.md, "Answers"), the signature, the configuration."""
from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path

import pytest

from ops.wallet.client import NO_ANSWER, OK, REFUSED, ROLLED_BACK, classify, sign
from ops.wallet.config import ConfigError, load


def answer(**body: object) -> str:
    return json.dumps(body)


@pytest.mark.parametrize(("kind", "status", "text", "outcome"), [
    ("credit", 200, answer(status="ok", transaction_id="t1"), OK),
    ("credit", 200, answer(status="ok", transaction_id="t0"), NO_ANSWER),  # a stale reply for another call
    ("credit", 200, "<html>", NO_ANSWER),
    ("credit", 200, "[1]", NO_ANSWER),
    ("debit", 409, answer(error="transaction_rolled_back", transaction_id="t1"), ROLLED_BACK),
    ("credit", 409, answer(error="transaction_rolled_back"), NO_ANSWER),  # only a debit can be rolled back
    ("debit", 422, answer(error="insufficient_funds"), REFUSED),
    ("credit", 403, answer(error="player_blocked", transaction_id="t1"), REFUSED),
    ("credit", 401, answer(error="invalid_signature"), NO_ANSWER),  # a configuration to fix: retried
    ("credit", 429, answer(error="limit_exceeded"), NO_ANSWER),
    ("credit", 422, answer(error="something_new"), NO_ANSWER),  # unknown codes are never taken as final
    ("credit", 500, answer(error="internal"), NO_ANSWER),
    ("credit", 503, "", NO_ANSWER),
])
def test_answers(kind: str, status: int, text: str, outcome: str) -> None:
    assert classify(kind, "t1", status, text).outcome == outcome


def test_the_signature_is_hmac_sha256_of_the_body() -> None:
    body = b'{"transaction_id":"t1"}'
    assert sign(body, b"k") == "sha256=" + hmac.new(b"k", body, hashlib.sha256).hexdigest()
    assert sign(body, b"k") != sign(body + b" ", b"k")


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "wallet.toml"
    path.write_text(text)
    return str(path)


def test_configuration_per_operator_with_the_secret_from_the_environment(tmp_path: Path) -> None:
    path = write(tmp_path, '[operators.default]\nurl = "https://w.example/api"\nsecret_env = "S1"\n'
                           '[operators.op2]\nurl = "http://127.0.0.1:9/w"\nsecret_env = "S2"\n'
                           'debit_notices = false\nconcurrency = 2\ntimeout_s = 1\n')
    wallets = load(path, {"S1": "one", "S2": "two"})
    assert set(wallets) == {"default", "op2"}
    assert wallets["default"].debit_notices and wallets["default"].concurrency == 8
    assert wallets["op2"].secret == b"two" and not wallets["op2"].debit_notices and wallets["op2"].timeout_s == 1.0
    assert "two" not in repr(wallets) and "one" not in repr(wallets)


def test_a_jetstream_operator_needs_no_url(tmp_path: Path) -> None:
    """JetStream: the stream and subject default from the operator id; a secret still signs."""
    path = write(tmp_path, '[operators."op.1"]\ntransport = "jetstream"\nsecret_env = "S"\n')
    wallet = load(path, {"S": "s"})["op.1"]
    assert (wallet.transport, wallet.nats_url, wallet.stream, wallet.subject) == (
        "jetstream", "nats://127.0.0.1:4222", "WALLET_OP_1", "ledger.wallet.op_1")
    assert wallet.duplicate_window_s == 120.0
    assert load(path, {}, secrets=False)["op.1"].secret == b""
    longer = write(tmp_path, '[operators.a]\ntransport = "jetstream"\nsecret_env = "S"\nduplicate_window_s = 3600\n')
    assert load(longer, {"S": "s"})["a"].duplicate_window_s == 3600.0


@pytest.mark.parametrize(("text", "says"), [
    ("", "no [operators.<id>]"),
    ("[operators.a]\nsecret_env = 'S'\n", "no url"),
    ("[operators.a]\nurl = 'ftp://x'\nsecret_env = 'S'\n", "http://"),
    ("[operators.a]\nurl = 'http://x'\nsecret_env = 'S'\nconcurrency = 0\n", "concurrency"),
    ("[operators.a]\nurl = 'http://x'\nsecret_env = 'S'\ncolour = 1\n", "unknown keys"),
    ("[operators.a]\nurl = 'http://x'\nsecret_env = 'NOT_SET'\n", "NOT_SET"),
    ("[operators.a\n", "not a readable TOML"),
    ("[operators.a]\ntransport = 'kafka'\nsecret_env = 'S'\n", "transport must be one of http, jetstream"),
    ("[operators.a]\ntransport = 'jetstream'\nnats_url = 'http://x'\nsecret_env = 'S'\n", "nats://"),
    ("[operators.a]\ntransport = 'jetstream'\nsubject = 'a.>'\nsecret_env = 'S'\n", "subject"),
    ("[operators.a]\ntransport = 'jetstream'\nsecret_env = 'S'\nduplicate_window_s = 0.5\n", "duplicate_window_s"),
])
def test_configuration_mistakes(tmp_path: Path, text: str, says: str) -> None:
    with pytest.raises(ConfigError, match=says.replace("[", r"\[").replace(".", r"\.")):
        load(write(tmp_path, text), {"S": "secret"})
