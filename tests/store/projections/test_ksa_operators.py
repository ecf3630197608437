"""`ledger export ksa --operator` over a simulated week dealt to 3 operators whose player ids
overlap (the simulator's `--operators 3`, with its voids and settlement reversals), on SQLite
and PostgreSQL: each operator's batches are XSD-valid, every manifest's signature verifies
with `xmlsec1` and the operator's own chain verifies from its first batch; a batch holds only
that operator's transactions and players (by the player's own id); and per operator stakes -
winnings - refunds equal `ledger ggr --operator` to the cent, after a settlement reversed and
voided too."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from domain.operators import operator_of, player_of
from ledger.eventlog import EventLog
from ops.sim.operators import with_operators
from projections import ksa
from projections.runner import Projector
from tests.store.projections.test_ksa import (
    assert_valid,
    batches,
    export,
    fold,
    ggr,
    money,
    reverse_and_void_a_round,
    verify,
    xmlsec1_verifies,
)
from tests.support.ksa_week import Party, ingested, make_parties, week_feed

OPERATORS = ("OP1", "OP2", "OP3")
TYPES = ("STAKE", "WINNING", "VOID_STAKE")


@pytest.fixture(scope="module")
def parties(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Party]:
    return make_parties(tmp_path_factory.mktemp("keys"))


@pytest.fixture(scope="module")
def feed() -> list[bytes]:
    return list(with_operators(week_feed(), len(OPERATORS), seed=7))  # test_ksa's week, dealt to three


@pytest.fixture
def week(store_url: str, feed: list[bytes]) -> str:
    return ingested(store_url, feed)


def plays(url: str) -> dict[str, set[tuple[str, str]]]:
    """operator -> its (round id, player key) pairs, from the recall view."""
    log = EventLog.open(url)
    p = Projector(log)
    try:
        p.catch_up()
        rows = p.db.query("SELECT round_id, player_id FROM proj_recall")
    finally:
        p.close()
        log.close()
    out: dict[str, set[tuple[str, str]]] = {}
    for round_id, key in rows:
        out.setdefault(operator_of(str(key)), set()).add((str(round_id), str(key)))
    return out


def tx_ids(pairs: set[tuple[str, str]]) -> set[str]:
    return {ksa.uid(f"tx/{r}/{key}/{t}") for r, key in pairs for t in TYPES}


def profiles(out: Path) -> set[str]:
    """Every Player_Profile_ID in the batches (transactions and sessions' listed ones)."""
    return {str(e.text) for _, _, root in batches(out) for e in root.iter("Player_Profile_ID")}


def check(out: Path, op: str, url: str, mine: dict[str, set[tuple[str, str]]], parties: dict[str, Party],
          capsys: pytest.CaptureFixture[str], new: list[str]) -> None:
    """The operator's folder after a run: all of it folded, to its GGR, only its own; the run's
    `new` batches (the earlier ones were checked after their run) valid and signed; the chain whole."""
    state, _, _ = fold(out)
    assert money(state) == ggr(url, capsys, "--operator", op)  # to the cent
    own, others = tx_ids(mine[op]), set().union(*(tx_ids(p) for o, p in mine.items() if o != op))
    assert set(state) <= own and not set(state) & others  # only its own players' transactions
    assert profiles(out) == {player_of(key) for _, key in mine[op]}  # by the player's own id
    if new:
        assert_valid(out, since=int(new[0][4:10]))
    assert all(xmlsec1_verifies(out / m, parties["operator"].cert) for m in new)
    assert verify(out, capsys, "--signing-cert", str(parties["operator"].cert)) == (0, [])


def test_each_operator_exports_its_own_players_signed_chained_and_equal_to_its_ggr(
        week: str, tmp_path: Path, parties: dict[str, Party], capsys: Any) -> None:
    mine = plays(week)
    assert set(mine) == set(OPERATORS)
    shared = set.intersection(*({player_of(k) for _, k in mine[op]} for op in OPERATORS))
    assert shared  # the same player ids at three operators: only the key tells them apart
    first: dict[str, dict[str, Any]] = {}
    for op in OPERATORS:
        first[op] = export(week, tmp_path / op, parties, capsys, "--operator", op)
        assert first[op]["operator"] == op and first[op]["batches"][0] == "ksa-000001.manifest.xml"
        assert first[op]["money_minor"]["VOID_STAKE"] > 0  # the week's voids are there
        check(tmp_path / op, op, week, mine, parties, capsys, first[op]["batches"])
    # The default operator (no bet names none) has nothing to send: no batch, no chain.
    assert export(week, tmp_path / "default", parties, capsys)["batches"] == []
    # A reversal then void after the export: the next run of each operator with a player in the
    # round chains on (cancels the winnings it sent, sends the refunds); the others send nothing.
    round_id, paid = reverse_and_void_a_round(week)
    touched = {op for op, pairs in mine.items() if any(r == round_id for r, _ in pairs)}  # its players' (refunds)
    assert {operator_of(p) for p in paid} <= touched
    cancelled = 0
    for op in OPERATORS:
        again = export(week, tmp_path / op, parties, capsys, "--operator", op)
        if op in touched:
            assert again["cancellations"] == sum(operator_of(p) == op for p in paid)  # its players' winnings
            cancelled += again["cancellations"]
            assert again["batches"][0] == f"ksa-{len(first[op]['batches']) + 1:06d}.manifest.xml"
        else:
            assert again["batches"] == []
        check(tmp_path / op, op, week, mine, parties, capsys, again["batches"])
    assert cancelled == len(paid) > 0
