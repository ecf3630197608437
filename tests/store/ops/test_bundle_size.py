"""A dispute bundle's size depends on its round, not on the store: from a store of 20,000
events (1,000,000 under LEDGER_SLOW=1) the bundle of a round stays under 200 KB and
verifies offline; an event changed, a link changed or an event dropped is still caught,
also by a forger who rewrites SHA256SUMS to match (the Merkle proof against the manifest's
tree_root is what catches it). On the old bundle (every link from the round to the head)
the size bound fails: the 10,000 links after the round are about 6.5 MB of chain.jsonl (200,000
links about 130 MB), over 30 times the bound.

The big store is made fast: a simulated studio is ingested once through the ledger, then
its stored rows are copied under new aggregate ids (SQL, in one transaction) until the
store holds the events asked for; the disputed rounds are ingested through the ledger in
the middle, so the store's events come before and after them. The chain hashes whatever
is stored; the copies are events like any other to it. Making the bundle hashes the whole
chain once (about 0.3 ms an event): the store's size is the test's cost, so it is the
smallest that still dwarfs the bound."""
from __future__ import annotations

import json
import os
import sqlite3
import zipfile
from pathlib import Path
from typing import Any

import pytest

from ledger.eventlog import EventLog
from ledger.store import open_app
from ops.cli import main as cli
from ops.sim.simulator import simulate
from tests.store.ops.test_dispute_bundle import verify
from tests.support.dispute_rounds import SPLIT, ingest_three

SIZE_BOUND = 200_000  # bytes
EVENTS = 20_000  # in the store: half before the disputed rounds, half after
SLOW = os.environ.get("LEDGER_SLOW") == "1"


def _fill(path: Path, events: int) -> None:
    """Copy the stored rows under new aggregate ids until the store holds `events` more."""
    conn = sqlite3.connect(path)
    with conn:
        base = conn.execute("SELECT max(rowid) FROM stored_events").fetchone()[0]
        source = min(base, 5000)
        # A new id per aggregate and copy: the copy's number beside the aggregate's own number.
        conn.execute("CREATE TEMP TABLE ids AS SELECT originator_id AS old, row_number() OVER () AS n FROM "
                     "(SELECT DISTINCT originator_id FROM stored_events WHERE rowid <= ?)", (source,))
        copies = -(-events // source)
        for k in range(copies):
            take = min(source, events - k * source)
            conn.execute("INSERT INTO stored_events SELECT printf('%08x%024x', ?, ids.n), s.originator_version, s.topic, "
                         "s.state FROM stored_events AS s JOIN ids ON ids.old = s.originator_id WHERE s.rowid <= ? "
                         "ORDER BY s.rowid",
                         (0x10000000 + k + int(base), take))
    conn.close()


def big_store(directory: Path, events: int) -> str:
    path = directory / "big.db"
    url = f"sqlite:///{path}"
    app = open_app(url)
    app.ingest(simulate(5, 12, 11, 0), batch_size=5000)  # real rounds of every rule set: the rows to copy
    app.close()
    _fill(path, events // 2)
    app = open_app(url)
    ingest_three(app)  # the disputed rounds, in the middle of the store
    app.close()
    _fill(path, events // 2)
    return url


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    return big_store(tmp_path_factory.mktemp("big"), EVENTS)


@pytest.fixture(scope="module")
def bundled(store: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One bundle for the module's tests (making one reads the whole store twice)."""
    return make_bundle(store, tmp_path_factory.mktemp("bundle"))


def make_bundle(url: str, out: Path, *extra: str) -> Path:
    path = out / "round.zip"
    assert cli(["replay", SPLIT, "--db", url, "--bundle", str(path), *extra]) == 0
    return path


def rewrite(path: Path, changes: dict[str, Any], out: Path) -> Path:
    """The bundle with members changed and SHA256SUMS recomputed to match (a careful forger)."""
    import hashlib

    with zipfile.ZipFile(path) as zf:
        files = {name: zf.read(name) for name in zf.namelist()}
    for name, change in changes.items():
        files[name] = change(files[name])
    files["SHA256SUMS"] = "".join(f"{hashlib.sha256(data).hexdigest()}  {name}\n" for name, data in files.items()
                                  if name != "SHA256SUMS").encode()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return out


def lines_of(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in data.decode().splitlines() if line]


def canonical_line(link: dict[str, Any]) -> str:
    return json.dumps(link, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def rehash(link: dict[str, Any]) -> dict[str, Any]:
    import hashlib

    record = json.dumps(link["record"], sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    return {**link, "hash": hashlib.sha256(bytes.fromhex(link["prev"]) + record).hexdigest()}


def events_change(change: Any) -> Any:
    def apply(data: bytes) -> bytes:
        return "".join(canonical_line(lk) + "\n" for lk in change(lines_of(data))).encode()
    return apply


def test_bundle_of_a_round_in_a_big_store_is_small_and_verifies(store: str, bundled: Path) -> None:
    assert EventLog.open(store).head() >= EVENTS
    path = bundled
    size = path.stat().st_size
    assert size < SIZE_BOUND, size
    code, report = verify(path)
    assert code == 0 and report["findings"] == [], report["findings"]
    assert report["head_seq"] >= EVENTS and report["events"] > 10


def test_tampering_in_a_small_bundle_is_still_caught(bundled: Path, tmp_path: Path) -> None:
    path = bundled
    settled_at = next(i for i, lk in enumerate(lines_of(zipfile.ZipFile(path).read("events.jsonl")))
                      if lk["record"]["event"] == "Round.Settled")

    def pay_more(links: list[dict[str, Any]]) -> list[dict[str, Any]]:  # an event changed and re-hashed
        lk = links[settled_at]
        results = [{**r, "returned_minor": r["returned_minor"] + 1000} for r in lk["record"]["fields"]["results"]]
        links[settled_at] = rehash({**lk, "record": {**lk["record"], "fields": {**lk["record"]["fields"],
                                                                                  "results": results}}})
        return links

    def other_prev(links: list[dict[str, Any]]) -> list[dict[str, Any]]:  # a link changed and re-hashed
        links[2] = rehash({**links[2], "prev": "ab" * 32})
        return links

    cases = {
        "event changed": ({"events.jsonl": events_change(pay_more)}, "not_in_chain"),
        "link changed": ({"events.jsonl": events_change(other_prev)}, "not_in_chain"),
        "event dropped": ({"events.jsonl": events_change(lambda links: links[:3] + links[4:])}, "sequence"),
        "last event dropped": ({"events.jsonl": events_change(lambda links: links[:-1])}, "incomplete"),
        "head changed": ({"manifest.json": lambda d: d.replace(d[d.index(b'"head_hash": "') + 14:][:4],
                                                                b"0000", 1)}, "anchor"),
    }
    for name, (changes, kind) in cases.items():
        code, report = verify(rewrite(path, changes, tmp_path / f"{name.replace(' ', '-')}.zip"))
        assert code == 1, name
        assert kind in {f["kind"] for f in report["findings"]}, (name, report["findings"])


@pytest.mark.skipif(not SLOW, reason="a store of 1,000,000 events: LEDGER_SLOW=1")
def test_bundle_of_a_round_in_a_million_events_is_small_and_verifies(tmp_path: Path) -> None:
    url = big_store(tmp_path, 1_000_000)
    path = make_bundle(url, tmp_path)
    assert path.stat().st_size < SIZE_BOUND, path.stat().st_size
    code, report = verify(path)
    assert code == 0 and report["head_seq"] >= 1_000_000
