"""DGOJ on the regulator seam writes the bytes main's code wrote before the move: the
batches of a fixed scenario (tests/support/dgoj_scenario.py: a day, a reversal and void
after the first export, a next day's export of rectifications, an export with nothing new),
for the same store and register, byte for byte against the golden files main's code wrote
(tests/store/golden/dgoj/), on SQLite and PostgreSQL."""
from __future__ import annotations

import contextlib
import gzip
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from projections import regulator
from tests.support.dgoj_scenario import make

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "dgoj"


def test_dgoj_batches_are_byte_identical_to_mains(store_url, tmp_path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys) -> None:
    @contextlib.contextmanager
    def frozen(at: datetime) -> Iterator[None]:
        with monkeypatch.context() as m:
            m.setattr(regulator, "now", lambda: at)
            yield

    written = list(make(store_url, tmp_path, frozen))
    assert [p.name for p in written] == ["a.xml", "b.xml", "c.xml"]
    for path in written:
        assert path.read_bytes() == gzip.decompress((GOLDEN / f"{path.name}.gz").read_bytes()), path.name
    # Teeth: the rectifications differ from the first batch, and a changed clock changes the bytes.
    assert written[0].read_bytes() != written[1].read_bytes()
    assert b"RegistroOtrosJuegos" in written[1].read_bytes()
