"""The library benchmark runs each override beside the library's own way on the same rows,
and every pair gives the same result (stored bytes, decoded values, array bytes)."""
from __future__ import annotations

import json

import pytest

from ops.bench import library_bench


def test_every_override_gives_what_the_library_gives(capsys: pytest.CaptureFixture[str]) -> None:
    assert library_bench.main(["--events", "300", "--repeat", "1", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    names = " ".join(r["override"] for r in rows)
    for part in ("LedgerEvent.recorded", "LedgerMapper", "LedgerEventStore", "decode_state", "eventlog.py rows",
                 "LedgerSQLiteRecorder", "PendingEvents", "Int8Array of 1000"):
        assert part in names
    assert [r["override"] for r in rows if r["same"] is not True] == []
    assert all(r["library_us"] > 0 and r["ours_us"] > 0 for r in rows)
