"""The round page's bundle button: the zip proved from the chain kept in the store is byte
for byte the one the pass over the whole chain makes for the same head, and verifies."""
from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from ledger.eventlog import EventLog
from ops.bundle import build
from projections import queries
from projections.audit_store import parse_round_ref
from tests.e2e.console.conftest import ConsoleStore, sign_in
from tests.store.ops.test_dispute_bundle import verify


def test_bundle_button_gives_the_full_pass_bundle(client: TestClient, console_store: ConsoleStore, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(build, "_now", lambda: "2026-11-27T00:00:00Z")  # the one field that differs per run
    sign_in(client, console_store.keys["backoffice"])
    log = EventLog.open(console_store.url)
    try:
        for ref in ("dispute-bj#1", "dispute-tp#1"):
            response = client.get(f"/ui/rounds/{ref.replace('#', '%23')}/bundle")
            assert response.status_code == 200
            name = f"round-{ref.replace('#', '-')}.zip"
            replay = queries.round_replay(log, parse_round_ref(ref), ref=ref, with_proof=True)
            assert replay is not None
            full = tmp_path / name
            build.write_bundle(full, log, asdict(replay))
            assert response.content == full.read_bytes()
            (tmp_path / "button").mkdir(exist_ok=True)
            (tmp_path / "button" / name).write_bytes(response.content)
            assert verify(tmp_path / "button" / name)[0] == 0
    finally:
        log.close()
