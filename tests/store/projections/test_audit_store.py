"""Audit exports against a real store (SQLite and PostgreSQL): a simulated feed is
ingested, exported, then the STORE is tampered with raw SQL on the library's
events table (and, once, the export files), and the verifier must name each
tampered event by position."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ledger.eventlog import EventLog
from ledger.records import BetPlaced, CardDealt, DecisionTaken, Settled
from ledger.store import open_app
from ops.cli import main as cli
from ops.sim.simulator import simulate
from projections.audit_export import EVENTS_JSONL, export, verify_against_store, verify_files

TABLES, ROUNDS, SEED, FAULTS_PER_MILLE = 5, 3, 11, 150


class Store:
    """Raw access to the library's events table, to tamper the way an attacker with SQL would."""

    def __init__(self, app: Any) -> None:
        self.app = app
        recorder = app.recorder
        self.datastore = recorder.datastore
        self.pg = "postgres" in type(recorder).__mro__[-3].__module__ or hasattr(self.datastore, "schema")
        table = recorder.events_table_name
        self.table = f'"{self.datastore.schema}"."{table}"' if self.pg else table
        self.pos = "notification_id" if self.pg else "rowid"
        self.mark = "%s" if self.pg else "?"

    def sql(self, statement: str, *params: Any) -> list[Any]:
        statement = statement.replace("?", self.mark).replace("POS", self.pos).replace("TABLE", self.table)
        with self.datastore.transaction(commit=True) as c:
            c.execute(statement, params)
            try:
                return [dict(r) for r in c.fetchall()]
            except Exception:  # no result set (UPDATE / DELETE / INSERT)
                return []

    def row(self, position: int) -> dict[str, Any]:
        (r,) = self.sql("SELECT POS AS pos, originator_id, originator_version, topic, state FROM TABLE WHERE POS = ?",
                        position)
        r["state"] = bytes(r["state"])
        return r

    def edit_state(self, position: int, change: Any) -> None:
        state = json.loads(self.row(position)["state"])
        change(state)
        self.sql("UPDATE TABLE SET state = ? WHERE POS = ?", json.dumps(state).encode(), position)

    def delete(self, position: int) -> dict[str, Any]:
        r = self.row(position)
        self.sql("DELETE FROM TABLE WHERE POS = ?", position)
        return r

    def insert(self, r: dict[str, Any]) -> None:
        self.sql("INSERT INTO TABLE (POS, originator_id, originator_version, topic, state) VALUES (?, ?, ?, ?, ?)",
                 r["pos"], r["originator_id"], r["originator_version"], r["topic"], r["state"])

    def swap(self, p: int, q: int) -> None:
        a, b = self.row(p), self.row(q)
        self.sql("UPDATE TABLE SET originator_version = -1 WHERE POS = ?", p)
        for target, src in ((q, a), (p, b)):
            self.sql("UPDATE TABLE SET originator_id = ?, originator_version = ?, topic = ?, state = ? WHERE POS = ?",
                     src["originator_id"], src["originator_version"], src["topic"], src["state"], target)


@pytest.fixture
def ingested(store_url: str) -> tuple[str, Any]:
    app = open_app(store_url)
    app.ingest(simulate(TABLES, ROUNDS, SEED, FAULTS_PER_MILLE))
    return store_url, app


def positions_of(app: Any, kind: type) -> list[int]:
    return [e.position for e in EventLog(app).records() if isinstance(e, kind)]


def export_and_verify(tmp_path: Path, app: Any, tamper: Any = None, name: str = "x") -> list[tuple[str, int | None]]:
    out = tmp_path / name
    export(out, EventLog(app).stored(), exported_at="2024-05-02T00:00:00Z")
    if tamper:
        tamper()
    verified = verify_files(out)
    return [(f.kind, f.position) for f in verified.findings + verify_against_store(verified, EventLog(app).stored())]


def test_untampered_export_verifies_clean_against_the_store(ingested, tmp_path: Path) -> None:
    url, app = ingested
    assert export_and_verify(tmp_path, app) == []
    assert cli(["audit", "verify", str(tmp_path / "x"), "--db", url]) == 0


def test_edited_event_in_store_is_named(ingested, tmp_path: Path, capsys) -> None:
    url, app = ingested
    p = positions_of(app, BetPlaced)[3]
    store = Store(app)
    found = export_and_verify(tmp_path, app, lambda: store.edit_state(p, lambda s: s.update(stake_minor=1)))
    assert found == [("edited", p)]
    capsys.readouterr()
    assert cli(["audit", "verify", str(tmp_path / "x"), "--db", url]) == 1
    assert f"edited at position {p}" in capsys.readouterr().out


def test_deleted_event_in_store_is_named(ingested, tmp_path: Path) -> None:
    _, app = ingested
    p = positions_of(app, CardDealt)[5]
    store = Store(app)
    assert export_and_verify(tmp_path, app, lambda: store.delete(p)) == [("deleted", p)]


def test_inserted_event_in_store_is_named(ingested, tmp_path: Path) -> None:
    _, app = ingested
    p = positions_of(app, DecisionTaken)[2]
    store = Store(app)
    row = store.delete(p)  # the export is taken without it ...
    assert export_and_verify(tmp_path, app, lambda: store.insert(row)) == [("inserted", p)]  # ... then it appears


def test_swapped_events_in_store_are_named(ingested, tmp_path: Path) -> None:
    _, app = ingested
    p, q = positions_of(app, CardDealt)[7:9]
    store = Store(app)
    assert export_and_verify(tmp_path, app, lambda: store.swap(p, q)) == [("reordered", p)]


def test_edited_export_line_of_a_real_store_is_named(ingested, tmp_path: Path) -> None:
    _, app = ingested
    out = tmp_path / "x"
    export(out, EventLog(app).stored(), exported_at="2024-05-02T00:00:00Z")
    lines = (out / EVENTS_JSONL).read_text(encoding="utf-8").splitlines()
    settled = next(i for i, line in enumerate(lines) if '"event":"Round.Settled"' in line and '"returned_minor":0' in line)
    lines[settled] = lines[settled].replace('"returned_minor":0', '"returned_minor":100000', 1)
    (out / EVENTS_JSONL).write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    position = json.loads(lines[settled])["record"]["position"]
    verified = verify_files(out)
    # The CSV still holds the original: it no longer matches the edited line either.
    assert [(f.kind, f.position) for f in verified.findings] == [("edited", position), ("csv", position)]
    # Against the store, the same event differs in one field.
    store_findings = verify_against_store(verified, EventLog(app).stored())
    assert [(f.kind, f.position) for f in store_findings] == [("edited", position)]
    assert "fields.results" in store_findings[0].message


def test_cli_export_links_consecutive_exports(ingested, tmp_path: Path, capsys) -> None:
    url, app = ingested
    mid = positions_of(app, Settled)[4]
    assert cli(["audit", "export", str(tmp_path / "d1"), "--to", str(mid), "--db", url, "--quiet"]) == 0
    assert cli(["audit", "export", str(tmp_path / "d2"), "--from", str(mid + 1), "--db", url, "--quiet"]) == 0
    second = json.loads((tmp_path / "d2" / "manifest.json").read_text())
    first = json.loads((tmp_path / "d1" / "manifest.json").read_text())
    assert second["previous_manifest"] == "d1/manifest.json"
    assert second["chain_start_hash"] == first["head_hash"] and second["first_seq"] == first["last_seq"] + 1
    assert {r["id"] for r in first["rule_sets"] + second["rule_sets"]} >= {"baccarat/live-8d", "teen-patti/20-20"}
    assert cli(["audit", "verify", str(tmp_path / "d2"), "--db", url]) == 0
    # Changing an event the first export covers shows in the second export's verify against the store.
    Store(app).edit_state(positions_of(app, BetPlaced)[0], lambda s: s.update(stake_minor=7))
    capsys.readouterr()
    assert cli(["audit", "verify", str(tmp_path / "d2"), "--db", url]) == 1
    assert "before position" in capsys.readouterr().out


def test_a_field_added_outside_the_vocabulary_is_named(ingested, tmp_path: Path) -> None:
    """The chain hashes the fields as stored, not only those the typed records know."""
    _, app = ingested
    p = positions_of(app, BetPlaced)[1]
    store = Store(app)
    found = export_and_verify(tmp_path, app, lambda: store.edit_state(p, lambda s: s.update(smuggled="x")))
    assert found == [("edited", p)]
