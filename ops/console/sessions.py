"""Sign-in sessions of the console, kept in the ledger's own store.

A session is a row beside the API keys (ledger/keys.py): the SHA-256 of a random token
(the cookie holds the token, the store only its hash, as for keys), the key it was opened
with, a CSRF token for the forms of that session, when it expires and when it was ended.
Every worker process of `ledger serve --workers N` reads the same rows, so a session opened
in one works in all, and signing out ends it in all at once. Each request reads its session
joined with its key's row: a revoked key ends its sessions at the next request (sooner than
the key cache's time).

The sign-in form has no session yet: its CSRF token is one this store signed (an HMAC with
a secret kept in the store, beside the sessions, so that every worker and every host of the
store checks the forms of the others), carried in both the form and a cookie. A client can
copy a token the server gave it, never make one up.
"""
from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from domain.operators import OperatorScope
from ledger.keys import COLUMNS, ApiKey, KeyStore, key_of_row

SESSIONS_TABLE = "ledger_ui_sessions"
SECRETS_TABLE = "ledger_ui_secrets"
SIGNIN_SECRET = "signin_csrf"  # the row of the key that signs sign-in forms
SIGNIN_S_DEFAULT = 600  # a sign-in form's life: its token and its cookie expire together
CLOCK_SKEW_S = 60  # a form made by a host whose clock is ahead (every host of the store checks it)
SESSION_S_DEFAULT = 8 * 3600  # a working day: the cookie and the row expire together
ROLES_CONSOLE = ("backoffice", "auditor", "admin")
ROLES_AUDIT = ("auditor", "admin")


@dataclass(frozen=True, slots=True)
class Session:
    key_id: str
    key_name: str
    role: str
    csrf: str
    expires_at: str
    key: ApiKey  # the key's row as the HTTP routes read it: its operators narrow every page
    operator: str | None = None  # the operator picked (one of the key's; None: every one the key may see)

    @property
    def may_audit(self) -> bool:
        return self.role in ROLES_AUDIT

    @property
    def operators(self) -> tuple[str, ...]:
        """The key's operators (empty: every operator)."""
        return self.key.operators

    @property
    def key_scope(self) -> OperatorScope:
        return self.key.scope


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _now() -> datetime:
    return datetime.now(UTC)


def same_secret(given: str | None, expected: str) -> bool:
    """Constant-time comparison of a submitted token with the expected one (False when missing)."""
    return bool(given) and hmac.compare_digest(str(given).encode(), expected.encode())


class SessionStore:
    """The session table in the key store's database (SQLite or PostgreSQL)."""

    def __init__(self, keys: KeyStore, session_s: int = SESSION_S_DEFAULT, signin_s: int = SIGNIN_S_DEFAULT) -> None:
        self.keys, self.session_s, self.signin_s = keys, session_s, signin_s
        self.table = keys.qualified(SESSIONS_TABLE)
        with self.keys.cursor() as c:
            c.execute(f"CREATE TABLE IF NOT EXISTS {self.table} (token_hash text PRIMARY KEY, key_id text NOT NULL, "
                      "csrf text NOT NULL, created_at text NOT NULL, expires_at text NOT NULL, ended_at text, "
                      "operator text)")
            self._add_operator_column(c)
        self._signin_key = self._shared_secret(SIGNIN_SECRET)

    def _add_operator_column(self, c: Any) -> None:
        """A session table made before the operator picker gains its column (its sessions: none picked)."""
        if self.keys.postgres:
            c.execute(f"ALTER TABLE {self.table} ADD COLUMN IF NOT EXISTS operator text")
            return
        c.execute(f"PRAGMA table_info({SESSIONS_TABLE})")
        if "operator" not in {row["name"] for row in c.fetchall()}:
            c.execute(f"ALTER TABLE {SESSIONS_TABLE} ADD COLUMN operator text")

    def _shared_secret(self, name: str) -> bytes:
        """The store's secret `name`: made by the first process that asks, read by all the others
        (a secret of one process would refuse the forms another worker made)."""
        secrets_table = self.keys.qualified(SECRETS_TABLE)
        with self.keys.cursor() as c:
            c.execute(f"CREATE TABLE IF NOT EXISTS {secrets_table} (name text PRIMARY KEY, secret text NOT NULL, "
                      "created_at text NOT NULL)")
            # Two workers starting together: one row wins, both read it.
            c.execute(self.keys.sql(f"INSERT INTO {secrets_table} (name, secret, created_at) VALUES (?,?,?) "
                                    "ON CONFLICT (name) DO NOTHING"), (name, secrets.token_hex(32), _now().isoformat()))
            c.execute(self.keys.sql(f"SELECT secret FROM {secrets_table} WHERE name = ?"), (name,))
            return bytes.fromhex(c.fetchone()["secret"])

    def signin_token(self, issued_at: int | None = None) -> str:
        """A sign-in form's CSRF token: when it was made, a nonce, and their HMAC under the store's key."""
        issued = str(int(time.time()) if issued_at is None else issued_at)
        nonce = secrets.token_urlsafe(18)
        return f"{issued}.{nonce}.{self._signature(issued, nonce)}"

    def signin_token_valid(self, token: str) -> bool:
        """Signed by this store's key (by any worker or host of the store) and not expired."""
        issued, _, rest = token.partition(".")
        nonce, _, signature = rest.partition(".")
        if not (issued.isascii() and issued.isdigit() and nonce and signature):
            return False
        age = time.time() - int(issued)
        return -CLOCK_SKEW_S <= age <= self.signin_s and same_secret(signature, self._signature(issued, nonce))

    def _signature(self, issued: str, nonce: str) -> str:
        return hmac.new(self._signin_key, f"signin|{issued}|{nonce}".encode(), hashlib.sha256).hexdigest()

    def open(self, key_id: str) -> str:
        """A new session for a checked key: the token for the cookie (shown once)."""
        token, now = secrets.token_urlsafe(32), _now()
        with self.keys.cursor() as c:
            # Sessions past their time are of no use to anyone (the cookie expired with them).
            c.execute(self.keys.sql(f"DELETE FROM {self.table} WHERE expires_at < ?"), (now.isoformat(),))
            c.execute(self.keys.sql(f"INSERT INTO {self.table} (token_hash, key_id, csrf, created_at, expires_at, ended_at) "
                                "VALUES (?,?,?,?,?,NULL)"),
                      (_hash(token), key_id, secrets.token_urlsafe(24), now.isoformat(),
                       (now + timedelta(seconds=self.session_s)).isoformat()))
        return token

    def get(self, token: str | None) -> Session | None:
        """The live session of this cookie token: not ended, not expired, its key not revoked
        and still of a console role; None otherwise."""
        if not token or len(token) > 200:
            return None
        with self.keys.cursor(commit=False) as c:
            c.execute(self.keys.sql(f"SELECT s.csrf, s.expires_at, s.ended_at, s.operator AS picked, "
                                    f"{', '.join('k.' + name for name in COLUMNS)} "
                                    f"FROM {self.table} s JOIN {self.keys.table} k ON k.key_id = s.key_id "
                                    "WHERE s.token_hash = ?"), (_hash(token),))
            row = c.fetchone()
        if row is None or row["ended_at"] is not None or row["revoked_at"] is not None:
            return None
        if row["role"] not in ROLES_CONSOLE or datetime.fromisoformat(row["expires_at"]) <= _now():
            return None
        key = key_of_row(row)
        # an operator picked that the key no longer reads (its operators changed): none picked
        picked = row["picked"] if row["picked"] and key.scope.allows(row["picked"]) else None
        return Session(key.key_id, key.name, key.role, row["csrf"], row["expires_at"], key, picked)

    def pick(self, token: str, operator: str | None) -> None:
        """The operator the session's pages show (None: every operator its key may see); the
        caller checked it is one of the key's."""
        with self.keys.cursor() as c:
            c.execute(self.keys.sql(f"UPDATE {self.table} SET operator = ? WHERE token_hash = ? AND ended_at IS NULL"),
                      (operator, _hash(token)))

    def end(self, token: str) -> None:
        """Sign-out: the session ends for every worker process at once."""
        with self.keys.cursor() as c:
            c.execute(self.keys.sql(f"UPDATE {self.table} SET ended_at = ? WHERE token_hash = ? AND ended_at IS NULL"),
                      (_now().isoformat(), _hash(token)))
