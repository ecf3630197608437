"""`ledger consume --lease` stopped (SIGTERM) right after its lease session ended (terminated,
a restarted server) before a round noticed: it hands its leases back on a new connection, so
a successor takes the slots at once instead of waiting for them to run out (the release was
tried once, on the dead session, and every lease stayed live for up to a lease time)."""
from __future__ import annotations

import asyncio

import pytest

from ledger.store import open_app
from ops.jetstream.leased import HOST_LEASE, LeasedHost, lease_connection
from tests.conftest import _pg_connect, pg_base_url

pytestmark = pytest.mark.postgres


def live_leases(url: str) -> dict[str, bool]:
    conn = lease_connection(url, 5000)
    try:
        return {str(n): bool(live) for n, live in conn.execute(
            "SELECT name, expires_at > now() FROM ledger_leases").fetchall()}
    finally:
        conn.close()


def test_leases_handed_back_after_the_lease_session_was_terminated(pg_schema_url: str) -> None:
    app = open_app(pg_schema_url)  # makes the store's tables, the leases' among them
    host = LeasedHost(app, pg_schema_url, host_id="h-release", ttl_ms=30_000)

    async def run() -> None:
        await host._round(None)  # a new host's first round: announced, nothing taken (no NATS needed)
        assert live_leases(pg_schema_url) == {f"{HOST_LEASE}h-release": True}
        assert host.leases is not None
        conn = _pg_connect(pg_base_url())
        try:
            conn.execute("SELECT pg_terminate_backend(%s)", (host.leases.conn.info.backend_pid,))
        finally:
            conn.close()
        await host._hand_back_all()

    try:
        asyncio.run(run())
        assert live_leases(pg_schema_url) == {f"{HOST_LEASE}h-release": False}
    finally:
        host.lease_executor.shutdown(wait=True)
        host.executor.shutdown(wait=True)
        if host.leases is not None:
            host.leases.conn.close()
        app.close()
