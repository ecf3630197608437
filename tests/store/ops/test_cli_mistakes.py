"""Mistakes caught where they happen (issue 28, item 6), the command line in-process: a file
that is not a feed stops `ingest` at once, `--quiet` is quiet, cut lists say so, `table
list` lists every table seen, one round reference parser for every command, reconcile and
rejections written for people. `ledger serve` and Ctrl-C, as processes: tests/e2e."""
from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from domain.errors import Refusal
from ops.cli import main
from ops.sim.simulator import simulate
from projections import queries

Capsys = pytest.CaptureFixture[str]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A SQLite ledger of a small faulty feed (3 tables, every one only seen in rounds)."""
    d = tmp_path_factory.mktemp("mistakes")
    (d / "feed.jsonl").write_bytes(b"".join(simulate(3, 12, 9, 1000)))
    db = f"sqlite:///{d / 'ledger.db'}"
    assert main(["ingest", str(d / "feed.jsonl"), "--db", db, "--allow-refusals", "--quiet"]) == 0
    return db


def run(capsys: Capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# ------------------------------------------------------------------ round references
@pytest.mark.parametrize("ref", ["T#1000000000000", "bacc-1#x", "bacc-1#\u00b2", "nope", "#3",
                                 "00000000-0000-0000-0000-000000000000"])
def test_one_round_reference_parser_for_round_show_replay_and_http(store: str, capsys: Capsys, ref: str) -> None:
    """`round show` had a parser of its own (at most 12 digits): T#1000000000000 was a usage
    error there and an unknown round in `replay` and GET /v1/rounds/{ref}."""
    try:
        queries.round_ref(ref)
        expected = 1  # well formed: no such round in this store
    except Refusal:
        expected = 2
    shown, _, shown_err = run(capsys, "round", "show", ref, "--db", store)
    replayed, _, replay_err = run(capsys, "replay", ref, "--db", store)
    assert shown == replayed == expected, (shown_err, replay_err)
    if expected == 2:
        assert shown_err.split(": error ")[1] == replay_err.split(": error ")[1]


# ------------------------------------------------------------------ stores made by mistake
def test_consume_refuses_a_sqlite_store_that_does_not_exist(tmp_path: Path, capsys: Capsys) -> None:
    """It would take (and acknowledge) the stream's commands into a new, empty store; checked
    before NATS is asked anything. `ledger serve`: tests/e2e/service/test_serve_process.py."""
    typo = tmp_path / "typo.db"
    code, out, err = run(capsys, "consume", "--db", f"sqlite:///{typo}", "--nats", "nats://127.0.0.1:1")
    assert code == 2 and not out and len(err.splitlines()) == 1, err
    assert err.startswith("ledger consume: error store_missing: ") and "--create" in err
    assert not typo.exists()


@pytest.mark.parametrize("extra", [["--db", "sqlite:///x.db"],
                                   ["--db", "postgresql://postgres@127.0.0.1:1/x", "--partitions", "2"],
                                   ["--db", "postgresql://postgres@127.0.0.1:1/x", "--idle-exit"]])
def test_consume_lease_needs_postgresql_and_no_fixed_partition(extra: list[str], capsys: Capsys) -> None:
    """`--lease`: the leases live in PostgreSQL and the slots are leased, not fixed; said in one
    line before any store or NATS is asked."""
    code, out, err = run(capsys, "consume", "--lease", *extra, "--nats", "nats://127.0.0.1:1")
    assert code == 2 and not out and len(err.splitlines()) == 1, err
    assert err.startswith("ledger consume: error usage: --lease "), err


# ------------------------------------------------------------------ ingest
WALLET = b"transaction_id,type,reference,player,amount_minor,currency,time\nW1,debit,bacc-1-1-b1,p1,500,EUR,x\n"


@pytest.mark.parametrize("content", [WALLET, b"\n  \n" + WALLET, b"[1, 2]\n", b'"text"\n', b"\xff\xfe\x00\n"],
                         ids=["wallet", "blank-lines-first", "array", "string", "binary"])
def test_ingest_stops_at_once_on_a_file_that_is_not_json_lines(tmp_path: Path, capsys: Capsys, content: bytes) -> None:
    """`ledger ingest wallet.csv` stored one "not valid JSON" refusal per line: now one line,
    input_invalid, exit 2, and no store (nothing stored)."""
    path = tmp_path / "wallet.csv"
    path.write_bytes(content)
    code, out, err = run(capsys, "ingest", str(path), "--db", f"sqlite:///{tmp_path / 'l.db'}")
    assert code == 2 and not out and len(err.splitlines()) == 1, err
    assert err.startswith(f"ledger ingest: error input_invalid: {path} is not a feed of JSON lines"), err
    assert not (tmp_path / "l.db").exists()


def test_ingest_from_standard_input_stores_nothing_of_a_file_that_is_not_json_lines(
        tmp_path: Path, capsys: Capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(WALLET)))
    db = f"sqlite:///{tmp_path / 'l.db'}"
    code, _, err = run(capsys, "ingest", "-", "--db", db)
    assert code == 2 and err.startswith("ledger ingest: error input_invalid: standard input is not a feed"), err
    assert run(capsys, "rejections", "--db", db)[:2] == (0, "no rejections\n")  # the store is opened before stdin


def test_ingest_quiet_prints_no_log_line(tmp_path: Path, capsys: Capsys) -> None:
    """--quiet is warnings only: the info line "ingest finished" is gone; the summary (stdout) stays."""
    path = tmp_path / "feed.jsonl"
    path.write_bytes(b"".join(simulate(1, 2, 3, 0)))
    code, out, err = run(capsys, "ingest", str(path), "--db", f"sqlite:///{tmp_path / 'q.db'}", "--quiet")
    assert code == 0 and out.endswith("events recorded\n") and err == "", err
    code, _, err = run(capsys, "ingest", str(path), "--db", f"sqlite:///{tmp_path / 'q.db'}")
    assert code == 0 and "ingest finished" in err  # without --quiet: the summary line at info


# ------------------------------------------------------------------ lists that are cut
def test_rejections_say_when_the_list_is_cut_and_after_pages_on(store: str, capsys: Capsys) -> None:
    """`ledger rejections` stopped at --limit without a word; now a line on stderr names --after."""
    code, out, err = run(capsys, "rejections", "--db", store)
    every = out.splitlines()
    assert code == 0 and len(every) >= 3 and err == ""  # not cut: nothing said
    seen: list[str] = []
    after = "0"
    while True:
        code, out, err = run(capsys, "rejections", "--db", store, "--limit", "2", "--after", after)
        seen += out.splitlines()
        if not err:
            break
        assert err.startswith("2 listed; there are more: --after ") and len(err.splitlines()) == 1, err
        after = err.split("--after ")[1].split()[0]
    assert seen == every
    code, out, err = run(capsys, "rejections", "--db", store, "--limit", "1", "--json")
    first = json.loads(out)
    assert json.loads(err) == {"event": "list_cut", "command": "rejections", "listed": 1, "more": True,
                               "next": f"--after {first['id']} lists the next ones (or a larger --limit)",
                               "after": first["id"]}


def test_round_list_says_when_the_list_is_cut(store: str, capsys: Capsys) -> None:
    code, out, err = run(capsys, "round", "list", "--db", store, "--limit", "2")
    assert code == 0 and len(out.splitlines()) == 4 and err.startswith("2 listed; there are more: a larger --limit")
    assert out.splitlines()[-1].startswith("2 of ")  # the count line
    code, out, err = run(capsys, "round", "list", "--db", store, "--limit", "2", "--json")
    assert len(out.splitlines()) == 2 and json.loads(err)["more"] is True
    code, out, err = run(capsys, "round", "list", "--db", store, "--limit", "1000")
    assert code == 0 and err == "" and len(out.splitlines()) > 3


# ------------------------------------------------------------------ table list
TABLES_EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "examples" / "tables.jsonl"


def test_table_list_lists_every_table_seen(tmp_path: Path, capsys: Capsys) -> None:
    """It said "no table is configured" on a store of live tables: now every table a round was
    played at is listed, marked not configured, beside the configured ones."""
    feed = tmp_path / "feed.jsonl"
    feed.write_bytes(b"".join(simulate(2, 3, 5, 0)))
    db = f"sqlite:///{tmp_path / 't.db'}"
    assert main(["ingest", str(feed), "--db", db, "--quiet"]) == 0
    assert main(["ingest", str(TABLES_EXAMPLE), "--db", db, "--quiet"]) == 0
    capsys.readouterr()
    code, out, err = run(capsys, "table", "list", "--db", db, "--json")
    listed = {t["table_id"]: t for t in map(json.loads, out.splitlines())}
    played = {t: v for t, v in listed.items() if not v["configured"]}
    assert code == 0 and len(played) == 2 and {v["rounds"] for v in played.values()} == {3}
    assert listed["bj-sb-2"]["configured"] and listed["bj-sb-2"]["config_version"] == 2
    assert listed["bj-sb-2"]["rounds"] == 0
    code, out, err = run(capsys, "table", "list", "--db", db)
    rows = out.splitlines()[1:]
    assert code == 0 and err == "" and [r.split()[0] for r in rows] == sorted(listed)
    assert sum("not configured" in r for r in rows) == 2


# ------------------------------------------------------------------ words for people
def test_reconcile_writes_headers_and_details_in_words(tmp_path: Path, capsys: Capsys) -> None:
    """Headers were `miss.wallet`, `rep.txn`; details printed Python lists (['W1-1', 'W1-2'])."""
    from ops.sim.wallet import write_wallet

    feed, wallet = tmp_path / "feed.jsonl", tmp_path / "wallet.csv"
    feed.write_bytes(b"".join(simulate(2, 20, 4, 0)))
    write_wallet(feed, wallet, 6, 4)
    db = f"sqlite:///{tmp_path / 'r.db'}"
    assert main(["ingest", str(feed), "--db", db, "--quiet"]) == 0
    capsys.readouterr()
    code, out, _ = run(capsys, "reconcile", str(wallet), "--db", db)
    top, bottom = out.splitlines()[:2]
    assert code == 1 and "missing" in top and "in wallet" in bottom and "transaction id" in bottom
    assert "miss." not in out and "rep.txn" not in out and "['" not in out and "_ids=" in out  # a duplicate's ids
    assert "missing_in" not in out
