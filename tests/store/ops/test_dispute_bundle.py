"""`ledger replay ROUND --bundle`: the bundle verifies offline with the standard library
alone (isolated interpreter), on SQLite and PostgreSQL; one byte changed in any member,
or in the zip itself, is named by the verifier (member, and event position where one is
concerned); a manifest the store does not continue is refused."""
from __future__ import annotations

import io
import json
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path
from typing import Any

import pytest

from ledger.eventlog import EventLog
from ledger.store import open_app
from ops.cli import main as cli
from ops.sim.simulator import simulate
from projections.audit_store import parse_round_ref, round_events
from tests.support.dispute_rounds import SPLIT, VOIDED, ingest_three

VERIFIER = Path(__file__).parents[3] / "ops" / "bundle" / "verify.py"


@pytest.fixture
def store(store_url: str) -> str:
    app = open_app(store_url)
    ingest_three(app)
    app.close()
    return store_url


def bundle(url: str, ref: str, out: Path, *extra: str) -> Path:
    path = out / f"{ref.replace('#', '-')}.zip"
    assert cli(["replay", ref, "--db", url, "--bundle", str(path), *extra]) == 0
    return path


def verify(path: Path, script: Path = VERIFIER) -> tuple[int, dict[str, Any]]:
    """The verifier in an isolated interpreter (-I: no site-packages, no project on the path)."""
    run = subprocess.run([sys.executable, "-I", str(script), str(path), "--json"], capture_output=True,
                         text=True, check=False, cwd=path.parent)
    assert run.returncode in (0, 1), run.stderr
    return run.returncode, json.loads(run.stdout)


def rewrite(path: Path, member: str, change: Any) -> Path:
    """The same zip with one member's bytes changed (CRCs consistent: a careful forger)."""
    out = path.with_name("tampered.zip")
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            data = src.read(info)
            dst.writestr(info, change(data) if info.filename == member else data)
    return out


def one_byte(data: bytes) -> bytes:
    """Change one ASCII letter or digit near the middle into another."""
    i = len(data) // 2
    while not chr(data[i]).isalnum():
        i += 1
    new = b"1" if data[i:i + 1] == b"0" else b"0"
    return data[:i] + new + data[i + 1:]


def test_bundle_verifies_with_the_bundled_script_and_gives_the_amounts(store: str, tmp_path: Path) -> None:
    path = bundle(store, SPLIT, tmp_path)
    with zipfile.ZipFile(path) as zf:
        names = set(zf.namelist())
        zf.extract("verify.py", tmp_path)
        replay = json.loads(zf.read("replay.json"))
    assert names == {"README.txt", "events.jsonl", "proof.json", "manifest.json", "replay.json", "replay.html",
                     "verify.py", "SHA256SUMS"}
    code, report = verify(path, tmp_path / "verify.py")
    assert code == 0 and report["findings"] == []
    money = {(r["bet_id"], r["staked_minor"], r["returned_minor"]) for r in report["results"]}
    assert money == {("m1", 2000, 4000), ("bb", 1000, 2000)}  # split doubles both stakes; dealer busts
    assert money == {(c["bet_id"], c["recorded"]["staked_minor"], c["recorded"]["returned_minor"])
                     for c in replay["results"]}
    assert report["head_hash"] == replay["proof"]["head_hash"]


def test_voided_round_bundle_recomputes_the_refunds(store: str, tmp_path: Path) -> None:
    code, report = verify(bundle(store, VOIDED, tmp_path))
    assert code == 0
    assert {(r["bet_id"], r["amount_minor"]) for r in report["refunds"]} == {("v1", 1000), ("v2", 350)}


MEMBERS = ["events.jsonl", "proof.json", "manifest.json", "replay.json", "replay.html", "verify.py",
           "README.txt", "SHA256SUMS"]


@pytest.mark.parametrize("member", MEMBERS)
def test_one_byte_changed_in_any_member_is_named(store: str, tmp_path: Path, member: str) -> None:
    tampered = rewrite(bundle(store, SPLIT, tmp_path), member, one_byte)
    code, report = verify(tampered)
    assert code == 1
    assert any(member in f["file"] for f in report["findings"]), report["findings"]


def test_changed_amount_in_the_round_events_names_the_event(store: str, tmp_path: Path) -> None:
    path = bundle(store, SPLIT, tmp_path)
    settled = next(e for e in round_events(EventLog.open(store), parse_round_ref(SPLIT))
                   if type(e).__name__ == "Settled")

    def pay_more(data: bytes) -> bytes:  # 4000 -> 5000: one byte
        return data.replace(b'"returned_minor":4000', b'"returned_minor":5000', 1)

    code, report = verify(rewrite(path, "events.jsonl", pay_more))
    assert code == 1
    named = [f for f in report["findings"] if f["position"] == settled.position]
    assert any("events.jsonl" in f["file"] for f in named), report["findings"]


def _member_unchanged(flipped: bytes, original: Path, name: str) -> bool:
    """Whether zipfile still reads the member as the same bytes (a flip in padding bits or
    deflate's last-block flag can leave the content, and its CRC, intact: nothing to find)."""
    try:
        with zipfile.ZipFile(io.BytesIO(flipped)) as a, zipfile.ZipFile(original) as b:
            return a.read(name) == b.read(name)
    except (zipfile.BadZipFile, zlib.error, OSError, ValueError, EOFError):
        return False


def test_one_byte_flipped_in_the_zip_file_names_the_member(store: str, tmp_path: Path) -> None:
    path = bundle(store, SPLIT, tmp_path)
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo("events.jsonl")
    original = path.read_bytes()
    name_len, extra_len = int.from_bytes(original[info.header_offset + 26:info.header_offset + 28], "little"), \
        int.from_bytes(original[info.header_offset + 28:info.header_offset + 30], "little")
    start = info.header_offset + 30 + name_len + extra_len
    # Many places in the compressed member: a flip may fail the CRC or the inflate itself
    # (zlib.error); both must be a named finding, never a crash.
    for offset in range(0, info.compress_size, max(1, info.compress_size // 12)):
        raw = bytearray(original)
        raw[start + offset] ^= 0x01
        if _member_unchanged(bytes(raw), path, "events.jsonl"):
            continue  # a flip in padding bits: the member's content is untouched, nothing to find
        flipped = tmp_path / "flipped.zip"
        flipped.write_bytes(bytes(raw))
        code, report = verify(flipped)
        assert code == 1, offset
        assert [f["kind"] for f in report["findings"] if f["file"] == "events.jsonl"][:1] == ["corrupt"], offset


def test_bundle_anchored_to_an_audit_export_manifest(store_url: str, tmp_path: Path) -> None:
    app = open_app(store_url)
    app.ingest(simulate(2, 3, 7, 0))
    ingest_three(app)
    assert cli(["audit", "export", str(tmp_path / "exp"), "--db", store_url]) == 0
    manifest = tmp_path / "exp" / "manifest.json"
    path = bundle(store_url, SPLIT, tmp_path, "--manifest", str(manifest))
    code, report = verify(path)
    assert code == 0
    assert report["head_hash"] == json.loads(manifest.read_text())["head_hash"]
    with zipfile.ZipFile(path) as zf:
        assert zf.read("manifest.json") == manifest.read_bytes()


def test_a_manifest_before_the_round_or_not_of_this_store_is_refused(store_url: str, tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    app = open_app(store_url)
    ingest_three(app)
    assert cli(["audit", "export", str(tmp_path / "early"), "--db", store_url, "--to", "3"]) == 0
    early = tmp_path / "early" / "manifest.json"
    out = str(tmp_path / "x.zip")
    assert cli(["replay", SPLIT, "--db", store_url, "--bundle", out, "--manifest", str(early)]) == 2
    assert "after the manifest's head" in capsys.readouterr().err
    forged = json.loads(early.read_text()) | {"last_seq": 20, "head_hash": "ab" * 32}
    early.write_text(json.dumps(forged))
    assert cli(["replay", SPLIT, "--db", store_url, "--bundle", out, "--manifest", str(early)]) == 2
    assert "not the manifest's head_hash" in capsys.readouterr().err
    assert not Path(out).exists()


def test_every_round_of_a_simulated_day_with_faults_verifies(tmp_path: Path) -> None:
    """Voids, reversals, doubles, insurance, follows: the verifier's money rules hold for all."""
    url = f"sqlite:///{tmp_path / 'day.db'}"
    app = open_app(url)
    app.ingest(simulate(3, 5, 4, 250))
    refs = {f"{e.table_id}#{e.round_no}" for e in EventLog(app).records() if type(e).__name__ == "Opened"}
    for ref in sorted(refs):
        code, report = verify(bundle(url, ref, tmp_path))
        assert code == 0, (ref, report["findings"])


def test_bundle_refuses_at(store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["replay", SPLIT, "--db", store, "--at", "3", "--bundle", str(tmp_path / "x.zip")]) == 2
    assert "whole round" in capsys.readouterr().err


def test_unwritable_output_is_one_line_and_exit_2(store: str, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    for option in ("--html", "--bundle"):
        assert cli(["replay", SPLIT, "--db", store, option, str(tmp_path / "no-such-dir" / "x")]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("ledger replay: error output_unwritable: ") and "\n" not in err


def test_zip_members_are_reproducible_bytes(store: str, tmp_path: Path) -> None:
    with zipfile.ZipFile(io.BytesIO(bundle(store, SPLIT, tmp_path).read_bytes())) as zf:
        assert all(i.date_time == (1980, 1, 1, 0, 0, 0) for i in zf.infolist())


def test_a_link_of_the_wrong_shape_is_found_under_python_O(store: str, tmp_path: Path) -> None:
    """The verifier's checks are explicit, not `assert`: `python -O` (which strips asserts) finds the same."""
    def seq_as_text(data: bytes) -> bytes:  # a chain link whose seq is "1", not 1
        first, _, rest = data.partition(b"\n")
        link = json.loads(first)
        link["record"]["seq"] = str(link["record"]["seq"])
        return json.dumps(link).encode() + b"\n" + rest

    tampered = rewrite(bundle(store, SPLIT, tmp_path), "events.jsonl", seq_as_text)
    run = subprocess.run([sys.executable, "-I", "-O", str(VERIFIER), str(tampered), "--json"], capture_output=True,
                         text=True, check=False, cwd=tmp_path)
    assert run.returncode == 1, run.stderr
    findings = json.loads(run.stdout)["findings"]
    assert any(f["kind"] == "unreadable" and f["file"] == "events.jsonl" for f in findings), findings
