"""API keys of the live service: who may call which route, for which tables.

Keys are not events (they grant access, they are no fact of a game), so they live
in their own table beside the ledger's, created the way ledger/library/sqlite_recorder.py
and postgres_recorder.py create `ledger_commands` (CREATE TABLE IF NOT EXISTS, in the store's schema on
PostgreSQL). Only a SHA-256 of the secret is stored: a key is 32 random bytes,
so a fast hash is enough (no password stretching needed), and the plain key is
shown once, when it is made.

A key reads `lk_<key_id>_<secret>`; the key id finds the row, the secret's hash
is compared in constant time.
"""
from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from domain.errors import require
from domain.operators import OperatorScope, is_operator_id
from ledger.app import LedgerApp
from ledger.startup import tables_created_alone

KEYS_TABLE = "ledger_api_keys"
# The roles, declared here only: the key table stores them, `ledger keys add --role`
# offers them and the HTTP service's route dependencies (ops/service/auth.py) check them.
ROLES = ("studio", "backoffice", "auditor", "admin")
ROLE_WRITE = ("studio", "admin")  # may post commands
ROLE_READ = ("backoffice", "auditor", "admin")  # may read views and reports
ROLE_AUDIT = ("auditor", "admin")  # may export and verify the audit chain
# Roles a key may be limited to operators in (issue 30): an operator's back office reads only
# its players, a studio key writes only their bets, an operator's auditor (its regulator, its
# own auditors) reads the audit trail with the other operators' bets redacted. Admins see every operator.
ROLE_OPERATOR_SCOPED = ("studio", "backoffice", "auditor")
KEY_PREFIX = "lk_"
COLUMNS = ("key_id", "name", "role", "tables", "secret_hash", "created_at", "revoked_at", "operators")


@dataclass(frozen=True, slots=True)
class ApiKey:
    key_id: str
    name: str
    role: str
    tables: tuple[str, ...]  # empty: every table
    created_at: str
    revoked_at: str | None
    operators: tuple[str, ...] = ()  # empty: every operator

    def allows_table(self, table_id: str) -> bool:
        return not self.tables or table_id in self.tables

    @property
    def scope(self) -> OperatorScope:
        """The operators this key may see (domain/operators.py; no operator named: every one)."""
        return OperatorScope(frozenset(self.operators) if self.operators else None)

    def as_dict(self) -> dict[str, Any]:
        return {"key_id": self.key_id, "name": self.name, "role": self.role, "tables": list(self.tables),
                "operators": list(self.operators), "created_at": self.created_at, "revoked_at": self.revoked_at}


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def split_key(key: str) -> tuple[str, str] | None:
    """(key_id, secret) of a well-formed key, else None."""
    if not key.startswith(KEY_PREFIX):
        return None
    key_id, sep, secret = key[len(KEY_PREFIX):].partition("_")
    if not sep or not key_id or not secret:
        return None
    return key_id, secret


class KeyStore:
    """The key table in the ledger's own store (the recorder's datastore: SQLite or PostgreSQL)."""

    def __init__(self, datastore: Any) -> None:
        self.datastore = datastore
        self.postgres = hasattr(datastore, "schema")
        self.table = self.qualified(KEYS_TABLE)
        with self.cursor() as c:
            c.execute(
                f"CREATE TABLE IF NOT EXISTS {self.table} (key_id text PRIMARY KEY, name text NOT NULL, "
                "role text NOT NULL, tables text NOT NULL, secret_hash text NOT NULL, created_at text NOT NULL, "
                "revoked_at text, operators text NOT NULL DEFAULT '')"
            )
            self._add_operators_column(c)

    def _add_operators_column(self, c: Any) -> None:
        """A key table made before keys had operators gains the column (its keys: every operator)."""
        if self.postgres:
            c.execute(f"ALTER TABLE {self.table} ADD COLUMN IF NOT EXISTS operators text NOT NULL DEFAULT ''")
            return
        c.execute(f"PRAGMA table_info({KEYS_TABLE})")
        if "operators" not in {row["name"] for row in c.fetchall()}:
            c.execute(f"ALTER TABLE {KEYS_TABLE} ADD COLUMN operators text NOT NULL DEFAULT ''")

    def qualified(self, table: str) -> str:
        """A table of this store by its full name (PostgreSQL: in the store's schema)."""
        return f'"{self.datastore.schema}".{table}' if self.postgres else table

    @contextmanager
    def cursor(self, commit: bool = True) -> Iterator[Any]:
        with self.datastore.transaction(commit=commit) as c:
            yield c

    def sql(self, text: str) -> str:
        return text.replace("?", "%s") if self.postgres else text

    def add(self, role: str, name: str = "", tables: Sequence[str] = (),
            operators: Sequence[str] = ()) -> tuple[str, ApiKey]:
        """A new key: (the plain key, shown once; its stored description)."""
        require(role in ROLES, f"role {role!r} is not one of {', '.join(ROLES)}")
        require(all(t and "," not in t for t in tables), f"table ids {list(tables)!r}: empty or with a comma")
        require(all(is_operator_id(o) for o in operators), f"operator ids {list(operators)!r}: not operator ids")
        require(not operators or role in ROLE_OPERATOR_SCOPED,
                f"a {role} key sees every operator: only {' and '.join(ROLE_OPERATOR_SCOPED)} keys take operators")
        key_id, secret = secrets.token_hex(6), secrets.token_urlsafe(32)
        row = ApiKey(key_id, name or f"{role}-{key_id}", role, tuple(tables), datetime.now(UTC).isoformat(), None,
                     tuple(sorted(set(operators))))
        with self.cursor() as c:
            c.execute(self.sql(f"INSERT INTO {self.table} ({', '.join(COLUMNS)}) VALUES (?,?,?,?,?,?,?,?)"),
                      (row.key_id, row.name, row.role, ",".join(row.tables), _hash(secret), row.created_at, None,
                       ",".join(row.operators)))
        return f"{KEY_PREFIX}{key_id}_{secret}", row

    def list(self) -> list[ApiKey]:
        with self.cursor(commit=False) as c:
            c.execute(f"SELECT {', '.join(COLUMNS)} FROM {self.table} ORDER BY created_at, key_id")
            return [key_of_row(row) for row in c.fetchall()]

    def revoke(self, key_id_or_name: str) -> int:
        """Revoke by key id or name; how many keys were revoked (0: none matched)."""
        where = "WHERE (key_id = ? OR name = ?) AND revoked_at IS NULL"
        with self.cursor() as c:
            c.execute(self.sql(f"SELECT COUNT(*) AS n FROM {self.table} {where}"), (key_id_or_name, key_id_or_name))
            count = int(c.fetchone()["n"])
            c.execute(self.sql(f"UPDATE {self.table} SET revoked_at = ? {where}"),
                      (datetime.now(UTC).isoformat(), key_id_or_name, key_id_or_name))
        return count

    def check(self, key: str) -> ApiKey | None:
        """The live key this plain key is, or None (unknown, wrong secret, revoked)."""
        parts = split_key(key)
        if parts is None:
            return None
        key_id, secret = parts
        with self.cursor(commit=False) as c:
            c.execute(self.sql(f"SELECT {', '.join(COLUMNS)} FROM {self.table} WHERE key_id = ?"), (key_id,))
            row = c.fetchone()
        if row is None or row["revoked_at"] is not None:
            return None
        if not hmac.compare_digest(row["secret_hash"], _hash(secret)):
            return None
        return key_of_row(row)


def key_store(app: LedgerApp) -> KeyStore:
    """The key table of the store `app` writes to (created by one process at a time, as the ledger's)."""
    with tables_created_alone(app.env):
        return KeyStore(app.recorder.datastore)  # type: ignore[attr-defined]  # both library recorders have one


def key_of_row(row: Any) -> ApiKey:
    """The key a row of the key table (COLUMNS, as a mapping) describes (also read joined, by the
    console's sessions)."""
    tables = tuple(t for t in row["tables"].split(",") if t)
    operators = tuple(o for o in (row["operators"] or "").split(",") if o)
    return ApiKey(row["key_id"], row["name"], row["role"], tables, row["created_at"], row["revoked_at"], operators)
