"""One signed call to an operator's wallet and what its answer means (docs/wallet.md,
"Answers"; a batch of transactions in one call: "Batches"). Standard library only (`http.client`): a kept-alive connection per worker thread
and operator, closed after anything but a clean answer."""
from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ops.wallet.config import OperatorWallet

OK, ROLLED_BACK, REFUSED, NO_ANSWER = "ok", "rolled_back", "refused", "no_answer"
# 4xx answers that are about the transaction itself: permanent, a person decides (a dead letter).
PERMANENT = frozenset({"insufficient_funds", "player_blocked", "unknown_player", "currency_mismatch",
                       "limit_exceeded", "malformed_request"})
SIGNATURE_HEADER = "X-Ledger-Signature"


def sign(body: bytes, secret: bytes) -> str:
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


@dataclass(frozen=True, slots=True)
class Answer:
    outcome: str  # OK | ROLLED_BACK | REFUSED | NO_ANSWER
    http_status: int  # 0: no HTTP answer at all
    text: str  # the wallet's answer as it came (or why there was none)


def classify(kind: str, tx_id: str, status: int, text: str) -> Answer:
    """What an HTTP answer to the call of `tx_id` means."""
    try:
        body = json.loads(text)
    except ValueError:
        body = None
    return classify_body(kind, tx_id, status, body, text)


def classify_body(kind: str, tx_id: str, status: int, body: Any, text: str) -> Answer:
    """`classify` of an answer already read as JSON (`body`; `text`: as kept)."""
    if not isinstance(body, dict):
        return Answer(NO_ANSWER, status, text)
    named = body.get("transaction_id")
    if status == 200 and body.get("status") == "ok":
        # an answer for another call (a stale or duplicated reply) is no answer to this one
        return Answer(OK if named == tx_id else NO_ANSWER, status, text)
    if status == 409 and body.get("error") == "transaction_rolled_back" and kind == "debit":
        return Answer(ROLLED_BACK if named in (None, tx_id) else NO_ANSWER, status, text)
    if 400 <= status < 500 and status not in (401, 408, 429) and body.get("error") in PERMANENT:
        return Answer(REFUSED if named in (None, tx_id) else NO_ANSWER, status, text)
    return Answer(NO_ANSWER, status, text)


Item = tuple[str, str, str]  # a transaction as sent: (kind, transaction id, its body's JSON)


def batch_body(items: Sequence[Item]) -> str:
    """The body of `POST <url>/batch`: `{"transactions": [{"kind": K, <the body's fields>}, ...]}`,
    each item the exact JSON of its single call (an object with fields) with its kind put first
    (no parse, no re-dump)."""
    return '{"transactions":[' + ",".join(f'{{"kind":"{kind}",{body[1:]}' for kind, _tx, body in items) + "]}"


def classify_batch(items: Sequence[Item], status: int, text: str) -> list[Answer]:
    """What the answer to a batch means for each of its items (docs/wallet.md, "Batches"): a
    200 `{"results": [...]}` with one result per item, in order, each naming its item's
    transaction id and carrying its `http_status`, classified as that item's own answer; anything
    else (another status, unreadable, a result list whose length or ids differ from those sent)
    is no answer for every item."""
    whole = [Answer(NO_ANSWER, status, text)] * len(items)
    if status != 200:
        return whole
    try:
        results = json.loads(text).get("results")
    except (ValueError, AttributeError):
        return whole
    if not isinstance(results, list) or len(results) != len(items):
        return whole
    answers = []
    for (kind, tx_id, _body), result in zip(items, results):
        if not isinstance(result, dict) or result.get("transaction_id") != tx_id:
            return whole  # not the answer to what was sent (a stale reply, another batch's)
        item_status = result.pop("http_status", None)
        if type(item_status) is not int:
            answers.append(Answer(NO_ANSWER, status, json.dumps(result)))
            continue
        answers.append(classify_body(kind, tx_id, item_status, result, json.dumps(result)))
    return answers


class WalletClient:
    """Posts signed bodies to one operator's wallet; safe to call from several threads (each
    has its own connection)."""

    def __init__(self, wallet: OperatorWallet) -> None:
        self.wallet = wallet
        parts = urlsplit(wallet.url)
        self._https = parts.scheme == "https"
        self._host = parts.hostname or ""
        self._port = parts.port
        self._path = parts.path.rstrip("/")
        self._local = threading.local()

    def _connection(self) -> http.client.HTTPConnection:
        conn: http.client.HTTPConnection | None = getattr(self._local, "conn", None)
        if conn is None:
            make = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
            conn = self._local.conn = make(self._host, self._port, timeout=self.wallet.timeout_s)
        return conn

    def _drop(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def post(self, kind: str, tx_id: str, body: str) -> Answer:
        sent = self._request(kind, body)
        if isinstance(sent, Answer):
            return sent
        status, text, will_close = sent
        answer = classify(kind, tx_id, status, text)
        if answer.outcome == NO_ANSWER or will_close:
            self._drop()  # a stale reply may follow on this connection
        return answer

    def post_batch(self, items: Sequence[Item]) -> list[Answer]:
        """The items in one signed `POST <url>/batch`; each item's answer, in order."""
        sent = self._request("batch", batch_body(items))
        if isinstance(sent, Answer):
            return [sent] * len(items)
        status, text, will_close = sent
        answers = classify_batch(items, status, text)
        if will_close or any(a.outcome == NO_ANSWER for a in answers):
            self._drop()  # a stale reply may follow on this connection
        return answers

    def _request(self, path: str, body: str) -> tuple[int, str, bool] | Answer:
        """(status, text, whether the connection closes after), or no answer."""
        data = body.encode()
        headers = {"Content-Type": "application/json", SIGNATURE_HEADER: sign(data, self.wallet.secret)}
        try:
            conn = self._connection()
            conn.request("POST", f"{self._path}/{path}", data, headers)
            resp = conn.getresponse()
            text = resp.read().decode("utf-8", "replace")
        except (OSError, http.client.HTTPException) as exc:
            self._drop()
            return Answer(NO_ANSWER, 0, f"{type(exc).__name__}: {exc}"[:300])
        return resp.status, text, bool(resp.will_close)

    def close(self) -> None:
        self._drop()
