"""`ledger export ksa` in bounded memory (docs/ksa.md): the rounds read a chunk at a time up
to the head read at the start, the plays sorted and grouped into sessions in a temporary
SQLite file (`dgoj_stream.Spill`, the same sessions as DGOJ's), the register copied there a
page at a time; each session's records placed against it (`regulator.placement`) and
written as they come to their kind's data file in the spill directory, their register rows to
the spill (`Spool`), a kind's file made a batch when it holds 512 records (the XSD's
maximum), the rest at the end. A game session's list of transactions is
made from its plays as it is written, never held. So memory does not grow with the rounds
nor with a session's length. Each batch is registered as soon as it is written, so the
chain in the register always ends at the last batch on disk."""
from __future__ import annotations

import json
import os
import sqlite3
import tempfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from ledger.eventlog import EventLog
from projections import ksa
from projections.dgoj import KINDS, ExportRules, Play, Session, collect_plays
from projections.dgoj_stream import ROUND_CHUNK_EVENTS, SPILL_PAGE_SIZE, Spill
from projections.ksa_register import ChainEnd, chain_end, latest_pages, record_batch
from projections.ksa_xml import (
    DATA_HEAD,
    DATA_TAIL,
    Keys,
    ManifestFacts,
    Record,
    encrypt_file,
    manifest,
    sha256_file,
    write_record,
    write_zip,
)
from projections.regulator import Period, Scope, placement
from projections.replay_range import stored_rounds
from projections.sql import Db

RECORDS_PER_FILE = 512  # the XSDs' maxOccurs
LISTED_MAX = 20_000  # transactions listed by a game session file: past it the file is a batch (its size)


class RegisterError(RuntimeError):
    """A batch was written but the register could not record it: its files were removed."""


@dataclass(frozen=True)
class Target:
    """Where and as whom: the directory, the KSA's ids of the licensee and its data safe,
    the keys, the export's time (every record's Extraction_Date)."""

    out: Path
    operator_id: str
    data_safe_id: str
    keys: Keys
    extraction: datetime


@dataclass
class Tally:
    through: int = 0
    batches: list[str] = field(default_factory=list)  # manifest file names, in order
    records: dict[str, int] = field(default_factory=dict)  # kind -> records written
    new: int = 0
    replacements: int = 0
    cancellations: int = 0
    unchanged: int = 0
    pending_sessions: int = 0
    money: dict[str, int] = field(default_factory=lambda: {"STAKE": 0, "WINNING": 0, "VOID_STAKE": 0})


class Spool:
    """One kind's data file in the making, in the spill directory: its records' XML written as
    they come; their register rows (record id, subject, version, content) in the spill's
    `pending` table until its batch is registered."""

    def __init__(self, directory: Path, kind: str, conn: sqlite3.Connection) -> None:
        self.kind, self.conn = kind, conn
        self.file = open(directory / f"{kind}.xml", "w+b")  # closed by `KsaExport.run`
        self.records = 0
        self.listed = 0  # transactions its game sessions list
        self.file.write(DATA_HEAD)

    def add(self, record_id: str, key: str, seq: int, content: str) -> None:
        self.conn.execute("INSERT INTO pending VALUES (?, ?, ?, ?, ?)", (self.kind, record_id, key, seq, content))
        self.records += 1

    def rows(self) -> list[tuple[str, str, int, str]]:
        """The register rows of its records (at most 512), in order."""
        return self.conn.execute("SELECT record_id, subject, seq, content FROM pending WHERE kind = ? ORDER BY rowid",
                                 (self.kind,)).fetchall()

    def finish(self) -> int:
        """The data file complete, read from its start: its size."""
        self.file.write(DATA_TAIL)
        size = self.file.tell()
        self.file.seek(0)
        return size

    def restart(self) -> None:
        self.file.seek(0)
        self.file.truncate()
        self.file.write(DATA_HEAD)
        self.conn.execute("DELETE FROM pending WHERE kind = ?", (self.kind,))
        self.records, self.listed = 0, 0


class KsaExport:
    """One export (module doc): `run()` writes the batches and registers them."""

    def __init__(self, log: EventLog, db: Db, scope: Scope, period: Period, target: Target,
                 rules: ExportRules) -> None:
        self.log, self.db, self.scope, self.period, self.target, self.rules = log, db, scope, period, target, rules
        self.tally = Tally()
        self.clock: datetime | None = None
        self.chain: ChainEnd = chain_end(db, scope.operator_id)
        self.extraction = ksa.utc(target.extraction)
        self.spools: dict[str, Spool] = {}
        self._spill: Spill | None = None

    def run(self) -> Tally:
        with tempfile.TemporaryDirectory(prefix="ledger-ksa-") as directory:
            self._spill = spill = Spill(directory)
            try:
                spill.conn.execute("CREATE TABLE sent (subject PRIMARY KEY, record_id, seq, kind, content)")
                spill.conn.execute("CREATE TABLE pending (kind, record_id, subject, seq, content)")
                self.spools = {k: Spool(Path(directory), k, spill.conn) for k in ksa.KINDS}
                for rows in latest_pages(self.db, self.scope.operator_id, SPILL_PAGE_SIZE):
                    spill.conn.executemany("INSERT OR REPLACE INTO sent VALUES (?, ?, ?, ?, ?)", rows)
                self.tally.through = self.log.head()
                self._spill_plays(spill)
                spill.group(self.rules.session_gap)
                for s in spill.sessions(self.rules, self.clock):
                    self._place(s)
                for kind in ksa.KINDS:
                    if self.spools[kind].records:
                        self._flush(kind)
            finally:
                for spool in self.spools.values():
                    spool.file.close()
                spill.close()
        return self.tally

    def _spill_plays(self, spill: Spill) -> None:
        kind = self.log.kind
        for chunk in stored_rounds(self.log, self.tally.through, ROUND_CHUNK_EVENTS):
            plays: list[Play] = []
            for round_rows in chunk:
                mine, latest = collect_plays(self.log.decode_rows([r for r in round_rows if kind(r[3]) in KINDS]))
                if latest is not None and (self.clock is None or latest > self.clock):
                    self.clock = latest
                # Whose bets: one operator's players only (a play's player key names its operator).
                plays += [p for p in mine if self.scope.holds_key(p.player_id)]
            spill.add_plays(plays)

    def _sent(self, key: str) -> tuple[str, int, str, str] | None:
        assert self._spill is not None
        row = self._spill.conn.execute("SELECT record_id, seq, kind, content FROM sent WHERE subject = ?",
                                       (key,)).fetchone()
        return None if row is None else (str(row[0]), int(row[1]), str(row[2]), str(row[3]))

    def _place(self, s: Session) -> None:
        before = self._sent(f"session/{s.session_id}")
        if before is None and not self.period.holds(s.start):
            return
        if not s.closed:
            self.tally.pending_sessions += 1
            return
        ksa.check_currency(s.plays)  # before any of its records is written
        self._emit(ksa.game(s.plays[0]), only_new=True)
        for p in s.plays:
            for t in ksa.transactions(p):
                self._emit(t)
        if before is not None:  # only a session sent can have had transactions sent
            for p in s.plays:
                for gone in ksa.withdrawn(p):
                    self._cancel(gone)
        self._emit(ksa.session(s))

    def _emit(self, subject: ksa.Subject, only_new: bool = False) -> None:
        before = self._sent(subject.key)
        sent = None if before is None or before[2] == ksa.CANCELLATION else before[3]
        kind = placement(sent, subject.content)
        if kind == "unchanged" or (only_new and before is not None):
            self.tally.unchanged += subject.kind == ksa.SESSION
            return
        seq = 0 if before is None else before[1] + 1
        replaces = before[0] if kind == "correction" and before is not None else None
        record = Record(ksa.record_id(self.scope.operator_id, subject.key, seq), replaces, subject.fields)
        self._add(subject.kind, subject.key, seq, subject.content, record)
        if subject.kind == ksa.TRANSACTION:
            now = json.loads(subject.content)
            self.tally.money[now["type"]] += int(now["amount"]) - (0 if sent is None else int(json.loads(sent)["amount"]))

    def _cancel(self, key: str) -> None:
        before = self._sent(key)
        if before is None or before[2] == ksa.CANCELLATION:
            return
        record_id, seq, kind, content = before
        if kind == ksa.TRANSACTION:
            t = json.loads(content)
            self.tally.money[t["type"]] -= int(t["amount"])
        fields = (("KSA_Type", kind), ("Cancelled_Record_ID", record_id))
        record = Record(ksa.record_id(self.scope.operator_id, key, seq + 1), None, fields)
        self._add(ksa.CANCELLATION, key, seq + 1, "", record)

    def _add(self, kind: str, key: str, seq: int, content: str, record: Record) -> None:
        assert self._spill is not None
        self._spill.conn.execute("INSERT OR REPLACE INTO sent VALUES (?, ?, ?, ?, ?)",
                                 (key, record.record_id, seq, kind, content))
        self.tally.records[kind] = self.tally.records.get(kind, 0) + 1
        self.tally.new += kind != ksa.CANCELLATION and record.replaces is None
        self.tally.replacements += record.replaces is not None
        self.tally.cancellations += kind == ksa.CANCELLATION
        spool = self.spools[kind]
        write_record(spool.file, kind, record, self.extraction, self.target.operator_id, self.target.data_safe_id)
        spool.add(record.record_id, key, seq, content)
        if kind == ksa.SESSION:
            spool.listed += len(dict(record.fields)["Game_Transactions"])  # type: ignore[arg-type]
        if spool.records >= RECORDS_PER_FILE or (kind == ksa.SESSION and spool.listed >= LISTED_MAX):
            # A game session names its game and transactions: theirs go out first, never after it.
            for before in ((ksa.GAME, ksa.TRANSACTION) if kind == ksa.SESSION else ()):
                if self.spools[before].records:
                    self._flush(before)
            self._flush(kind)

    def _flush(self, kind: str) -> None:
        """One batch: the data file zipped, encrypted, its manifest signed; then registered."""
        spool = self.spools[kind]
        items = spool.rows()
        seq = self.chain.seq + 1
        t = self.target
        stem = f"ksa-{seq:06d}"
        paths = [t.out / f"{stem}.zip", t.out / f"{stem}.zip.enc", t.out / f"{stem}.manifest.xml"]
        extraction = self.extraction
        size = spool.finish()
        created: list[Path] = []
        try:
            write_zip(paths[0], f"{stem}-{kind}.xml", spool.file, size)
            created.append(paths[0])
            session_key = os.urandom(32)
            encrypt_file(paths[0], paths[1], session_key)
            created.append(paths[1])
            facts = ManifestFacts(
                t.operator_id, t.data_safe_id, extraction, seq, self.chain.manifest_sha256, sha256_file(paths[0]),
                len(items), extraction, extraction, size, paths[0].stat().st_size, str(paths[0].resolve()),
                self.chain.zip_path, paths[1].name,
                ((paths[0].name, sha256_file(paths[0])), (paths[1].name, sha256_file(paths[1]))))
            signed = manifest(facts, t.keys, session_key)
            with open(paths[2], "xb") as f:
                created.append(paths[2])
                f.write(signed)
            manifest_sha = sha256_file(paths[2])
            rows: list[tuple[object, ...]] = [(record_id, self.scope.operator_id, key, s, kind, content, seq)
                                              for record_id, key, s, content in items]
            try:
                record_batch(self.db, rows, (self.scope.operator_id, seq, extraction, paths[2].name, manifest_sha,
                                             facts.batch_sha256, facts.zip_path, len(items)))
            except Exception as exc:  # another export took this sequence number, or the store failed
                raise RegisterError(f"batch {seq} ({paths[2].name}) could not be registered: {exc}") from exc
        except BaseException:
            for p in created:  # a batch not registered is not on disk: the next export writes it again
                p.unlink(missing_ok=True)
            raise
        spool.restart()
        self.chain = ChainEnd(seq, manifest_sha, facts.zip_path)
        self.tally.batches.append(paths[2].name)

