"""The session table on both stores (SQLite and PostgreSQL): a session lives until it is
ended, expires or its key is revoked or is not a console role; tokens are stored hashed.
The sign-in form's tokens are signed with a secret kept in the store, one for every worker."""
from __future__ import annotations

import time

from ledger.keys import key_store
from ledger.store import open_app
from ops.console.sessions import SECRETS_TABLE, SESSIONS_TABLE, SessionStore


def test_sessions_on_each_store(store_url: str) -> None:
    app = open_app(store_url)
    try:
        keys = key_store(app)
        store = SessionStore(keys)
        _, backoffice = keys.add("backoffice", name="bo")
        _, studio = keys.add("studio", name="st")
        token = store.open(backoffice.key_id)
        session = store.get(token)
        assert session is not None and (session.key_id, session.role, session.key_name) == (backoffice.key_id, "backoffice", "bo")
        assert not session.may_audit and len(session.csrf) >= 24
        assert store.get(token + "x") is None and store.get(None) is None and store.get("") is None
        with keys.datastore.transaction(commit=False) as c:
            c.execute(f"SELECT token_hash FROM {store.table}")
            assert token not in {r["token_hash"] for r in c.fetchall()}  # only its hash is kept
        assert store.get(store.open(studio.key_id)) is None  # a studio key has no console session
        other = store.open(backoffice.key_id)
        store.end(token)
        assert store.get(token) is None and store.get(other) is not None  # sign-out ends that session only
        assert keys.revoke(backoffice.key_id) == 1
        assert store.get(other) is None  # the revoked key ends the rest
        expired = SessionStore(keys, session_s=0)
        _, auditor = keys.add("auditor")
        assert expired.get(expired.open(auditor.key_id)) is None
        assert SESSIONS_TABLE in store.table
    finally:
        app.close()


def test_sign_in_tokens_are_signed_by_the_store_for_every_worker(store_url: str) -> None:
    app = open_app(store_url)
    try:
        keys = key_store(app)
        one, two = SessionStore(keys), SessionStore(keys)  # two workers (or hosts) of one store
        token = one.signin_token()
        assert two.signin_token_valid(token) and one.signin_token_valid(two.signin_token())
        issued, nonce, signature = token.split(".")
        for forged in (f"{issued}.{nonce}x.{signature}", f"{int(issued) + 1}.{nonce}.{signature}",
                       f"{issued}.{nonce}.{'0' * len(signature)}", f"{issued}.{nonce}", "", "x.y.z"):
            assert not two.signin_token_valid(forged), forged
        assert not one.signin_token_valid(one.signin_token(issued_at=int(time.time()) - one.signin_s - 1))
        assert not one.signin_token_valid(one.signin_token(issued_at=int(time.time()) + 3600))  # not from the future
        with keys.datastore.transaction(commit=False) as c:
            c.execute(f"SELECT secret FROM {keys.qualified(SECRETS_TABLE)}")
            assert len(c.fetchall()) == 1  # one secret, made by the first, read by the second
    finally:
        app.close()


def test_a_session_keeps_its_keys_operators_and_the_operator_picked(store_url: str) -> None:
    """A session reads its key's operators with it (every request: a key changed is seen at
    once) and the operator picked for it, in its own row (every worker reads the pick); a table
    made before the picker gains the column, its sessions with none picked."""
    app = open_app(store_url)
    try:
        keys = key_store(app)
        store = SessionStore(keys)
        with keys.datastore.transaction(commit=True) as c:  # the table as it was before the picker
            c.execute(f"DROP TABLE {store.table}")
            c.execute(f"CREATE TABLE {store.table} (token_hash text PRIMARY KEY, key_id text NOT NULL, csrf text "
                      "NOT NULL, created_at text NOT NULL, expires_at text NOT NULL, ended_at text)")
        _, scoped = keys.add("backoffice", name="op12", operators=["OP1", "OP2"])
        old = SessionStore(keys)  # a worker started after the upgrade adds the column
        token = old.open(scoped.key_id)
        session = old.get(token)
        assert session is not None and session.operators == ("OP1", "OP2") and session.operator is None
        assert session.key_scope.allows("OP2") and not session.key_scope.allows("OP3")
        old.pick(token, "OP2")
        picked = SessionStore(keys).get(token)  # another worker
        assert picked is not None and picked.operator == "OP2"
        other = old.open(scoped.key_id)
        assert old.get(other).operator is None  # type: ignore[union-attr]  # the pick is the session's
        old.pick(token, None)
        assert old.get(token).operator is None  # type: ignore[union-attr]
        _, everyone = keys.add("backoffice", name="all")
        assert old.get(old.open(everyone.key_id)).key_scope.everyone  # type: ignore[union-attr]
    finally:
        app.close()
