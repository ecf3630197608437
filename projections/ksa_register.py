"""The KSA export register: every record sent and every manifest written, per operator
(docs/ksa.md, "The register").

Two tables beside the views, never views (`ledger project --rebuild` never touches them):

- `proj_ksa_register`: one row per record written: its `Record_ID`, the subject it is of
  (`ksa.Subject.key`), its version (`seq`: 0 the first record, n the n-th replacement or a
  cancellation), the file kind, the subject's content when sent ('' for a cancellation),
  the manifest that carried it;
- `proj_ksa_manifests`: one row per batch: its sequence number, the SHA-256 of its manifest
  file and of its batch (zip) file, its zip's absolute path: the next batch chains to the
  last one (`Previous_ManifestFile`, `Absolute_Path_Previous_Zip`), across runs.

A batch's rows are inserted in one transaction after its files are written; a `Record_ID`
or sequence number already there is refused (plain INSERT), so two exports racing cannot
both record the same batch.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from projections.dgoj import KINDS
from projections.ksa_xml import NO_PREVIOUS
from projections.regulator import Regulator, RegulatorExport
from projections.sql import Db, Table

REGISTER = Table(
    "proj_ksa_register",
    key=("record_id",),
    columns=(("record_id", "text"), ("operator_id", "text"), ("subject", "text"), ("seq", "int"), ("kind", "text"),
             ("content", "text"), ("manifest_seq", "int")),
    indexes=(("operator_id", "subject", "seq"),),
)
MANIFESTS = Table(
    "proj_ksa_manifests",
    key=("operator_id", "seq"),
    columns=(("operator_id", "text"), ("seq", "int"), ("generation", "text"), ("manifest_file", "text"),
             ("manifest_sha256", "text"), ("batch_sha256", "text"), ("zip_path", "text"), ("records", "int")),
)
KSA: Regulator = RegulatorExport("ksa", KINDS, (REGISTER, MANIFESTS))  # KSA on the seam (projections/regulator.py)


@dataclass(frozen=True)
class ChainEnd:
    """The last batch registered for an operator (seq 0: none yet)."""

    seq: int = 0
    manifest_sha256: str = NO_PREVIOUS
    zip_path: str = ""


def ensure(db: Db) -> None:
    db.create(REGISTER)  # IF NOT EXISTS
    db.create(MANIFESTS)


def chain_end(db: Db, operator_id: str) -> ChainEnd:
    rows = db.query(f"SELECT seq, manifest_sha256, zip_path FROM {MANIFESTS.name} WHERE operator_id = ? "
                    "ORDER BY seq DESC LIMIT 1", (operator_id,))
    return ChainEnd(int(rows[0][0]), str(rows[0][1]), str(rows[0][2])) if rows else ChainEnd()


def latest_pages(db: Db, operator_id: str, page_size: int) -> Iterator[list[tuple[object, ...]]]:
    """(subject, record_id, seq, kind, content) of every row, in (subject, seq) order, a page
    at a time: the last row of a subject is its latest record."""
    after: tuple[str, int] = ("", -1)
    while rows := db.query(f"SELECT subject, record_id, seq, kind, content FROM {REGISTER.name} WHERE operator_id = ? "
                           "AND (subject > ? OR (subject = ? AND seq > ?)) ORDER BY subject, seq "
                           f"LIMIT {int(page_size)}", (operator_id, after[0], after[0], after[1])):
        yield rows
        after = (str(rows[-1][0]), int(str(rows[-1][2])))


def sent_batches(db: Db, operator_id: str, page_size: int = 1000) -> Iterator[tuple[int, str, str, str, str]]:
    """(sequence, manifest file name, its SHA-256, the zip's SHA-256, the zip's path) of every
    batch registered for the operator, in sequence order, a page at a time; none when no
    export made the register."""
    if not db.table_exists(MANIFESTS.name):
        return
    after = 0
    while rows := db.query(f"SELECT seq, manifest_file, manifest_sha256, batch_sha256, zip_path FROM {MANIFESTS.name} "
                           f"WHERE operator_id = ? AND seq > ? ORDER BY seq LIMIT {int(page_size)}",
                           (operator_id, after)):
        for seq, manifest_file, manifest_sha256, batch_sha256, zip_path in rows:
            yield int(seq), str(manifest_file), str(manifest_sha256), str(batch_sha256), str(zip_path)
        after = int(rows[-1][0])


def record_batch(db: Db, rows: list[tuple[object, ...]], manifest_row: tuple[object, ...]) -> None:
    """A batch's register rows and its manifest row, all or none."""
    cols = REGISTER.column_names
    with db.transaction():
        db.executemany(f"INSERT INTO {REGISTER.name} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                       rows)
        mcols = MANIFESTS.column_names
        db.executemany(f"INSERT INTO {MANIFESTS.name} ({', '.join(mcols)}) VALUES ({', '.join('?' * len(mcols))})",
                       [manifest_row])
