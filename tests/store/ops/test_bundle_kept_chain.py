"""A dispute bundle proved from the audit chain kept in the store (projections/chain_index.py)
is byte for byte the bundle the pass over the whole chain makes, on both stores: anchored to
the head and to an older export's manifest, after the chain kept was extended, and after its
subtree roots were made again from the links kept. It verifies with the shipped verifier,
a byte changed in it is caught, and an event changed in the store under the chain kept is
refused rather than bundled."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from ledger.eventlog import EventLog
from ledger.store import open_app
from ops.bundle import build
from ops.bundle.build import BundleError, write_bundle
from ops.sim.simulator import simulate
from projections import chain_index
from projections.audit import FORMAT, TreeBuilder, chain
from projections.audit_store import parse_round_ref, round_events
from projections.document import proof as proof_from_store
from projections.document import replay_document
from projections.replay import recompute
from projections.sql import Db
from tests.store.ops.test_dispute_bundle import one_byte, rewrite, verify
from tests.support.dispute_rounds import SPLIT, VOIDED, ingest_three


@pytest.fixture
def store(store_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The disputed rounds between two simulated studios: more than NODE_MIN * 4 events
    before and after, so proofs use stored subtree roots, hashed ones and folded ones."""
    monkeypatch.setattr(build, "_now", lambda: "2026-11-27T00:00:00Z")  # the one field that differs per run
    app = open_app(store_url)
    app.ingest(simulate(3, 30, 5, 0), batch_size=5000)
    ingest_three(app)
    app.ingest(simulate(3, 30, 6, 0), batch_size=5000)
    app.close()
    return store_url


def _document(log: EventLog, ref: str, proof: dict[str, Any]) -> dict[str, Any]:
    events = round_events(log, parse_round_ref(ref))
    return replay_document(parse_round_ref(ref), events, recompute(events), proof, None, ref)


def _positions(log: EventLog, ref: str) -> set[int]:
    return {e.position for e in round_events(log, parse_round_ref(ref))}


def _full_pass(log: EventLog, ref: str, path: Path, manifest: Path | None = None) -> bytes:
    path.parent.mkdir(exist_ok=True)  # the same file name as the other: README.txt names it
    write_bundle(path, log, _document(log, ref, proof_from_store(log, _positions(log, ref))), manifest)
    return path.read_bytes()


def _kept(log: EventLog, db: Db, ref: str, path: Path, manifest: Path | None = None) -> bytes:
    path.parent.mkdir(exist_ok=True)
    chain_index.extend(log, db)
    write_bundle(path, log, _document(log, ref, chain_index.proof(db, _positions(log, ref))), manifest, views=db)
    return path.read_bytes()


def _manifest(log: EventLog, size: int, path: Path) -> Path:
    """An export's manifest anchored at seq `size` (its head hash and tree root)."""
    tree, head = TreeBuilder(), None
    for link in chain(log.stored(1, limit=None)):
        if link.seq > size:
            break
        tree.add(link.hash)
        head = link
    assert head is not None
    path.write_text(json.dumps({"format": FORMAT, "last_seq": size, "last_position": head.position,
                                "head_hash": head.hash, "tree_root": tree.root()}))
    return path


def test_kept_chain_bundle_is_the_full_pass_bundle(store: str, tmp_path: Path) -> None:
    log = EventLog.open(store)
    db = Db.for_store(log.backend)
    try:
        assert log.head() > chain_index.NODE_MIN * 4
        for ref in (SPLIT, VOIDED):
            full = _full_pass(log, ref, tmp_path / "full" / "round.zip")
            assert _kept(log, db, ref, tmp_path / "kept" / "round.zip") == full
            code, report = verify(tmp_path / "kept" / "round.zip")
            assert code == 0 and report["findings"] == []
        # an older anchor than the head kept: its tree is a prefix of the kept one
        last = max(_positions(log, VOIDED) | _positions(log, SPLIT))
        size = next(link.seq for link in chain(log.stored(1)) if link.position == last) + 3
        manifest = _manifest(log, size, tmp_path / "manifest.json")
        full = _full_pass(log, SPLIT, tmp_path / "full" / "round.zip", manifest)
        assert _kept(log, db, SPLIT, tmp_path / "kept" / "round.zip", manifest) == full
        assert verify(tmp_path / "kept" / "round.zip")[0] == 0
        # subtree roots lost (a chain kept before they were): made again from the links kept
        db.execute(f"DELETE FROM {chain_index.NODES.name}")
        assert _kept(log, db, SPLIT, tmp_path / "kept" / "round.zip", manifest) == full
        assert db.query(f"SELECT COUNT(*) FROM {chain_index.NODES.name}")[0][0] > 0
    finally:
        db.close()
        log.close()


def test_kept_chain_bundle_tampered_is_caught(store: str, tmp_path: Path) -> None:
    log = EventLog.open(store)
    db = Db.for_store(log.backend)
    try:
        path = tmp_path / "kept" / "round.zip"
        _kept(log, db, SPLIT, path)
        for member in ("events.jsonl", "proof.json"):
            code, report = verify(rewrite(path, member, one_byte))
            assert code == 1 and any(member in f["file"] for f in report["findings"]), report["findings"]
    finally:
        db.close()
        log.close()


def test_store_changed_under_the_chain_kept_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    app = open_app(url)
    ingest_three(app)
    app.close()
    log = EventLog.open(url)
    db = Db.for_store(log.backend)
    try:
        proof = (chain_index.extend(log, db), chain_index.proof(db, _positions(log, SPLIT)))[1]
        document = _document(log, SPLIT, proof)
        settled = _settled_changed(tmp_path / "ledger.db", log)
        with pytest.raises(BundleError, match=f"event at position {settled} hashes to"):
            write_bundle(tmp_path / "round.zip", log, document, views=db)
        assert not (tmp_path / "round.zip").exists()
    finally:
        db.close()
        log.close()


def test_kept_chain_roots_match_a_tree_over_the_links(store: str) -> None:
    """Every subtree root kept is the root of its links' hashes (so proofs need no pass)."""
    log = EventLog.open(store)
    db = Db.for_store(log.backend)
    try:
        chain_index.extend(log, db)
        hashes = [link.hash for link in chain(log.stored(1))]
        kept = {(lo, hi): h for lo, hi, h in db.query(f"SELECT lo, hi, hash FROM {chain_index.NODES.name}")}
        assert len(kept) == sum(len(hashes) >> b for b in range(8, len(hashes).bit_length()))
        for (lo, hi), digest in kept.items():
            tree = TreeBuilder()
            for h in hashes[lo:hi]:
                tree.add(h)
            assert tree.root() == digest
    finally:
        db.close()
        log.close()


def test_chain_kept_changed_is_refused_not_bundled(store: str, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A subtree root changed in the chain kept: the head's path no longer gives the head's
    tree root, refused; a link hash changed while the roots are made again: the CLI says so
    (exit 2), no traceback and no bundle."""
    from ops.cli import main as cli

    log = EventLog.open(store)
    db = Db.for_store(log.backend)
    try:
        _kept(log, db, SPLIT, tmp_path / "kept" / "round.zip")
        lo, hi = db.query(f"SELECT lo, hi FROM {chain_index.NODES.name} ORDER BY hi - lo DESC LIMIT 1")[0]
        with db.transaction():
            db.execute(f"UPDATE {chain_index.NODES.name} SET hash = ? WHERE lo = ? AND hi = ?", ("00" * 32, lo, hi))
        with pytest.raises(BundleError, match="has root"):
            _kept(log, db, SPLIT, tmp_path / "again" / "round.zip")
        with db.transaction():
            db.execute(f"DELETE FROM {chain_index.NODES.name}")
            db.execute(f"UPDATE {chain_index.CHAIN.name} SET hash = ? WHERE seq = 5", ("11" * 32,))
        out = tmp_path / "cli.zip"
        capsys.readouterr()
        assert cli(["replay", SPLIT, "--db", store, "--bundle", str(out)]) == 2
        assert "does not match its head" in capsys.readouterr().err and not out.exists()
    finally:
        db.close()
        log.close()


def _settled_changed(db_file: Path, log: EventLog) -> int:
    """Change the SPLIT round's last event in the SQLite file; its position."""
    settled = max(_positions(log, SPLIT))
    conn = sqlite3.connect(db_file)
    with conn:
        state = conn.execute("SELECT state FROM stored_events WHERE rowid = ?", (settled,)).fetchone()[0]
        changed = bytes(state).replace(b"4000", b"5000", 1)
        assert changed != bytes(state)
        conn.execute("UPDATE stored_events SET state = ? WHERE rowid = ?", (changed, settled))
    conn.close()
    return settled


def test_replay_proof_is_the_full_pass_proof_without_the_pass(store: str, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """`ledger replay --proof --json` and the dispute page's document quote what the pass over
    the whole chain gives, read from the chain kept (the pass is not run)."""
    from ops.cli import main as cli
    from projections import document as replay_view

    log = EventLog.open(store)
    try:
        expected = json.loads(json.dumps(proof_from_store(log, _positions(log, SPLIT))))

        def no_pass(*args: object) -> None:
            raise AssertionError("the whole chain was read")

        monkeypatch.setattr(replay_view, "proof", no_pass)
        capsys.readouterr()
        assert cli(["replay", SPLIT, "--db", store, "--proof", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["proof"] == expected
        document = replay_view.round_document(log, parse_round_ref(SPLIT), with_proof=True, ref=SPLIT)
        assert document is not None and json.loads(json.dumps(document["proof"])) == expected
    finally:
        log.close()


def test_an_event_changed_under_the_chain_kept_is_a_finding_not_a_proof(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """After the chain was kept, an event of the round changed in the store: `replay --proof`
    and `--html` exit 2 with `chain_mismatch` (no page written), the service's dispute page
    answers 409 `chain_mismatch`; a round whose events are intact still replays."""
    from fastapi.testclient import TestClient

    from ops.cli import main as cli
    from ops.service.app import Settings, create_app
    from tests.e2e.service.conftest import auth, make_keys

    db_file = tmp_path / "ledger.db"
    url = f"sqlite:///{db_file}"
    app = open_app(url)
    ingest_three(app)
    app.close()
    assert cli(["replay", SPLIT, "--db", url, "--proof"]) == 0  # the chain is kept from here
    log = EventLog.open(url)
    try:
        settled = _settled_changed(db_file, log)
    finally:
        log.close()
    capsys.readouterr()
    assert cli(["replay", SPLIT, "--db", url, "--proof"]) == 2
    err = capsys.readouterr().err
    assert "error chain_mismatch" in err and f"position {settled}" in err and "Traceback" not in err
    page = tmp_path / "round.html"
    assert cli(["replay", SPLIT, "--db", url, "--html", str(page)]) == 2 and not page.exists()
    assert cli(["replay", VOIDED, "--db", url, "--proof"]) in (0, 1)  # untouched round: a proof
    keys = make_keys(url)
    with TestClient(create_app(Settings(db_url=url, key_cache_s=0.0))) as client:
        answer = client.get(f"/v1/rounds/{SPLIT.replace('#', '%23')}/replay.html", headers=auth(keys["auditor"]))
    assert answer.status_code == 409 and answer.json()["code"] == "chain_mismatch", answer.text
    assert f"position {settled}" in answer.json()["detail"]
