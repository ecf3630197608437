"""The audit chain and export files, with synthetic events (no store).

Each tampering test edits the export files the way an attacker would and
expects the verifier to name the event by position.
"""
from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from uuid import NAMESPACE_URL, uuid5

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from domain.errors import InvariantBroken
from domain.registry import get_rule_set
from ledger.records import Opened, Unknown, record_of
from projections.audit import GENESIS_HEX, Stored, canonical_json, chain, chain_hash, compare_with_store, iso_utc
from projections.audit_export import EVENTS_CSV, EVENTS_JSONL, MANIFEST, export, file_sha256, verify_files

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def stored(position: int, name: str, round_id: str, version: int, at: str | datetime, fields: dict) -> Stored:
    """A stored event with exactly these fields, as the chain sees it (record, stored fields)."""
    if isinstance(at, str):
        at = datetime.fromisoformat(at.replace("Z", "+00:00"))
    return (Unknown(position, round_id, version, at, fields.get("command_id"), fields.get("studio_time"),
                    f"ledger.round:{name}", fields), fields)


def synthetic(count: int = 12, gap_at: int | None = None) -> list[Stored]:
    """`count` events of rounds of 4 events each; positions skip one after `gap_at` (PostgreSQL-like)."""
    events, position = [], 0
    for i in range(count):
        position += 2 if gap_at is not None and i == gap_at else 1
        round_id = str(uuid5(NAMESPACE_URL, f"round/{i // 4}"))
        name = ("Round.Opened", "Round.BetPlaced", "Round.BettingClosed", "Round.Settled")[i % 4]
        fields = {"command_id": f"c{i}", "studio_time": "2024-05-01T11:59:59+00:00", "note": "Café ✓ \"q\"\n"}
        if name == "Round.BetPlaced":
            fields |= {"bet_id": f"b{i}", "stake_minor": 1000, "postings": [
                {"account": "player:p1", "amount_minor": -1000}, {"account": f"round:{round_id}", "amount_minor": 1000}]}
        if name == "Round.Opened":
            fields |= {"ruleset_id": "baccarat/live-8d", "ruleset_version": 1, "ruleset_hash": "ab" * 32}
        at = T0 + timedelta(seconds=i)
        if name == "Round.Opened":  # a typed Opened: the export lists its rule set
            events.append((record_of(Opened, position, round_id, 1, at, fields), fields))
        else:
            events.append(stored(position, name, round_id, i % 4 + 1, at, fields))
    return events


def make_export(tmp_path: Path, events=None, name: str = "x1", **kw) -> Path:
    out = tmp_path / name
    export(out, events if events is not None else synthetic(), exported_at="2024-05-02T00:00:00Z", **kw)
    return out


def lines(out: Path) -> list[str]:
    return (out / EVENTS_JSONL).read_text(encoding="utf-8").splitlines()


def write_lines(out: Path, new: list[str]) -> None:
    (out / EVENTS_JSONL).write_text("".join(x + "\n" for x in new), encoding="utf-8")


def kinds(out: Path) -> set[tuple[str, int | None]]:
    return {(f.kind, f.position) for f in verify_files(out).findings}


# ------------------------------------------------------------------ canonical form


def test_canonical_bytes_are_sorted_compact_utf8() -> None:
    assert canonical_json({"b": 1, "a": ["é", None, True]}) == '{"a":["é",null,true],"b":1}'


def test_worked_example_in_docs_matches_the_code() -> None:
    """docs/audit.md shows this record and its hash; keep them in step."""
    record = stored(1, "Round.Opened", "5b7c3f0e-2a41-5c39-9d7e-2f1c6c0a9b11", 1, "2024-05-01T12:00:00.000000Z",
                    {"command_id": "c1", "table_id": "bac-1", "round_no": 7})
    link = next(chain([record]))
    expected = ('{"event":"Round.Opened","fields":{"command_id":"c1","round_no":7,"table_id":"bac-1"},'
                '"originator_id":"5b7c3f0e-2a41-5c39-9d7e-2f1c6c0a9b11","originator_version":1,'
                '"position":1,"seq":1,"timestamp":"2024-05-01T12:00:00.000000Z"}')
    assert canonical_json(link.record) == expected
    assert link.hash == hashlib.sha256(bytes(32) + expected.encode()).hexdigest()
    docs = Path(__file__).resolve().parents[3] / "docs" / "audit.md"
    if docs.exists():
        text = docs.read_text(encoding="utf-8")
        assert expected in text and link.hash in text


@pytest.mark.parametrize("bad", [1.5, float("nan"), 2**53, {1: "x"}, b"x", datetime(2024, 1, 1)])
def test_non_plain_fields_are_refused(bad) -> None:
    event = stored(1, "Opened", str(uuid5(NAMESPACE_URL, "r")), 1, "2024-05-01T12:00:00.000000Z", {"x": bad})
    with pytest.raises(InvariantBroken):
        next(chain([event]))


def test_timestamps_normalise_to_utc_microseconds() -> None:
    local = datetime(2024, 5, 1, 14, 0, tzinfo=timezone(timedelta(hours=2)))
    assert iso_utc(local) == "2024-05-01T12:00:00.000000Z"
    link = next(chain([stored(3, "Opened", str(uuid5(NAMESPACE_URL, "r")), 1, local, {})]))
    assert link.record["timestamp"] == "2024-05-01T12:00:00.000000Z"


@settings(max_examples=40, deadline=None)
@given(st.dictionaries(st.text(max_size=5), st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | st.text(max_size=8),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c, max_size=3), max_leaves=10),
    max_size=4))
def test_canonical_form_round_trips_through_json(fields) -> None:
    """What a verifier parses and re-serialises hashes the same (the property docs/audit.md relies on)."""
    link = next(chain([stored(1, "X", str(uuid5(NAMESPACE_URL, "r")), 1, "2024-05-01T12:00:00.000000Z", fields)]))
    reparsed = json.loads(link.line())["record"]
    assert chain_hash(GENESIS_HEX, canonical_json(reparsed).encode()) == link.hash


# ------------------------------------------------------------------ export and verify


def test_untampered_export_verifies_clean(tmp_path: Path) -> None:
    out = make_export(tmp_path, synthetic(12, gap_at=5))
    verified = verify_files(out)
    assert verified.findings == []
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["count"] == 12 and manifest["first_position"] == 1 and manifest["last_position"] == 13
    published = get_rule_set("baccarat/live-8d", 1).content_hash()
    assert manifest["rule_sets"] == [{"id": "baccarat/live-8d", "version": 1, "hashes": ["ab" * 32], "rounds": 3,
                                      "published_hash": published}]
    assert manifest["files"] == {name: file_sha256(out / name) for name in (EVENTS_JSONL, EVENTS_CSV)}
    assert manifest["software"]["name"] == "casino-ledger"
    assert set(manifest["studio_time_range"]) == {"first", "last"}
    assert manifest["chain_start_hash"] == GENESIS_HEX


def test_a_file_changed_where_no_line_shows_it_is_named_by_its_hash(tmp_path: Path) -> None:
    out = make_export(tmp_path, synthetic(4))
    with open(out / EVENTS_JSONL, "a", encoding="utf-8") as f:
        f.write("\n")  # a blank line: read_links skips it, the chain is intact
    assert kinds(out) == {("file", None)}


def test_partial_export_chains_from_genesis_and_verifies(tmp_path: Path) -> None:
    full = make_export(tmp_path, name="full")
    part = make_export(tmp_path, name="part", from_position=5, to_position=8)
    assert len(lines(part)) == 4 and lines(part) == lines(full)[4:8]
    assert verify_files(part).findings == []


def test_edited_line_is_named_by_position(tmp_path: Path) -> None:
    out = make_export(tmp_path)
    rows = lines(out)
    rows[5] = rows[5].replace('"stake_minor":1000', '"stake_minor":9000')
    write_lines(out, rows)
    assert ("edited", 6) in kinds(out)


def test_edited_and_rehashed_line_is_named_by_position(tmp_path: Path) -> None:
    out = make_export(tmp_path)
    rows = lines(out)
    obj = json.loads(rows[5])
    obj["record"]["fields"]["stake_minor"] = 9000
    obj["hash"] = chain_hash(obj["prev"], canonical_json(obj["record"]).encode())
    rows[5] = canonical_json(obj)
    write_lines(out, rows)
    assert ("edited", 6) in kinds(out)


def test_deleted_line_is_named_by_position(tmp_path: Path) -> None:
    out = make_export(tmp_path)
    rows = lines(out)
    del rows[6]
    write_lines(out, rows)
    found = verify_files(out).findings
    deleted = [f for f in found if f.kind == "deleted"]
    assert [f.position for f in deleted] == [8] and "seq 7..7" in deleted[0].message


def test_inserted_line_is_named_by_position(tmp_path: Path) -> None:
    out = make_export(tmp_path)
    rows = lines(out)
    forged = json.loads(rows[3])
    forged["record"]["fields"]["note"] = "forged"
    forged["hash"] = chain_hash(forged["prev"], canonical_json(forged["record"]).encode())
    rows.insert(4, canonical_json(forged))
    write_lines(out, rows)
    assert ("inserted", 4) in kinds(out)
    assert not any(k == "edited" for k, _ in kinds(out))


def test_swapped_lines_are_named_by_position(tmp_path: Path) -> None:
    out = make_export(tmp_path)
    rows = lines(out)
    rows[2], rows[3] = rows[3], rows[2]
    write_lines(out, rows)
    assert kinds(out) == {("reordered", 3)}


def test_edited_csv_row_is_named(tmp_path: Path) -> None:
    out = make_export(tmp_path)
    text = (out / EVENTS_CSV).read_text().splitlines()
    text[3] = text[3].replace("Round.BettingClosed", "Round.Voided")
    (out / EVENTS_CSV).write_text("\n".join(text) + "\n")
    assert kinds(out) == {("csv", 3)}


def test_second_export_links_to_the_first(tmp_path: Path) -> None:
    events = synthetic(12)
    first = make_export(tmp_path, events, name="a", to_position=6)
    second = make_export(tmp_path, events, name="b", from_position=7)
    manifest = json.loads((second / MANIFEST).read_text())
    assert manifest["previous_manifest"] == "a/manifest.json"
    assert manifest["chain_start_hash"] == json.loads((first / MANIFEST).read_text())["head_hash"]
    assert verify_files(second).findings == []
    (first / MANIFEST).write_text((first / MANIFEST).read_text().replace('"count": 6', '"count": 5'))
    assert ("previous_manifest", None) in kinds(second)


# ------------------------------------------------------------------ against a store (synthetic)


def store_links(events):
    return list(chain(events))


def test_store_comparison_names_every_kind(tmp_path: Path) -> None:
    events = synthetic(12)
    links = store_links(events)
    edited = events.copy()
    edited[4] = (events[4][0], {**events[4][1], "stake_minor": 1})
    assert [(f.kind, f.position) for f in compare_with_store(links, store_links(edited))] == [("edited", 5)]
    deleted = events[:3] + events[4:]
    assert [(f.kind, f.position) for f in compare_with_store(links, store_links(deleted))] == [("deleted", 4)]
    a, b = events[2], events[3]
    swapped = events[:2] + [(b[0]._replace(position=3), b[1]), (a[0]._replace(position=4), a[1])] + events[4:]
    assert [(f.kind, f.position) for f in compare_with_store(links, store_links(swapped))] == [("reordered", 3)]
    part = links[:5] + links[6:]
    assert [(f.kind, f.position) for f in compare_with_store(part, store_links(events))] == [("inserted", 6)]


def test_reference_verifier_in_docs_runs(tmp_path: Path) -> None:
    """The stand-alone verifier printed in docs/audit.md accepts a clean export and catches an edit."""
    text = (Path(__file__).resolve().parents[3] / "docs" / "audit.md").read_text(encoding="utf-8")
    code = text.split("<!-- reference-verifier -->\n```python\n", 1)[1].split("```", 1)[0]
    namespace: dict = {"__name__": "reference_verifier"}
    exec(compile(code, "docs/audit.md", "exec"), namespace)
    out = make_export(tmp_path, synthetic(12, gap_at=5))
    assert namespace["verify"](str(out)) == []
    rows = lines(out)
    rows[4] = rows[4].replace('"c4"', '"c44"')
    write_lines(out, rows)
    assert namespace["verify"](str(out)) == ["event at position 5 was edited"]
