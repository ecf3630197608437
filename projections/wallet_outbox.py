"""The deliverer's tables in the store (docs/wallet.md, "What is kept in the store"): its
position in the event log, every wallet transaction with its status, every call's outcome,
and the people's decisions on dead letters. Beside the views, on SQLite and PostgreSQL; no
state outside the store: a deliverer restarted anywhere resends exactly what has no final
answer, with the same ids.
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from domain.errors import require
from domain.operators import EVERY_OPERATOR, OperatorScope
from ledger.eventlog import EventLog
from ledger.library.arrays import EncodedArray, Int8Array, TextArray, encode_array
from projections.sql import Db, Table, columns_of
from projections.wallet_tx import FINAL, OPEN, WalletTx

TRACKING = Table("wallet_tracking", key=("name",),
                 columns=(("name", "text"), ("position", "int"), ("updated_at", "text")))
TXS = Table("wallet_tx", key=("tx_id",), columns=columns_of(WalletTx),
            indexes=(("status", "seq"), ("operator_id", "player_id", "seq")))
ATTEMPTS = Table("wallet_attempts", key=("tx_id", "attempt"),
                 columns=(("tx_id", "text"), ("attempt", "int"), ("operator_id", "text"), ("at", "text"),
                          ("outcome", "text"), ("http_status", "int"), ("answer", "text")))
DECISIONS = Table("wallet_decisions", key=("decision_id",),
                  columns=(("decision_id", "int"), ("tx_id", "text"), ("action", "text"), ("decided_by", "text"),
                           ("decided_at", "text"), ("why", "text")))
TABLES = (TRACKING, TXS, ATTEMPTS, DECISIONS)
DELIVERER = "deliverer"
DECISION_ACTIONS = ("retry", "resolve")
ANSWER_MAX = 2000  # the wallet's answer as kept (a body larger than this is cut)


class Concurrent(Exception):
    """Another deliverer moved the position first: this page was rolled back."""


@dataclass(frozen=True, slots=True)
class Attempt:
    """One call's outcome, and what it makes of its transaction (`tx`: the row after it;
    `more`: transactions it adds, a debit's rollback and next generation)."""

    tx: WalletTx
    outcome: str
    http_status: int
    answer: str
    more: tuple[WalletTx, ...] = ()


_FIELDS = TXS.column_names


def _values(tx: WalletTx) -> tuple[Any, ...]:
    """The row's values in column order (`dataclasses.astuple` copies deeply: 10x slower)."""
    return tuple(getattr(tx, name) for name in _FIELDS)


_KINDS: dict[str, type[EncodedArray]] = {"int": Int8Array, "text": TextArray}
_PG_TYPES = {"int": "bigint[]", "text": "text[]"}
_UPDATE = (("status", "text"), ("attempts", "int"), ("next_at_ms", "int"), ("last_answer", "text"),
           ("done_ms", "int"), ("tx_id", "text"))
_UPDATE_KINDS = tuple(_KINDS[kind] for _, kind in _UPDATE)
_PG_UPDATE = ("UPDATE wallet_tx AS t SET " + ", ".join(f"{c}=v.{c}" for c, _ in _UPDATE[:-1]) + " FROM unnest("
              + ", ".join(f"%b::{_PG_TYPES[kind]}" for _, kind in _UPDATE) + ") AS v("
              + ", ".join(c for c, _ in _UPDATE) + ") WHERE t.tx_id = v.tx_id")


def _pg_insert(table: Table, where: str = "") -> str:
    """PostgreSQL: rows passed as one array per column (`where`: a condition on inserting them), a
    row whose key is stored left as it is."""
    arrays = ", ".join(f"%b::{_PG_TYPES[kind]}" for _, kind in table.columns)
    return (f"INSERT INTO {table.name} ({', '.join(table.column_names)}) SELECT * FROM unnest({arrays}){where} "
            f"ON CONFLICT ({', '.join(table.key)}) DO NOTHING")


_ATTEMPT_KINDS = tuple(_KINDS[kind] for _, kind in ATTEMPTS.columns)
_TX_KINDS = tuple(_KINDS[kind] for _, kind in TXS.columns)
_PG_INSERT_ATTEMPTS = _pg_insert(ATTEMPTS)
_PG_INSERT_TXS = _pg_insert(TXS)
# `record` of a group of answers on PostgreSQL as one statement: the transactions' new statuses
# (a data-modifying WITH) and the calls' outcomes, atomic as any single statement
_PG_RECORD = f"WITH changed AS ({_PG_UPDATE}) {_PG_INSERT_ATTEMPTS}"
# `store_page` on PostgreSQL as one statement: the guarded move of the position, and the page's
# transactions inserted only when it moved (none, and a count of 0, when another deliverer did)
_PG_STORE_PAGE = ("WITH moved AS (UPDATE wallet_tracking SET position=%s, updated_at=%s WHERE name=%s AND position=%s "
                  "RETURNING 1), added AS (" + _pg_insert(TXS, " WHERE EXISTS (SELECT 1 FROM moved)")
                  + ") SELECT count(*) FROM moved")


def _arrays(kinds: Sequence[type[EncodedArray]], rows: Sequence[Sequence[Any]]) -> list[EncodedArray]:
    """One array per column of `rows` (empty ones for no rows), of the columns' `kinds`."""
    columns = list(zip(*rows)) or [()] * len(kinds)
    return [encode_array(kind, column) for kind, column in zip(kinds, columns)]


def now_text() -> str:
    return datetime.now(UTC).isoformat()


class Outbox:
    """The deliverer's tables on one connection (`Db`)."""

    def __init__(self, db: Db) -> None:
        self.db = db
        if db.dialect == "postgres":
            # The deliverer's commits do not wait for the WAL flush, as the views' (`Db.transaction`):
            # set for the session, so an answer's record is one statement (`record`). A person's
            # decision sets it back for its own transaction (`decide`).
            db.execute("SET synchronous_commit = off")
        with db.exclusive("wallet-setup"):
            for table in TABLES:
                db.create(table)
            if not db.query("SELECT 1 FROM wallet_tracking WHERE name=?", (DELIVERER,)):
                db.execute("INSERT INTO wallet_tracking (name, position, updated_at) VALUES (?, 0, ?) "
                           "ON CONFLICT (name) DO NOTHING", (DELIVERER, now_text()))
        cols = TXS.column_names
        self._insert = (f"INSERT INTO wallet_tx ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))}) "
                        "ON CONFLICT (tx_id) DO NOTHING")
        self._pg = db.dialect == "postgres"
        self._select = f"SELECT {', '.join(cols)} FROM wallet_tx"

    def position(self) -> int:
        return int(self.db.query("SELECT position FROM wallet_tracking WHERE name=?", (DELIVERER,))[0][0])

    def store_page(self, txs: Sequence[WalletTx], first: int, last: int) -> None:
        """The page's transactions and the new position, in one transaction; a repeat of a
        transaction already stored changes nothing (its status stays the one it has)."""
        if self._pg:
            # ONE statement (its own transaction): the position moved from where this page
            # started, and the transactions inserted only if it was
            arrays = _arrays(_TX_KINDS, [_values(tx) for tx in txs])
            moved = self.db.conn.execute(_PG_STORE_PAGE, [last, now_text(), DELIVERER, first - 1, *arrays])
            row = moved.fetchone()
            if row is None or row[0] != 1:
                raise Concurrent(f"the deliverer's position is no longer {first - 1}")
            return
        with self.db.transaction():
            self._insert_txs(txs)
            moved = self.db.execute_cursor("UPDATE wallet_tracking SET position=?, updated_at=? WHERE name=? "
                                           "AND position=?", (last, now_text(), DELIVERER, first - 1))
            if moved.rowcount != 1:
                raise Concurrent(f"the deliverer's position is no longer {first - 1}")

    def open_txs(self, limit: int | None = 10_000) -> list[WalletTx]:
        """Transactions without a final answer, in ledger order (`limit` None: all)."""
        marks = ", ".join("?" * len(OPEN))
        cut, params = ("", OPEN) if limit is None else (" LIMIT ?", (*OPEN, limit))
        rows = self.db.query(f"{self._select} WHERE status IN ({marks}) ORDER BY seq, tx_id{cut}", params)
        return [WalletTx(*row) for row in rows]

    def get(self, tx_id: str) -> WalletTx | None:
        rows = self.db.query(f"{self._select} WHERE tx_id=?", (tx_id,))
        return WalletTx(*rows[0]) if rows else None

    def record(self, attempts: Sequence[Attempt]) -> None:
        """Each call's outcome and its transaction's new status (and any transactions it adds),
        in one transaction."""
        if not attempts:
            return
        at = now_text()
        changes = [(a.tx.status, a.tx.attempts, a.tx.next_at_ms, a.tx.last_answer, a.tx.done_ms, a.tx.tx_id)
                   for a in attempts]
        outcomes = [(a.tx.tx_id, a.tx.attempts, a.tx.operator_id, at, a.outcome, a.http_status, a.answer[:ANSWER_MAX])
                    for a in attempts]
        # one statement per table for all of them (a batch's answers come together); PostgreSQL:
        # each column as one array (a row at a time was a round trip's work per row in the pipeline)
        unique = len({c[-1] for c in changes}) == len(changes)
        if self._pg and unique and not any(a.more for a in attempts):
            # the usual group: ONE statement, its own transaction (a player's next call waits for
            # this commit; BEGIN, the writes and COMMIT each waited for a round trip of their own)
            self.db.conn.execute(_PG_RECORD, [*_arrays(_UPDATE_KINDS, changes), *_arrays(_ATTEMPT_KINDS, outcomes)])
            return
        # a debit left without an answer: its rollback goes out once this commits, so the commit
        # waits for the disk (lost in a power cut or a server crash, the debit would be sent
        # again, answered "rolled back", and its next generation never made)
        with self.db.pipeline(), self.db.transaction(durable=any(a.more for a in attempts)):
            if self._pg and unique:
                self.db.conn.execute(_PG_UPDATE, _arrays(_UPDATE_KINDS, changes))
                self.db.conn.execute(_PG_INSERT_ATTEMPTS, _arrays(_ATTEMPT_KINDS, outcomes))
            else:
                self.db.executemany("UPDATE wallet_tx SET status=?, attempts=?, next_at_ms=?, last_answer=?, "
                                    "done_ms=? WHERE tx_id=?", changes)
                self.db.executemany("INSERT INTO wallet_attempts (tx_id, attempt, operator_id, at, outcome, "
                                    "http_status, answer) VALUES (?, ?, ?, ?, ?, ?, ?) "
                                    "ON CONFLICT (tx_id, attempt) DO NOTHING", outcomes)
            self._insert_txs([tx for a in attempts for tx in a.more])

    def _insert_txs(self, txs: Sequence[WalletTx]) -> None:
        """New transactions (one already stored is left as it is)."""
        if not txs:
            return
        if self._pg:
            self.db.conn.execute(_PG_INSERT_TXS, _arrays(_TX_KINDS, [_values(tx) for tx in txs]))
        else:
            self.db.executemany(self._insert, [_values(tx) for tx in txs])

    # ------------------------------------------------------------ decisions
    def decide(self, tx_id: str, action: str, by: str, why: str) -> WalletTx:
        """A person's decision on a dead letter: `retry` (sent again with its id) or `resolve`
        (settled outside the deliverer). Kept as a row (who, when, why) with the status change,
        in one durable transaction."""
        require(action in DECISION_ACTIONS, f"unknown decision {action!r}")
        tx = self.get(tx_id)
        if tx is None:
            raise LookupError(f"no wallet transaction {tx_id}")
        if tx.status != "dead":
            raise ValueError(f"transaction {tx_id} is {tx.status}, not a dead letter")
        new = replace(tx, status="pending", next_at_ms=0) if action == "retry" else replace(tx, status="resolved")
        with self.db.transaction(durable=True):
            number = self.db.query("SELECT COALESCE(MAX(decision_id), 0) + 1 FROM wallet_decisions")[0][0]
            self.db.execute("INSERT INTO wallet_decisions (decision_id, tx_id, action, decided_by, decided_at, why) "
                            "VALUES (?, ?, ?, ?, ?, ?)", (number, tx_id, action, by, now_text(), why))
            self.db.execute("UPDATE wallet_tx SET status=?, next_at_ms=? WHERE tx_id=? AND status='dead'",
                            (new.status, new.next_at_ms, tx_id))
        return new

    def decisions(self, tx_id: str | None = None, scope: OperatorScope = EVERY_OPERATOR) -> list[dict[str, Any]]:
        """The recorded decisions (of one transaction; of the scope's operators' transactions)."""
        clauses, params = (["tx_id=?"], [tx_id]) if tx_id else ([], [])
        of, operators = _operator_in(scope)
        if of:
            clauses.append(f"tx_id IN (SELECT tx_id FROM wallet_tx WHERE {of})")
            params += operators
        where = f"WHERE {' AND '.join(clauses)} " if clauses else ""
        rows = self.db.query("SELECT decision_id, tx_id, action, decided_by, decided_at, why FROM wallet_decisions "
                             f"{where}ORDER BY decision_id", tuple(params))
        return [dict(zip(DECISIONS.column_names, row)) for row in rows]

    # --------------------------------------------------------------- status
    def counts(self) -> dict[str, dict[str, int]]:
        """Transactions per operator and status."""
        out: dict[str, dict[str, int]] = {}
        for operator, status, n in self.db.query(
                "SELECT operator_id, status, COUNT(*) FROM wallet_tx GROUP BY operator_id, status"):
            out.setdefault(operator, {})[status] = int(n)
        return out

    def oldest_open_ms(self) -> dict[str, int]:
        """Per operator, when its oldest transaction without a final answer was derived (epoch ms)."""
        marks = ", ".join("?" * len(OPEN))
        return {op: int(ms) for op, ms in self.db.query(
            f"SELECT operator_id, MIN(derived_ms) FROM wallet_tx WHERE status IN ({marks}) GROUP BY operator_id", OPEN)}

    def by_status(self, statuses: Sequence[str], limit: int = 100,
                  scope: OperatorScope = EVERY_OPERATOR) -> list[WalletTx]:
        """The first `limit` transactions in these statuses (of the scope's operators)."""
        require(set(statuses) <= set(OPEN) | set(FINAL), f"unknown status in {statuses}")
        marks = ", ".join("?" * len(statuses))
        of, operators = _operator_in(scope)
        rows = self.db.query(f"{self._select} WHERE status IN ({marks}){' AND ' + of if of else ''} ORDER BY seq LIMIT ?",
                             (*statuses, *operators, limit))
        return [WalletTx(*row) for row in rows]

    def of_operator(self, operator: str) -> list[WalletTx]:
        """Every transaction of `operator`, in ledger order (`ledger wallet reconcile`)."""
        rows = self.db.query(f"{self._select} WHERE operator_id=? ORDER BY seq, tx_id", (operator,))
        return [WalletTx(*row) for row in rows]

    def failures(self) -> dict[str, int]:
        """Calls without a good answer, per operator (every outcome but `ok`)."""
        return {op: int(n) for op, n in self.db.query(
            "SELECT operator_id, COUNT(*) FROM wallet_attempts WHERE outcome <> 'ok' GROUP BY operator_id")}


def delivery_status(outbox: Outbox, head: int, scope: OperatorScope = EVERY_OPERATOR) -> dict[str, Any]:
    """What `ledger wallet status` and /metrics show: per operator, transactions by status,
    the oldest open one's age, failures; the dead letters with the wallet's answers. For a scope
    of some operators (the console's), theirs only."""
    now_ms = int(time.time() * 1000)
    oldest = outbox.oldest_open_ms()
    failures = outbox.failures()
    position = outbox.position()
    operators = {}
    for op, counts in sorted(outbox.counts().items()):
        if not scope.allows(op):
            continue
        operators[op] = {"statuses": counts, "failures": failures.get(op, 0),
                         "oldest_open_age_s": round((now_ms - oldest[op]) / 1000, 3) if op in oldest else 0.0}
    dead = [{"tx_id": t.tx_id, "operator_id": t.operator_id, "player_id": t.player_id, "kind": t.kind,
             "reason": t.reason, "amount_minor": t.amount_minor, "currency": t.currency, "round_id": t.round_id,
             "attempts": t.attempts, "answer": t.last_answer} for t in outbox.by_status(("dead",), scope=scope)]
    retrying = [{"tx_id": t.tx_id, "operator_id": t.operator_id, "player_id": t.player_id, "kind": t.kind,
                 "attempts": t.attempts, "answer": t.last_answer} for t in outbox.by_status(("retrying",), scope=scope)]
    return {"position": position, "head": head, "events_behind": max(0, head - position), "operators": operators,
            "dead": dead, "retrying": retrying, "decisions": outbox.decisions(scope=scope)}


def _operator_in(scope: OperatorScope) -> tuple[str, list[str]]:
    """The SQL condition on `operator_id` that keeps the scope's operators, and its parameters
    ("" for every operator; an empty scope keeps none)."""
    if scope.operators is None:
        return "", []
    operators = sorted(scope.operators)
    return f"operator_id IN ({', '.join('?' * len(operators)) or 'NULL'})", operators


def read_status(log: EventLog, scope: OperatorScope = EVERY_OPERATOR) -> dict[str, Any] | None:
    """`delivery_status` of the store `log` reads (None: no deliverer has run on it), of the
    scope's operators."""
    db = Db.for_store(log.backend)
    try:
        if not db.table_exists(TXS.name):
            return None
        return delivery_status(Outbox(db), log.head(), scope)
    finally:
        db.close()
