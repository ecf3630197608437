"""`ledger export ksa` and `ledger export verify` over a simulated week (voids, settlement
reversals, a table in Asia/Kolkata), on SQLite and PostgreSQL: every data file and manifest
is valid against the KSA's XSDs (lxml, and xmlschema as a second validator); every
manifest's signature verifies with Debian's `xmlsec1` (an independent implementation: it
must be installed, ops/deploy/test-services.sh installs it; missing is a failure, never a
skip); the chain verifies from the first batch; stakes - winnings - refunds over the
transactions (each transaction's latest record, cancellations removed) equal `ledger ggr`
to the cent; a reversal-then-void after an export is sent as a cancellation of the winnings
and replacements naming the records they replace; each recipient can decrypt, with our
library and with independent tools (the openssl command unwraps the key, `xmlsec1 --decrypt`
decrypts the batch; both must be installed, as xmlsec1); and a changed
byte in any file, a removed batch and a reordered batch are each a finding naming the file."""
from __future__ import annotations

import base64
import json
import shutil
import subprocess
import zipfile
from collections import Counter
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import xmlschema
from lxml import etree

from ledger.eventlog import EventLog
from ledger.store import open_app
from ops.cli import main
from projections import ksa
from projections.ksa_xml import XENC, decrypt_file, unwrap_key
from projections.runner import Projector
from projections.sql import Db
from tests.support.ksa_week import KOLKATA, ZONED_TABLE, Party, ingested, make_parties, week_feed

SCHEMAS = Path(__file__).resolve().parents[3] / "ops" / "schemas" / "nl-ksa"


@pytest.fixture(scope="module")
def parties(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Party]:
    return make_parties(tmp_path_factory.mktemp("keys"))


@pytest.fixture(scope="module")
def feed() -> list[bytes]:
    return week_feed()


@pytest.fixture
def week(store_url: str, feed: list[bytes]) -> str:
    return ingested(store_url, feed)


def export(url: str, out: Path, parties: dict[str, Party], capsys: pytest.CaptureFixture[str],
           *extra: str) -> dict[str, Any]:
    code = main(["export", "ksa", "--db", url, "--out", str(out), "--signing-key", str(parties["operator"].key),
                 "--signing-cert", str(parties["operator"].cert), "--recipient-cert", str(parties["ksa"].cert),
                 "--recipient-cert", str(parties["auditor"].cert), "--operator-id", "OP-NL-1", "--json", *extra])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return dict(json.loads(captured.out))


def verify(out: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, list[dict[str, str]]]:
    code = main(["export", "verify", str(out), "--json", *extra])
    return code, list(json.loads(capsys.readouterr().out)["findings"])


def batches(out: Path) -> Iterator[tuple[Path, str, etree._Element]]:
    """(manifest, record kind, the data file's root) of every batch, in sequence order."""
    for manifest in sorted(out.glob("ksa-*.manifest.xml")):
        with zipfile.ZipFile(manifest.with_name(manifest.name.replace(".manifest.xml", ".zip"))) as z:
            root = etree.fromstring(z.read(z.namelist()[0]))
        kind = {ksa.element(k): k for k in ksa.KINDS}[root[0].tag]
        yield manifest, kind, root


def fold(out: Path) -> tuple[dict[str, dict[str, str]], dict[str, str], Counter[str]]:
    """The regulator's view after every batch: each transaction's latest record (a
    replacement must name the subject's latest record; a cancellation removes it), each
    game session's; and the record kinds seen."""
    state: dict[str, dict[str, str]] = {}
    owner: dict[str, str] = {}  # record id -> the subject (Transaction_ID / Game_Session_ID / Game_ID)
    sessions: dict[str, str] = {}
    kinds: Counter[str] = Counter()
    for _, kind, root in batches(out):
        for rec in root:
            r = {e.tag: e.text for e in rec}
            kinds[kind] += 1
            if kind == ksa.CANCELLATION:
                subject = owner[str(r["Cancelled_Record_ID"])]
                assert state.pop(subject)["Record_ID"] == r["Cancelled_Record_ID"]
                continue
            subject = str(r.get("Transaction_ID") or r.get("Game_Session_ID") or r["Game_ID"])
            if r.get("Replaced_Record_ID"):  # every correction names the record it replaces: the subject's latest
                assert (state[subject]["Record_ID"] if kind == ksa.TRANSACTION else sessions[subject]) == \
                    r["Replaced_Record_ID"]
            else:
                assert subject not in state and (kind != ksa.SESSION or subject not in sessions)
            owner[str(r["Record_ID"])] = subject
            if kind == ksa.TRANSACTION:
                state[subject] = {k: str(v) for k, v in r.items()}
            elif kind == ksa.SESSION:
                sessions[subject] = str(r["Record_ID"])
    return state, sessions, kinds


def money(state: dict[str, dict[str, str]]) -> dict[str, int]:
    out = {"STAKE": 0, "WINNING": 0, "VOID_STAKE": 0}
    for t in state.values():
        units, cents = t["Transaction_Amount"].split(".")
        assert len(cents) == 2
        out[t["Transaction_Type"]] += int(units) * 100 + int(cents)
    return out


def ggr(url: str, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, int]:
    assert main(["ggr", "--db", url, "--json", *extra]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert {r["currency"] for r in rows} == {"EUR"}
    return {"STAKE": sum(r["staked_minor"] for r in rows), "WINNING": sum(r["paid_minor"] for r in rows),
            "VOID_STAKE": sum(r["refunded_minor"] for r in rows)}


def xmlsec1_verifies(manifest: Path, cert: Path) -> bool:
    done = subprocess.run([_tool("xmlsec1"), "--verify", "--trusted-pem", str(cert), str(manifest)], capture_output=True,
                          text=True, timeout=60)
    return done.returncode == 0


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is not installed (apt-get install -y {name}; ops/deploy/test-services.sh installs it)")
    return path


def xmlsec1_decrypts(manifest: Path, party: Party, i: int, tmp: Path) -> bytes:
    """The batch as a recipient reads it with tools independent of ours: the openssl command
    unwraps its `EncryptedKey` (RSA-OAEP, MGF1 and digest SHA-1: `rsa-oaep-mgf1p`), then
    `xmlsec1 --decrypt` decrypts the manifest's `EncryptedData` with that key, reading the
    `.zip.enc` its `CipherReference` names (AES-256-GCM: IV | ciphertext | tag). xmlsec1 cannot
    do the first step itself (docs/ksa.md, "Decrypting with xmlsec1"); it runs in the folder
    because it resolves the relative reference against its working directory."""
    doc = etree.parse(str(manifest)).getroot()
    wrapped = tmp / f"wrapped-{i}.bin"
    wrapped.write_bytes(base64.b64decode(doc.findall(f"{{{XENC}}}EncryptedKey")[i].findtext(
        f"{{{XENC}}}CipherData/{{{XENC}}}CipherValue") or ""))
    key, plain = tmp / f"key-{i}.bin", tmp / f"plain-{i}.zip"
    unwrap = subprocess.run([_tool("openssl"), "pkeyutl", "-decrypt", "-inkey", str(party.key), "-pkeyopt",
                             "rsa_padding_mode:oaep", "-pkeyopt", "rsa_oaep_md:sha1", "-pkeyopt", "rsa_mgf1_md:sha1",
                             "-in", str(wrapped), "-out", str(key)], capture_output=True, text=True, timeout=60)
    assert unwrap.returncode == 0, unwrap.stderr
    done = subprocess.run([_tool("xmlsec1"), "--decrypt", "--aeskey", str(key), "--enabled-cipher-reference-uris",
                           "remote", "--output", str(plain), manifest.name], cwd=manifest.parent, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return plain.read_bytes()


def assert_valid(out: Path) -> None:
    manifest_schema = xmlschema.XMLSchema(str(SCHEMAS / f"ksa_control_manifest_{ksa.VERSION}.xsd"))
    lxml_manifest = etree.XMLSchema(etree.parse(str(SCHEMAS / f"ksa_control_manifest_{ksa.VERSION}.xsd")))
    data = {k: (xmlschema.XMLSchema(str(SCHEMAS / ksa.xsd_name(k))),
                etree.XMLSchema(etree.parse(str(SCHEMAS / ksa.xsd_name(k))))) for k in ksa.KINDS}
    for manifest, kind, root in batches(out):
        manifest_schema.validate(str(manifest))
        assert lxml_manifest.validate(etree.parse(str(manifest))), lxml_manifest.error_log.last_error
        data[kind][0].validate(root)
        assert data[kind][1].validate(root), data[kind][1].error_log.last_error
        assert 1 <= len(root) <= 512
    # Teeth: a data file missing a required element is refused by both.
    _, kind, root = next(batches(out))
    root[0].remove(root[0].find("Record_ID"))
    assert not data[kind][0].is_valid(root) and not data[kind][1].validate(root)


def reverse_and_void_a_round(url: str) -> tuple[str, set[str]]:
    """A settled round in which some player was paid, reversed and voided after the export."""
    log = EventLog.open(url)
    p = Projector(log)
    p.catch_up()
    table, round_no, round_id = p.db.query(
        "SELECT table_id, round_no, round_id FROM proj_recall WHERE game = 'baccarat' AND status = 'settled' "
        "AND returned_minor > 0 ORDER BY table_id, round_no")[0]
    paid = {r[0] for r in p.db.query("SELECT player_id FROM proj_recall WHERE round_id = ? AND returned_minor > 0",
                                     (round_id,))}
    p.close()
    log.close()
    app = open_app(url)
    app.ingest([json.dumps({"type": "reverse_settlement", "command_id": "ksa-rev-1", "table_id": table,
                            "round_no": round_no, "studio_time": "2026-11-28T09:00:00.000+00:00", "by": "sup-1",
                            "reason": "dealer misread the third card", "then": "void"}).encode()])
    app.close()
    return str(round_id), paid


def test_a_week_is_valid_signed_chained_and_equals_ggr(week, tmp_path, parties, feed, capsys) -> None:
    out = tmp_path / "ksa"
    first = export(week, out, parties, capsys)
    assert first["records"][ksa.TRANSACTION] > 512 and len(first["batches"]) >= 4  # split at 512 a file
    state, _, kinds = fold(out)
    assert kinds[ksa.GAME] == 5 and kinds[ksa.CANCELLATION] == 0  # the five simulated rule sets, once each
    assert money(state) == ggr(week, capsys) == first["money_minor"]
    # The zoned table: its times are the UTC instants of the feed's +05:30 times, with Z.
    zoned = [json.loads(b) for b in feed if json.loads(b).get("table_id") == ZONED_TABLE]
    bet = next(c for c in zoned if c["type"] == "place_bet")
    assert bet["studio_time"].endswith("+05:30")
    log = EventLog.open(week)
    p = Projector(log)
    p.catch_up()
    round_id = p.db.query("SELECT round_id FROM proj_recall WHERE table_id = ? AND round_no = ? AND player_id = ?",
                          (ZONED_TABLE, bet["round_no"], bet["player_id"]))[0][0]
    voided = p.db.query("SELECT round_id, player_id FROM proj_recall WHERE status = 'voided' AND refunded_minor > 0")
    p.close()
    log.close()
    first_bet = min(datetime.fromisoformat(c["studio_time"]) for c in zoned
                    if c["type"] == "place_bet" and c["round_no"] == bet["round_no"]
                    and c["player_id"] == bet["player_id"])
    assert first_bet.utcoffset() == KOLKATA.utcoffset(None)
    zoned_stake = state[ksa.uid(f"tx/{round_id}/{bet['player_id']}/STAKE")]
    wall_minus_offset = (first_bet.replace(tzinfo=None) - timedelta(hours=5, minutes=30))
    assert zoned_stake["Transaction_Datetime"] == wall_minus_offset.strftime("%Y-%m-%dT%H:%M:%SZ")
    # Every voided round's refund is there as the format's voided stake.
    assert voided and all(ksa.uid(f"tx/{r}/{pl}/VOID_STAKE") in state for r, pl in voided)
    assert_valid(out)
    for manifest in sorted(out.glob("*.manifest.xml")):
        assert xmlsec1_verifies(manifest, parties["operator"].cert), manifest.name
    assert verify(out, capsys, "--signing-cert", str(parties["operator"].cert)) == (0, [])
    # Another signer's certificate does not verify them (the check has teeth).
    code, findings = verify(out, capsys, "--signing-cert", str(parties["ksa"].cert))
    assert code == 1 and {f["file"] for f in findings} == {m.name for m in out.glob("*.manifest.xml")}
    # A settlement reversed and voided after the export: the next run, into the same folder,
    # chains on, cancels the winnings sent, sends the refunds, and replaces the sessions.
    round_id, paid = reverse_and_void_a_round(week)
    second = export(week, out, parties, capsys)
    assert second["cancellations"] == len(paid) > 0 and second["replacements"] >= len(paid)
    state, _, kinds = fold(out)
    assert all(ksa.uid(f"tx/{round_id}/{pl}/WINNING") not in state for pl in paid)
    assert all(ksa.uid(f"tx/{round_id}/{pl}/VOID_STAKE") in state for pl in paid)
    assert money(state) == ggr(week, capsys)
    assert_valid(out)
    assert verify(out, capsys) == (0, [])
    assert all(xmlsec1_verifies(m, parties["operator"].cert) for m in sorted(out.glob("*.manifest.xml")))
    # Nothing new: nothing sent.
    assert export(week, out, parties, capsys)["batches"] == []
    # Each recipient unwraps the batch key and decrypts the batch to the zip's bytes: with our
    # library, and with the openssl command and xmlsec1 (independent tools), the first batch
    # and the last.
    manifests = sorted(out.glob("*.manifest.xml"))
    for manifest in (manifests[0], manifests[-1]):
        doc = etree.parse(str(manifest)).getroot()
        zipped = manifest.with_name(manifest.name.replace(".manifest.xml", ".zip")).read_bytes()
        for i, who in enumerate(("ksa", "auditor")):
            key = unwrap_key(doc.findall(f"{{{XENC}}}EncryptedKey")[i], parties[who].private())
            assert decrypt_file(manifest.with_name(manifest.name.replace(".manifest.xml", ".zip.enc")), key) == zipped
            assert xmlsec1_decrypts(manifest, parties[who], i, tmp_path) == zipped


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory, parties: dict[str, Party]) -> Path:
    """A smaller week's batches (several: its transactions take more than one file)."""
    d = tmp_path_factory.mktemp("tamper")
    url = f"sqlite:///{d / 'ledger.db'}"
    app = open_app(url)
    app.ingest(week_feed(tables=5, rounds=4))
    app.close()
    assert main(["export", "ksa", "--db", url, "--out", str(d / "ksa"), "--signing-key", str(parties["operator"].key),
                 "--signing-cert", str(parties["operator"].cert), "--recipient-cert", str(parties["ksa"].cert)]) == 0
    assert len(list((d / "ksa").glob("*.manifest.xml"))) >= 3
    return d / "ksa"


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


@pytest.mark.parametrize("suffix", [".manifest.xml", ".zip", ".zip.enc"])
@pytest.mark.parametrize("batch", [1, 2])
def test_a_changed_byte_anywhere_is_a_finding_naming_the_file(exported, tmp_path, capsys, suffix, batch) -> None:
    out = _copy(exported, tmp_path / "ksa")
    assert verify(out, capsys) == (0, [])
    target = out / f"ksa-{batch:06d}{suffix}"
    data = bytearray(target.read_bytes())
    at = len(data) // 2
    data[at] ^= 0x01
    target.write_bytes(bytes(data))
    code, findings = verify(out, capsys)
    assert code == 1 and target.name in {f["file"] for f in findings}, findings


def test_a_removed_batch_is_a_finding(exported, tmp_path, capsys) -> None:
    out = _copy(exported, tmp_path / "ksa")
    for p in out.glob("ksa-000002.*"):
        p.unlink()
    code, findings = verify(out, capsys)
    assert code == 1 and any(f["file"] == "ksa-000003.manifest.xml" and "missing or out of order" in f["finding"]
                             for f in findings), findings


def test_a_reordered_batch_is_a_finding(exported, tmp_path, capsys) -> None:
    out = _copy(exported, tmp_path / "ksa")
    for suffix in (".manifest.xml", ".zip", ".zip.enc"):
        a, b = out / f"ksa-000002{suffix}", out / f"ksa-000003{suffix}"
        a.rename(out / "swap")
        b.rename(a)
        (out / "swap").rename(b)
    code, findings = verify(out, capsys)
    named = {f["file"] for f in findings}
    assert code == 1 and {"ksa-000002.manifest.xml", "ksa-000003.manifest.xml"} <= named, findings


def test_an_empty_folder_and_a_stray_file(exported, tmp_path, capsys) -> None:
    (tmp_path / "empty").mkdir()
    assert verify(tmp_path / "empty", capsys)[0] == 1
    out = _copy(exported, tmp_path / "ksa")
    (out / "ksa-000099.zip").write_bytes(b"stray")
    code, findings = verify(out, capsys)
    assert code == 1 and [f["file"] for f in findings] == ["ksa-000099.zip"]


def test_a_batch_the_register_cannot_record_is_removed(tmp_path, parties, capsys, monkeypatch) -> None:
    from ops.sim.simulator import simulate
    from projections import ksa_stream

    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    app = open_app(url)
    app.ingest(list(simulate(tables=2, rounds=3, seed=1)))
    app.close()

    def refuse(*_: object) -> None:
        raise RuntimeError("duplicate key value violates unique constraint")

    monkeypatch.setattr(ksa_stream, "record_batch", refuse)
    argv = ["export", "ksa", "--db", url, "--out", str(tmp_path / "ksa"), "--signing-key", str(parties["operator"].key),
            "--signing-cert", str(parties["operator"].cert), "--recipient-cert", str(parties["ksa"].cert)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "register_failed" in err and len(err.splitlines()) == 1
    assert list((tmp_path / "ksa").iterdir()) == []
    monkeypatch.undo()
    assert main(argv) == 0
    capsys.readouterr()
    assert verify(tmp_path / "ksa", capsys) == (0, [])


def test_long_sessions_are_written_before_the_buffer_grows(tmp_path, parties, capsys, monkeypatch) -> None:
    """A file of game sessions is a batch once they list LISTED_MAX transactions, before 512
    records (its size: a simulated player's session grows with the rounds)."""
    from ops.sim.simulator import simulate
    from projections import ksa_stream

    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    app = open_app(url)
    app.ingest(list(simulate(tables=2, rounds=20, seed=1)))
    app.close()
    monkeypatch.setattr(ksa_stream, "LISTED_MAX", 60)
    assert main(["export", "ksa", "--db", url, "--out", str(tmp_path / "ksa"), "--signing-key",
                 str(parties["operator"].key), "--signing-cert", str(parties["operator"].cert), "--recipient-cert",
                 str(parties["ksa"].cert)]) == 0
    capsys.readouterr()
    files = [(kind, len(root)) for _, kind, root in batches(tmp_path / "ksa")]
    sent: set[str] = set()  # every transaction a game session lists is in an earlier or the same run's earlier batch
    for _, kind, root in batches(tmp_path / "ksa"):
        if kind == ksa.TRANSACTION:
            sent |= {str(r.findtext("Transaction_ID")) for r in root}
        elif kind == ksa.SESSION:
            assert {str(t.text) for t in root.iter("Transaction_ID")} <= sent
    sessions = [n for kind, n in files if kind == ksa.SESSION]
    assert len(sessions) > 1 and sum(sessions) < 512
    assert_valid(tmp_path / "ksa")
    assert verify(tmp_path / "ksa", capsys) == (0, [])


def test_what_the_export_holds_does_not_grow_with_the_records(store_url, tmp_path, parties, monkeypatch) -> None:
    """Memory flat (the issue's criterion; figures in docs/benchmarks.md): each record goes to
    its kind's data file on disk as it is placed and a game session's list of transactions is
    never held, so the Python memory traced after each record is placed stays where it was
    after the first ones, however many records the batch holds (buffering them: ~1.5 KiB each)."""
    import tracemalloc

    from ops.sim.simulator import simulate
    from projections import ksa_stream

    app = open_app(store_url)
    app.ingest(list(simulate(tables=2, rounds=30, seed=1)))
    app.close()
    traced: list[int] = []
    place = ksa_stream.KsaExport._add

    def counted(self: ksa_stream.KsaExport, *args: Any) -> None:
        place(self, *args)
        traced.append(tracemalloc.get_traced_memory()[0])

    monkeypatch.setattr(ksa_stream.KsaExport, "_add", counted)
    argv = ["export", "ksa", "--db", store_url, "--out", str(tmp_path / "ksa"), "--signing-key",
            str(parties["operator"].key), "--signing-cert", str(parties["operator"].cert), "--recipient-cert",
            str(parties["ksa"].cert)]
    tracemalloc.start()
    try:
        assert main(argv) == 0
    finally:
        tracemalloc.stop()
    assert len(traced) > 300  # one batch per kind: none written before the end
    assert max(traced) - traced[10] < 128 * 1024, (traced[10], max(traced))


def test_verify_against_the_register_finds_the_last_batches_removed(store_url, tmp_path, parties, capsys,
                                                                     monkeypatch) -> None:
    """`export verify --db`: the folder against the store's register of what was sent. The
    last batch removed is a finding only there (nothing in the files names it); so are a batch
    file changed (named by the register too), a manifest the register never sent, another
    operator's register."""
    from ops.sim.simulator import simulate
    from projections import ksa_stream

    app = open_app(store_url)
    app.ingest(list(simulate(tables=2, rounds=3, seed=1)))
    app.close()
    monkeypatch.setattr(ksa_stream, "RECORDS_PER_FILE", 8)  # several batches from a small store
    out = tmp_path / "ksa"
    assert main(["export", "ksa", "--db", store_url, "--out", str(out), "--signing-key", str(parties["operator"].key),
                 "--signing-cert", str(parties["operator"].cert), "--recipient-cert", str(parties["ksa"].cert)]) == 0
    capsys.readouterr()
    manifests = sorted(p.name for p in out.glob("*.manifest.xml"))
    assert len(manifests) >= 3
    assert verify(out, capsys, "--db", store_url) == (0, [])
    code, findings = verify(out, capsys, "--db", store_url, "--operator", "op-2")
    assert code == 1 and {f["file"] for f in findings} == set(manifests)

    cut = _copy(out, tmp_path / "cut")
    for p in cut.glob(manifests[-1].replace(".manifest.xml", ".*")):
        p.unlink()
    assert verify(cut, capsys) == (0, [])  # the files alone cannot see it
    code, findings = verify(cut, capsys, "--db", store_url)
    assert code == 1 and [f["file"] for f in findings] == [manifests[-1]] and "missing" in findings[0]["finding"]

    changed = _copy(out, tmp_path / "changed")
    zipped = changed / manifests[0].replace(".manifest.xml", ".zip")
    zipped.write_bytes(zipped.read_bytes()[:-1] + bytes([zipped.read_bytes()[-1] ^ 1]))
    code, findings = verify(changed, capsys, "--db", store_url)
    assert code == 1 and any(f["file"] == zipped.name and "register" in f["finding"] for f in findings), findings

    log = EventLog.open(store_url)
    db = Db.for_store(log.backend)
    with db.transaction():  # a register that never sent the last batch: the folder holds one more
        db.execute("DELETE FROM proj_ksa_manifests WHERE seq = ?", (len(manifests),))
    db.close()
    log.close()
    code, findings = verify(out, capsys, "--db", store_url)
    assert code == 1 and [(f["file"], "never sent" in f["finding"]) for f in findings] == [(manifests[-1], True)]
