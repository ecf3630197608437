"""Mistakes caught where they happen (issue 28, item 6), the command line in-process: a file
that is not a feed stops `ingest` at once, `--quiet` is quiet, cut lists say so, `table
list` lists every table seen, one round reference parser for every command, reconcile and
rejections written for people. `ledger serve` and Ctrl-C, as processes: tests/e2e."""
from __future__ import annotations

import json
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
    (d / "feed.jsonl").write_bytes(b"".join(simulate(3, 6, 9, 300)))
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
