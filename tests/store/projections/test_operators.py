"""A simulated studio day dealt to 3 operators whose player ids overlap (`ledger simulate
--operators 3`), on SQLite and PostgreSQL: every operator's GGR adds up to the table's to
the cent; each operator's balances, refunds and wallet movements are exactly those of a
store that ingested only that operator's bets; each operator's DGOJ batch is XSD-valid,
holds only its own players, and its totals are that operator's GGR."""
from __future__ import annotations

import json
from collections import defaultdict
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from domain.operators import DEFAULT_OPERATOR_ID, OperatorScope, player_key, player_of
from ledger.eventlog import EventLog
from ledger.store import open_app
from ops.cli import main
from ops.sim.simulator import Studio, simulated_rule_sets
from projections import queries
from projections.operators import operator_info, operator_list
from projections.reconcile import expected_movements
from projections.runner import Projector
from tests.store.projections.test_dgoj import find_xsd, records

OPERATORS = ("OP1", "OP2", "OP3")
# Baccarat and Teen Patti: every bet settles on its own, so a feed without another operator's
# bets is a legal feed (a blackjack box's cards need its bet); faults that name no player.
RULE_SETS = [r for r in simulated_rule_sets() if r.game in ("baccarat", "teen-patti")]
FAULTS = ("host_interruption", "dealer_error", "early_void", "reversal", "duplicate", "bad_command")


def day_feed() -> list[bytes]:
    studio = Studio(4, 40, seed=5, fault_rate=300, rule_sets=RULE_SETS, fault_kinds=FAULTS, operators=len(OPERATORS))
    return list(studio.lines())


def only(feed: list[bytes], operator_id: str) -> list[bytes]:
    """The feed without the other operators' bets."""
    out = []
    for line in feed:
        data = json.loads(line) if line.startswith(b"{") else None
        if isinstance(data, dict) and data.get("type") == "place_bet" and data.get("operator_id") != operator_id:
            continue
        out.append(line)
    return out


def ingest(url: str, feed: list[bytes]) -> None:
    app = open_app(url)
    try:
        app.ingest(feed)
    finally:
        app.close()


class Views:
    def __init__(self, url: str) -> None:
        self.log = EventLog.open(url)
        self.projector = Projector(self.log)
        self.projector.catch_up()
        self.db = self.projector.db

    def close(self) -> None:
        self.projector.close()
        self.log.close()


@pytest.fixture(scope="module")
def feed() -> list[bytes]:
    return day_feed()


@pytest.fixture
def full(store_url: str, feed: list[bytes]) -> Any:
    ingest(store_url, feed)
    views = Views(store_url)
    yield views
    views.close()


def money(rows: list[Any]) -> dict[tuple[str, str, str], tuple[int, int, int, int, Fraction]]:
    out: dict[tuple[str, str, str], list[Any]] = defaultdict(lambda: [0, 0, 0, 0, Fraction(0)])
    for r in rows:
        t = out[(r.day, r.table_id, r.currency)]
        for i, v in enumerate((r.staked_minor, r.paid_minor, r.refunded_minor, r.ggr_minor)):
            t[i] += v
        t[4] += r.rounding_kept.fraction()
    return {k: tuple(v) for k, v in out.items()}  # type: ignore[misc]


def test_the_feed_names_three_operators_with_overlapping_players(feed: list[bytes]) -> None:
    players: dict[str, set[str]] = defaultdict(set)
    for line in feed:
        data = json.loads(line)
        if data.get("type") == "place_bet":
            players[data["operator_id"]].add(data["player_id"])
    assert set(players) == set(OPERATORS)
    assert players["OP1"] & players["OP2"] & players["OP3"]  # the same ids at three operators


def test_operator_ggr_adds_up_to_the_table_ggr(full: Views) -> None:
    table = money(queries.ggr(full.db).rows)
    shares = [money(queries.ggr(full.db, scope=OperatorScope.of(op)).rows) for op in OPERATORS]
    summed: dict[tuple[str, str, str], list[Any]] = defaultdict(lambda: [0, 0, 0, 0, Fraction(0)])
    for share in shares:
        for key, values in share.items():
            for i, v in enumerate(values):
                summed[key][i] += v
    assert {k: tuple(v) for k, v in summed.items()} == table
    assert all(shares) and sum(v[3] for v in table.values()) != 0
    assert queries.ggr(full.db, scope=OperatorScope.of(DEFAULT_OPERATOR_ID)).rows == []  # no bet names none


def test_each_operator_is_a_store_of_its_own_bets(full: Views, feed: list[bytes], tmp_path: Path) -> None:
    whole = list(full.log.records())
    for op in OPERATORS:
        url = f"sqlite:///{tmp_path / op}.db"
        ingest(url, only(feed, op))
        alone = Views(url)
        try:
            scope = OperatorScope.of(op)
            assert _balances(full.db, scope) == _balances(alone.db, None) != {}
            assert _refunds(full.db, scope) == _refunds(alone.db, None)
            # (sorted: a batch's events are stored by aggregate, so tables interleave differently)
            mine = sorted(_movement(m) for m in expected_movements(whole, scope=scope))
            assert mine == sorted(_movement(m) for m in expected_movements(alone.log.records(), scope=scope))
            assert mine and all(m[2] == player_of(m[2]) for m in mine)  # the operator's own ids
            own = money(queries.ggr(full.db, scope=scope).rows)
            assert own == money(queries.ggr(alone.db, scope=scope).rows)
            assert queries.ggr(alone.db).totals == queries.ggr(full.db, scope=scope).totals
        finally:
            alone.close()


def test_refunds_of_one_operator_name_only_its_players(full: Views) -> None:
    lines = queries.refunds(full.db, scope=OperatorScope.of("OP2")).refunds
    assert lines and {line.player_id.partition("~")[0] for line in lines} == {"OP2"}
    everyone = queries.refunds(full.db).refunds
    assert len(everyone) == sum(len(queries.refunds(full.db, scope=OperatorScope.of(op)).refunds)
                                for op in OPERATORS)


def test_recall_and_rounds_of_one_operators_player(full: Views, feed: list[bytes]) -> None:
    bets = [json.loads(line) for line in feed if b'"place_bet"' in line]
    shared = sorted({b["player_id"] for b in bets if b["operator_id"] == "OP1"}
                    & {b["player_id"] for b in bets if b["operator_id"] == "OP2"})[0]
    key, other = player_key("OP1", shared), player_key("OP2", shared)
    mine = queries.recall(full.db, key, 50)
    theirs = queries.recall(full.db, other, 50)
    assert mine.rounds and theirs.rounds
    assert {r.round_id for r in mine.rounds} != {r.round_id for r in theirs.rounds}
    listed = queries.round_list(full.db, queries.RoundQuery(player=key, scope=OperatorScope.of("OP1")), limit=500)
    assert {r.round_id for r in listed.rounds} >= {r.round_id for r in mine.rounds}


def test_operators_are_listed(full: Views) -> None:
    listed = operator_list(full.db)
    assert [o.operator_id for o in listed] == ["OP1", "OP2", "OP3", DEFAULT_OPERATOR_ID]
    op2 = operator_info(full.db, "OP2")
    assert op2 is not None and op2.current is not None and op2.current.timezone == "Europe/London"
    assert op2.current.currencies == ["EUR"] and op2.current.jurisdictions == ["MT"]
    assert operator_info(full.db, "OP9") is None


def test_dgoj_per_operator(full: Views, store_url: str, tmp_path: Path, capsys: Any) -> None:
    xsd = find_xsd()
    ggr_by_op: dict[str, int] = {}
    players_by_op: dict[str, set[str]] = {}
    for op in OPERATORS:
        out = tmp_path / f"{op}.xml"
        code = main(["export", "dgoj", "--db", store_url, "--operator", op, "--operator-id", "OP01",
                     "--store-id", "ALM1", "--out", str(out), "--json", "--xsd", str(xsd), "--teen-patti", "COM"])
        captured = capsys.readouterr()
        assert code == 0, captured.err
        recs = records(out)
        assert recs
        players_by_op[op] = {r["player"] for r in recs}
        ggr_by_op[op] = sum(r["staked"].get("EUR", 0) - r["won"].get("EUR", 0) - r["refunded"].get("EUR", 0)
                            for r in recs)
        assert all("~" not in p for p in players_by_op[op])
        mine = {player_of(k[0]) for k in full.db.query("SELECT player_id FROM proj_recall")
                if k[0].startswith(op + "~")}
        assert players_by_op[op] == mine  # every player of the operator, and no one else
    for op in OPERATORS:  # the batch's money is the operator's GGR to the cent
        total = queries.ggr(full.db, scope=OperatorScope.of(op)).totals["EUR"]
        assert ggr_by_op[op] == total.staked_minor - total.paid_minor - total.refunded_minor


def _balances(db: Any, scope: OperatorScope | None) -> dict[str, int]:
    found = queries.balances(db, kind="player", scope=scope or OperatorScope())
    return {r.account: r.balance_minor for r in found.accounts}


def _refunds(db: Any, scope: OperatorScope | None) -> list[tuple[str, str, int]]:
    found = queries.refunds(db, scope=scope or OperatorScope())
    return sorted((r.bet_id, r.player_id, r.amount_minor) for r in found.refunds)


def _movement(m: Any) -> tuple[str, str, str, int, str]:
    return (m.type, m.reference, m.player, m.amount_minor, m.time)

