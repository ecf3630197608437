"""Hostile text is refused where it enters, the same on both stores, and nothing accepted
can stop a view or reach a terminal raw (issue 27: one NUL in a void's note stopped every
view on PostgreSQL)."""
from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from domain.text import BIDI_CONTROLS, SEPARATORS, char_name, hostile_at
from ops.cli import main
from tests.support.feed import Feed, baccarat_round, lines

HOSTILE = [*(chr(c) for c in range(0xA0) if unicodedata.category(chr(c)) == "Cc"), *BIDI_CONTROLS, *SEPARATORS,
           "\ud800", "\udc00"]
FREE = {"\t", "\n"}  # free text (notes, reasons) keeps these

Build = Callable[[Feed, str], dict[str, Any]]
FIELDS: dict[str, Build] = {
    "void.note": lambda f, t: {**f.void(), "note": t},
    "pause.note": lambda f, t: {**f.pause("system_error"), "note": t},
    "resume.note": lambda f, t: {**f.resume(), "note": t},
    "reverse_settlement.reason": lambda f, t: {**f.reverse(), "reason": t},
    "void.by": lambda f, t: {**f.void(), "by": t},
    "place_bet.player_id": lambda f, t: f.bet("b9", t, "table", "player", 500),
    "place_bet.bet_id": lambda f, t: f.bet(t, "carol", "table", "player", 500),
    "place_bet.command_id": lambda f, t: {**f.bet("b8", "carol", "table", "player", 500), "command_id": t},
    "place_bet.table_id": lambda f, t: {**f.bet("b7", "carol", "table", "player", 500), "table_id": t},
}


def _opened(tmp_path: Path, url: str) -> Feed:
    f = Feed("bacc-1")
    feed = tmp_path / "open.jsonl"
    feed.write_bytes(b"\n".join(lines(*baccarat_round(f)[:3])))  # open_round and two bets
    assert main(["ingest", str(feed), "--db", url, "--quiet"]) == 0
    return f


def test_every_hostile_character_in_every_text_and_id_field_is_refused_by_name(
        store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ledger.store import open_app

    f = _opened(tmp_path, store_url)
    cases = [(field, c, build(f, f"a{c}b")) for field, build in FIELDS.items() for c in HOSTILE
             if not (c in FREE and field.endswith((".note", ".reason")))]
    app = open_app(store_url)
    try:
        results = app.ingest([json.dumps(cmd).encode() for _, _, cmd in cases])
        assert [r.code for r in results] == ["text_invalid"] * len(cases)
        for (field, c, _), r in zip(cases, results, strict=True):
            assert r.message.startswith(f"{field}: {char_name(c)} at character 2 "), (field, char_name(c), r.message)
            assert hostile_at(r.message) is None
        assert len(app.rejections(limit=10_000)) == len(cases)
    finally:
        app.close()
    capsys.readouterr()


def test_the_nul_note_of_the_issue_is_refused_and_every_view_goes_on(
        store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = _opened(tmp_path, store_url)
    feed = tmp_path / "void.jsonl"
    feed.write_bytes(b"\n".join(lines({**f.void("human_error"), "note": "a\u0000b"})))
    assert main(["ingest", str(feed), "--db", store_url]) == 1
    assert "text_invalid" in capsys.readouterr().out
    feed.write_bytes(b"\n".join(lines({**f.void("human_error"), "note": "the shoe fell\n\tcards re-dealt"})))
    assert main(["ingest", str(feed), "--db", store_url, "--quiet"]) == 0
    for argv in (["project"], ["balances"], ["refunds"], ["round", "show", "bacc-1#1"], ["replay", "bacc-1#1"]):
        assert main([*argv, "--db", store_url]) == 0, argv
        out = capsys.readouterr().out
        if argv[0] in ("refunds", "round", "replay"):
            assert "the shoe fell\\n\\tcards re-dealt" in out, argv  # a note's own lines shown as escapes


RAW_LINES = [
    b'{"type":"void","command_id":"raw-1","note":"\x1b[2J\x1b[31mPAID\x07"}\n',  # raw ESC: not JSON
    b'\x00\x1b]0;owned\x07\r\n',
    '{"type":"void","command_id":"raw-3","note":"\u202egpj.exe"}\n'.encode(),
    b'{"type":"void","command_id":"raw-4\\u001b[31m"}\n',
    b'{"type":"vo\\u202eid"}\n',
    b'\xff\xfe not utf-8 \x85\n',
]


def test_no_command_prints_a_raw_control_character(
        store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _opened(tmp_path, store_url)
    feed = tmp_path / "hostile.jsonl"
    feed.write_bytes(b"".join(RAW_LINES))
    assert main(["ingest", str(feed), "--db", store_url]) == 1
    wallet = tmp_path / "wallet.csv"
    wallet.write_text("txn_id,player_id,type,amount_minor,currency,reference\n"
                      "w\x1b[31m1,alice\u202e,debit,1000,EUR,bacc-1#1/bc-p\x00\n", encoding="utf-8")
    for argv in (["rejections"], ["rejections", "--json"], ["reconcile", str(wallet)], ["round", "list"],
                 ["recall", "alice"]):
        main([*argv, "--db", store_url])
        captured = capsys.readouterr()
        for name, text in (("stdout", captured.out), ("stderr", captured.err)):
            bad = [char_name(c) for c in text if hostile_at(c, "\n\t") is not None]
            assert not bad, (argv, name, bad)
    main(["rejections", "--db", store_url])
    assert "\\x1b" in capsys.readouterr().out
