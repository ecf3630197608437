"""The read side's records are the write side's event declarations, derived (ledger/records.py
writes ledger/records_round.py, records_shoe.py, records_table.py)."""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from ledger import records
from ledger.library.aggregate import LedgerEvent


def test_the_records_in_the_modules_are_the_derived_ones() -> None:
    folder = Path(records.__file__).parent
    derived = records.derived_sources()
    assert sorted(derived) == ["records_operator.py", "records_round.py", "records_shoe.py", "records_table.py"]
    for name, text in derived.items():
        assert (folder / name).read_text(encoding="utf-8") == text, "run `python -m ledger.records --write`"


@pytest.mark.parametrize(("name", "event_class"), records.written_events(), ids=lambda v: getattr(v, "__qualname__", v))
def test_each_record_has_its_event_fields_with_the_same_names(name: str, event_class: type[LedgerEvent[Any]]) -> None:
    record = getattr(records, name)
    stored = [f.name for f in dataclasses.fields(event_class)]
    assert list(record._fields) == ["position", *stored]
    assert records.EVENT_NAMES[record] == event_class.__qualname__


def test_every_written_event_is_read() -> None:
    assert set(records.EVENT_NAMES.values()) == {c.__qualname__ for _, c in records.written_events()}


def test_a_new_list_field_without_a_read_type_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(records.LINE_FIELDS, "cards")
    with pytest.raises(Exception, match="holds lines"):
        records.derived_sources()
