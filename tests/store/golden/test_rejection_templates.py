"""The rejections the committed stores hold were made from today's templates.

A rejection row keeps the message it was refused with; domain/refusals.py's
templates were written from the code that made them, so every stored message
must be one of its code's templates filled in (the same text, byte for byte,
as a command refused today).
"""
from __future__ import annotations

import gzip
import sqlite3
from pathlib import Path

import pytest

from domain.refusals import RefusalCode
from tests.support.refusal_templates import matching_variants

GOLDEN = Path(__file__).resolve().parent


@pytest.mark.parametrize("store", ["store-v0.db.gz", "store-s3.db.gz"])
def test_every_stored_rejection_is_one_of_its_codes_templates(store: str, tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    db.write_bytes(gzip.decompress((GOLDEN / store).read_bytes()))
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT code, message FROM ledger_rejections").fetchall()
    assert rows
    unmatched = [(code, message) for code, message in rows if not matching_variants(RefusalCode(code), message)]
    assert not unmatched, unmatched
