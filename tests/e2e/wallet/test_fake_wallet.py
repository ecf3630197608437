"""The fake wallet itself: signatures, idempotency, rollback before its debit, misbehaviours."""
from __future__ import annotations

import hashlib
import hmac
import http.client
import json
from typing import Any
from urllib.parse import urlparse

import pytest

from ops.bench.fake_wallet import Chaos, FakeWallet

SECRET = "s3cret"


def post(wallet: FakeWallet, kind: str, body: dict[str, Any], secret: str = SECRET,
         timeout: float = 2.0) -> tuple[int, dict[str, Any]]:
    url = urlparse(wallet.url)
    raw = json.dumps(body).encode()
    sig = "sha256=" + hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=timeout)
    try:
        conn.request("POST", f"{url.path}/{kind}", raw, {"Content-Type": "application/json", "X-Ledger-Signature": sig})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


def tx(tx_id: str, amount: int = 100, **more: Any) -> dict[str, Any]:
    return {"transaction_id": tx_id, "player_id": "p1", "amount_minor": amount, "reference": f"bet-{tx_id}",
            "round_id": "r1", **more}


def test_debit_credit_idempotent_and_signed() -> None:
    with FakeWallet(SECRET, start_balance=1000) as wallet:
        assert post(wallet, "debit", tx("d1"))[0] == 200
        status, again = post(wallet, "debit", tx("d1"))
        assert status == 200 and again["duplicate"] is True
        assert post(wallet, "credit", tx("c1", 250))[0] == 200
        assert wallet.state.balance("p1") == 1150
        assert post(wallet, "credit", tx("c2"), secret="wrong") == (401, {"error": "invalid_signature"})
        assert wallet.state.balance("p1") == 1150 and wallet.bad_signatures == 1


def test_rollback_before_its_debit_is_honoured_and_the_debit_refused() -> None:
    with FakeWallet(SECRET, start_balance=1000) as wallet:
        status, answer = post(wallet, "rollback", tx("rb1", reference_transaction_id="d1"))
        assert status == 200 and answer["unknown_transaction"] is True
        assert post(wallet, "debit", tx("d1"))[0] == 409
        assert wallet.state.balance("p1") == 1000
        post(wallet, "debit", tx("d2"))
        post(wallet, "rollback", tx("rb2", reference_transaction_id="d2"))
        post(wallet, "rollback", tx("rb2", reference_transaction_id="d2"))
        assert wallet.state.balance("p1") == 1000


def test_permanent_refusal_and_insufficient_funds() -> None:
    with FakeWallet(SECRET, refuse_players={"p9": "player_blocked"}, start_balance=50) as wallet:
        assert post(wallet, "credit", {**tx("c1"), "player_id": "p9"})[1]["error"] == "player_blocked"
        assert post(wallet, "debit", tx("d1"))[1]["error"] == "insufficient_funds"


@pytest.mark.parametrize("how", ["drop", "lost", "timeout", "5xx", "5xx_after"])
def test_misbehaviours_leave_no_answer(how: str) -> None:
    with FakeWallet(SECRET, chaos=Chaos({how: 1.0}, delay_s=0.5)) as wallet:
        try:
            status, _ = post(wallet, "credit", tx("c1"), timeout=0.2)
        except (OSError, http.client.HTTPException):
            status = 0
        assert status in (0, 500, 503)
        applied = wallet.state.applies["c1"]
        assert applied == (0 if how in ("lost", "5xx") else 1) or how == "timeout"
