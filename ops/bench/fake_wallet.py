"""A fake operator wallet for the tests: a real HTTP server on loopback (stdlib
`ThreadingHTTPServer` in a thread) speaking docs/wallet.md.

It keeps balances, verifies each request's HMAC-SHA256 signature (its own code, not the
deliverer's: a wrong signer fails the tests), is idempotent by transaction id (a repeat gets
the original answer), honours a rollback that arrives before its debit (answers "unknown
transaction", refuses that debit later) and misbehaves on demand (`Chaos`):

- `drop`: applies, then closes the connection without a reply (commit-and-drop-reply);
- `timeout`: applies, answers after `delay_s` (past the deliverer's timeout);
- `late`: waits `delay_s`, then applies and answers: a later request (the retry, the
  rollback) overtakes it (reordering; a debit rolled back meanwhile is refused);
- `lost`: neither applies nor answers (the connection closed);
- `5xx`: answers 503 without applying; `5xx_after`: applies, answers 500;
- `duplicate`: applies and writes its reply twice on the kept-alive connection (the next
  request on it reads a stale answer first).

Batches (`POST <url>/batch`, docs/wallet.md "Batches"): the items applied in order, each as if
posted alone (the same idempotency, refusals, rollback before its debit, the same answers with
their `http_status`), answered 200 `{"results": [...]}`; an item after one of the same player
in the batch that was not applied is not applied either (409 `previous_not_applied`). Each misbehaviour above is rolled per
batch request and applies to it as a whole (`drop` applies every item and closes without a
reply; `duplicate` writes the whole reply twice; ...); `5xx` and `5xx_after` are also rolled per
item (that item answered 503 not applied, or 500 applied, in its place in the results).
`batches` keeps each batch's (player, transaction id) items, so a test sees what went together.

`refuse_players` answers every request of those players with a permanent refusal (422).
`operator_id`: the wallet is that operator's: a request naming another operator is refused
(422 `unknown_operator`) and kept in `foreign`, so a test sees a player sent to the wrong wallet.
`log` records each request's effect in order, so the tests check what was applied, when.
`on_request` is called as each request arrives (the kill trials count the deliverer's calls
with it, ops/bench/wallet_trials.py).
"""
from __future__ import annotations

import csv
import hashlib
import hmac
import json
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

START_BALANCE = 10**12
SHUTDOWN_POLL_S = 0.02
KINDS = ("debit", "credit", "rollback", "round")
MISBEHAVIOURS = ("drop", "timeout", "late", "lost", "5xx", "5xx_after", "duplicate")


@dataclass
class Chaos:
    """Which misbehaviours, each with its chance per request (seeded)."""

    odds: dict[str, float] = field(default_factory=dict)
    delay_s: float = 0.6
    seed: int = 0

    def __post_init__(self) -> None:
        assert set(self.odds) <= set(MISBEHAVIOURS), self.odds
        self._random = random.Random(self.seed)
        self._lock = threading.Lock()

    def pick(self) -> str | None:
        with self._lock:
            roll = self._random.random()
        for name, chance in self.odds.items():
            if roll < chance:
                return name
            roll -= chance
        return None


@dataclass
class Applied:
    tx_id: str
    kind: str
    player: str
    amount: int  # the signed change to the player's balance
    answer: dict[str, Any]


class WalletState:
    """What the wallet has done: balances, applied transactions, rollbacks, rounds."""

    def __init__(self, start_balance: int = START_BALANCE) -> None:
        self.lock = threading.Lock()
        self.start = start_balance
        self.balances: dict[str, int] = {}
        self.applied: dict[str, Applied] = {}
        self.rolled_back: set[str] = set()  # debit ids rolled back (applied or not: a tombstone)
        self.by_reference: dict[tuple[str, str], str] = {}  # (player, reference) -> debit id
        self.rounds: dict[tuple[str, str], str] = {}  # (round id, player) -> completed | cancelled
        self.applies: Counter[str] = Counter()  # transaction id -> times its money moved
        self.log: list[tuple[str, str, str]] = []  # (transaction id, kind, effect) in order
        self.requests = 0

    def balance(self, player: str) -> int:
        return self.balances.get(player, self.start)

    def net(self, player: str) -> int:
        return self.balance(player) - self.start

    def take_stake(self, player: str, reference: str, amount: int) -> None:
        """The operator's own debit (an operator without debit notices took the stake itself)."""
        with self.lock:
            tx = f"own:{player}:{reference}"
            self._move(Applied(tx, "debit", player, -amount, {"status": "ok"}))
            self.by_reference[(player, reference)] = tx

    def statement(self) -> list[dict[str, Any]]:
        """The wallet's statement (docs/wallet.md, "Reconciling"): every transaction of the
        ledger's it applied, once, in the order applied (the operator's own debits are not the
        ledger's)."""
        with self.lock:
            return [{"transaction_id": a.tx_id, "kind": a.kind, "player_id": a.player, "amount_minor": abs(a.amount)}
                    for a in self.applied.values() if not a.tx_id.startswith("own:")]

    def write_statement(self, path: Path, lines: list[dict[str, Any]] | None = None) -> Path:
        """The statement as CSV (a path ending .csv) or JSON."""
        lines = self.statement() if lines is None else lines
        if path.suffix == ".csv":
            with open(path, "w", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=["transaction_id", "kind", "player_id", "amount_minor"])
                writer.writeheader()
                writer.writerows(lines)
        else:
            path.write_text(json.dumps({"transactions": lines}))
        return path

    def _move(self, applied: Applied) -> None:
        self.balances[applied.player] = self.balance(applied.player) + applied.amount
        self.applied[applied.tx_id] = applied
        self.applies[applied.tx_id] += 1
        self.log.append((applied.tx_id, applied.kind, "applied"))

    def handle(self, kind: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """The wallet's answer to one verified request (status, body); applies it at most once."""
        tx, player = str(body["transaction_id"]), str(body["player_id"])
        with self.lock:
            if tx in self.applied:
                self.log.append((tx, kind, "duplicate"))
                return 200, {**self.applied[tx].answer, "duplicate": True}
            if kind == "debit" and tx in self.rolled_back:
                self.log.append((tx, kind, "refused_rolled_back"))
                return 409, {"error": "transaction_rolled_back", "transaction_id": tx}
            amount = int(body["amount_minor"])
            if kind == "debit":
                if self.balance(player) < amount:
                    return 422, {"error": "insufficient_funds", "transaction_id": tx}
                self._apply(tx, kind, player, -amount)
                self.by_reference[(player, str(body["reference"]))] = tx
            elif kind == "credit":
                self._apply(tx, kind, player, amount)
            elif kind == "rollback":
                return 200, self._rollback(tx, player, body)
            elif kind == "round":
                self.rounds[(str(body["round_id"]), player)] = str(body["reason"])
                self._apply(tx, kind, player, 0)
            return 200, self.applied[tx].answer

    def _apply(self, tx: str, kind: str, player: str, amount: int) -> None:
        answer = {"status": "ok", "transaction_id": tx, "balance_minor": self.balance(player) + amount}
        self._move(Applied(tx, kind, player, amount, answer))

    def _rollback(self, tx: str, player: str, body: dict[str, Any]) -> dict[str, Any]:
        target = str(body["reference_transaction_id"])
        if target not in self.applied:  # maybe the operator's own debit, found by reference
            target = self.by_reference.get((player, str(body["reference"])), target)
        debit = self.applied.get(target)
        unknown = debit is None
        amount = 0 if debit is None or target in self.rolled_back else -debit.amount
        for rolled in {target, str(body["reference_transaction_id"])}:
            self.rolled_back.add(rolled)
            self.log.append((rolled, "debit", "rolled_back"))
        self._apply(tx, "rollback", player, amount)
        answer = self.applied[tx].answer
        if unknown:
            answer["unknown_transaction"] = True
        return answer


class FakeWallet:
    """The server: `url`, `state`, `chaos`; `start()` / `stop()` (or a `with` block)."""

    def __init__(self, secret: str, chaos: Chaos | None = None, refuse_players: dict[str, str] | None = None,
                 start_balance: int = START_BALANCE, latency_s: float = 0.0, operator_id: str | None = None,
                 on_request: Callable[[], None] = lambda: None) -> None:
        self.secret = secret.encode()
        self.on_request = on_request
        self.operator_id = operator_id
        self.foreign: list[dict[str, Any]] = []  # requests naming another operator (operator_id set)
        self.chaos = chaos or Chaos()
        self.refuse_players = refuse_players or {}
        self.latency_s = latency_s
        self.state = WalletState(start_balance)
        self.bad_signatures = 0
        self.batches: list[list[tuple[str, str]]] = []  # each batch request's (player id, transaction id) items
        self.server = _QuietServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        # stop() waits for the serving loop's next look: 0.5 s by default, on every test's exit
        self.thread = threading.Thread(target=self.server.serve_forever, args=(SHUTDOWN_POLL_S,), daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/wallet"

    def start(self) -> FakeWallet:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> FakeWallet:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def signed(self, raw: bytes, header: str | None) -> bool:
        expected = "sha256=" + hmac.new(self.secret, raw, hashlib.sha256).hexdigest()
        return header is not None and hmac.compare_digest(expected, header)


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client gone before its reply (the deliverer timed out): what the tests provoke


def _handler(wallet: FakeWallet) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # kept-alive connections, as a real wallet
        # The headers and the body go out as two writes: with Nagle's algorithm on, the body
        # waited for the deliverer's delayed ACK of the headers (40 ms on Linux) in every answer.
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with wallet.state.lock:
                wallet.state.requests += 1
            wallet.on_request()
            kind = self.path.rsplit("/", 1)[-1]
            if not wallet.signed(raw, self.headers.get("X-Ledger-Signature")):
                wallet.bad_signatures += 1
                self._reply(401, {"error": "invalid_signature"})
                return
            body = json.loads(raw)
            if kind == "batch":
                self._batch(body)
                return
            if kind not in KINDS:
                self._reply(404, {"error": "malformed_request"})
                return
            refused = self._refused(kind, body)
            if refused is not None:
                self._reply(*refused)
                return
            if wallet.latency_s:
                time.sleep(wallet.latency_s)
            self._misbehave(wallet.chaos.pick(), lambda: wallet.state.handle(kind, body))

        def _refused(self, kind: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
            """A request refused before it is applied: another operator's player, a refused player."""
            if wallet.operator_id is not None and body.get("operator_id") != wallet.operator_id:
                with wallet.state.lock:
                    wallet.foreign.append(body)
                return 422, {"error": "unknown_operator", "transaction_id": body["transaction_id"]}
            if str(body["player_id"]) in wallet.refuse_players:
                return 422, {"error": wallet.refuse_players[str(body["player_id"])],
                             "transaction_id": body["transaction_id"]}
            return None

        def _batch(self, body: dict[str, Any]) -> None:
            items = body.get("transactions")
            if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
                self._reply(400, {"error": "malformed_request"})
                return
            with wallet.state.lock:
                wallet.batches.append([(str(i.get("player_id")), str(i.get("transaction_id"))) for i in items])
            if wallet.latency_s:
                time.sleep(wallet.latency_s)  # once per request, as a wallet's round trip
            self._misbehave(wallet.chaos.pick(), lambda: (200, {"results": self._items(items)}))

        def _items(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
            """Each item applied as if posted alone, in order, but none after one of its player's
            that was not applied."""
            stopped: set[str] = set()  # players with an item not applied in this batch
            results = []
            for item in items:
                player = str(item.get("player_id"))
                if player in stopped:
                    result = {"http_status": 409, "error": "previous_not_applied",
                              "transaction_id": item.get("transaction_id")}
                else:
                    result = self._item(item)
                if result["http_status"] != 200 and result.get("error") != "internal":  # 5xx_after: applied
                    stopped.add(player)
                results.append(result)
            return results

        def _item(self, item: dict[str, Any]) -> dict[str, Any]:
            """One item of a batch, applied as if posted alone: its answer with its status."""
            kind, tx = str(item.get("kind")), item.get("transaction_id")
            if kind not in KINDS:
                return {"http_status": 400, "error": "malformed_request", "transaction_id": tx}
            how = wallet.chaos.pick()
            if how == "5xx":
                return {"http_status": 503, "error": "unavailable", "transaction_id": tx}
            status, answer = self._refused(kind, item) or wallet.state.handle(kind, item)
            if how == "5xx_after":
                return {"http_status": 500, "error": "internal", "transaction_id": tx}
            return {"http_status": status, **answer}

        def _misbehave(self, how: str | None, handle: Callable[[], tuple[int, dict[str, Any]]]) -> None:
            if how in ("lost", "5xx"):
                if how == "5xx":
                    self._reply(503, {"error": "unavailable"})
                else:
                    self.close_connection = True
                return
            if how == "late":
                time.sleep(wallet.chaos.delay_s)
            status, answer = handle()
            if how == "drop":
                self.close_connection = True
                return
            if how == "timeout":
                time.sleep(wallet.chaos.delay_s)
            if how == "5xx_after":
                status, answer = 500, {"error": "internal"}
            self._reply(status, answer, twice=how == "duplicate")

        def _reply(self, status: int, answer: dict[str, Any], twice: bool = False) -> None:
            data = json.dumps(answer).encode()
            for _ in range(2 if twice else 1):
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            try:
                self.wfile.flush()
            except OSError:
                self.close_connection = True

    return Handler
