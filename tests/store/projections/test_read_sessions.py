"""The read service's idle view connections after their sessions ended (a restarted server,
terminated sessions): the next reads are answered on new connections, not failed (in
`ledger serve`, each was a 500 `internal_error` while /readyz said 200)."""
from __future__ import annotations

import uuid

import pytest

from projections.read_service import ReadService, lowest_position
from tests.conftest import terminate_sessions
from tests.e2e.wallet.conftest import filled

pytestmark = pytest.mark.postgres


def test_reads_after_every_session_was_terminated(pg_schema_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    filled(pg_schema_url, rounds=3, seed=5)
    name = f"reads-{uuid.uuid4().hex[:12]}"
    monkeypatch.setenv("PGAPPNAME", name)  # this service's sessions, told from any other test's
    reads = ReadService.open(pg_schema_url)
    try:
        with reads.views() as first, reads.views() as second:  # two idle connections after
            expected = lowest_position(first)
            assert lowest_position(second) == expected
        monkeypatch.delenv("PGAPPNAME")  # (not the terminating session's own name)
        assert terminate_sessions(name) >= 2
        for _ in range(3):
            with reads.views() as db:
                assert lowest_position(db) == expected
    finally:
        reads.close()
