"""The RTP and integrity monitor end to end on a store: simulate -> `ledger ingest` -> the
`monitor` views -> `ledger monitor --json` (the statistics and the exact math on their own,
without a store, are in tests/unit/projections/test_monitor.py and test_monitor_deals.py)."""
from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ops.cli import main
from ops.sim.simulator import Studio, simulated_rule_sets
from projections.monitor_deal import NOT_PLAYED_OUT
from tests.support.module_store import KINDS, module_store
from tests.support.monitor_sim import rule_sets

BIASED = "bacc-1"


def _feed(path: Any, rounds: int, *, biased: frozenset[str], fault_rate: int) -> None:
    studio = Studio(2, rounds, 5, fault_rate, rule_sets=rule_sets(("baccarat/live-8d", "teen-patti/20-20")),
                    biased_tables=biased)
    path.write_bytes(b"".join(studio.lines()))


def _monitor(db: str, *args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[dict[str, Any]]]:
    capsys.readouterr()
    code = main(["monitor", "--db", db, "--json", *args])
    return code, [json.loads(line) for line in capsys.readouterr().out.splitlines()]


@pytest.fixture(scope="module", params=KINDS)
def biased_store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A studio with a biased baccarat table, faults on, through `ledger ingest`, once per store
    kind for the module's tests (they only read it)."""
    feed = tmp_path_factory.mktemp("feed") / "feed.jsonl"
    _feed(feed, 200, biased=frozenset({BIASED}), fault_rate=60)
    with module_store(request.param, tmp_path_factory) as url:
        assert main(["ingest", str(feed), "--db", url]) in (0, 1)  # the faults are refused on purpose
        yield url


def test_ledger_monitor_flags_the_biased_table_end_to_end(biased_store: str,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    store_url = biased_store
    code, flagged = _monitor(store_url, capsys=capsys)
    assert code == 1
    assert {f["table_id"] for f in flagged if f["level"] == "table"} == {BIASED}
    assert all(f["flagged"] and f["table_id"] in (BIASED, None) for f in flagged), flagged
    code, every = _monitor(store_url, "--all", capsys=capsys)
    assert code == 1 and {"table_id", "dealer_id", "bet_type", "p_value", "flagged"} <= set(every[0])
    assert any(f["table_id"] == "tp-1" and not f["flagged"] for f in every)
    _check_view_against_ggr(store_url)


PLAY_DAY, NEXT_DAY = "2026-11-21", "2026-11-22"  # the simulator's studio day (ops/sim/core.py EPOCH)


def test_a_play_day_checked_after_a_later_ingest_flags_the_rigged_table(
        biased_store: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 28: a compliance officer checks the day a rigged table was played, on a store
    ingested days later. The days are gaming days of play, as `ledger ggr` has them (it
    found "0 tests ... 0 flagged", exit 0, counting the day of ingest); a day without play
    says so, and so does a day nothing was recorded for yet."""
    store_url = biased_store  # ingested today (the recorded day), played on the simulator's day
    recorded_day = datetime.now(UTC).date()
    assert recorded_day.isoformat() != PLAY_DAY  # ingested later: the recorded day is another
    code, flagged = _monitor(store_url, "--since", PLAY_DAY, "--until", NEXT_DAY, capsys=capsys)
    assert code == 1
    assert {f["table_id"] for f in flagged if f["level"] == "table"} == {BIASED}
    capsys.readouterr()
    assert main(["ggr", "--db", store_url, "--json"]) == 0
    assert {r["day"] for r in json.loads(capsys.readouterr().out)["rows"]} == {PLAY_DAY}

    code, lines = _monitor(store_url, "--since", NEXT_DAY, "--until", "2026-11-23", capsys=capsys)
    assert code == 0 and [(x["level"], x["reason"]) for x in lines] == [("empty_period", "no_play")]
    assert "no play on those gaming days (2026-11-22" in lines[0]["message"]
    later = (recorded_day + timedelta(days=2)).isoformat()
    code, lines = _monitor(store_url, "--since", later, capsys=capsys)
    assert code == 0 and [(x["level"], x["reason"]) for x in lines] == [("empty_period", "nothing_recorded")]
    capsys.readouterr()
    assert main(["monitor", "--db", store_url, "--since", later]) == 0
    text = capsys.readouterr().out
    assert text.startswith("0 tests") and "nothing tested: nothing recorded yet: the store's last event was " \
        f"recorded at {recorded_day.isoformat()}" in text


def _check_view_against_ggr(store_url: str) -> None:
    """The view's money equals the `ggr` view's (voids, reversals and resettlements
    included), and its void counts equal the rounds' statuses."""
    from ops.cli.options import open_views

    with open_views(store_url) as views:
        q = views.db.query
        mine = {t: (s, r) for t, s, r in q(
            "SELECT table_id, SUM(staked_minor), SUM(returned_minor) FROM proj_monitor GROUP BY table_id")}
        ggr = {t: (s - f, p) for t, s, f, p in q(
            "SELECT table_id, SUM(staked_minor), SUM(refunded_minor), SUM(paid_minor) FROM proj_ggr GROUP BY table_id")}
        voided = dict(q("SELECT table_id, COUNT(*) FROM proj_rounds WHERE status='voided' AND table_id IS NOT NULL "
                        "GROUP BY table_id"))
        ops = {t: (n, v, h) for t, n, v, h in q(
            "SELECT table_id, SUM(rounds), SUM(voided), SUM(human_errors) FROM proj_monitor_ops GROUP BY table_id")}
        opened = q("SELECT COUNT(*) FROM proj_rounds WHERE table_id IS NOT NULL")[0][0]
        reversed_rounds = q("SELECT COUNT(*) FROM proj_ggr_settlements WHERE reversed_period IS NOT NULL")[0][0]
    assert mine == ggr
    assert {t: v for t, (_, v, _) in ops.items() if v} == voided
    assert sum(n for n, _, _ in ops.values()) == opened
    assert reversed_rounds > 0 and sum(h for _, _, h in ops.values()) > 0  # the feed exercised both


def test_ledger_monitor_passes_a_fair_studio_and_says_when_it_cannot_run(
        tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    feed, db = tmp_path / "feed.jsonl", f"sqlite:///{tmp_path / 'fair.db'}"
    _feed(feed, 120, biased=frozenset(), fault_rate=0)
    assert main(["ingest", str(feed), "--db", db]) == 0
    code, flagged = _monitor(db, capsys=capsys)
    assert (code, flagged) == (0, [])
    with pytest.raises(SystemExit) as stop:  # a bad option value: argparse's way out
        main(["monitor", "--db", db, "--alpha", "1.5"])
    assert stop.value.code == 2 and capsys.readouterr().err.startswith("ledger monitor: error usage: ")
    assert main(["monitor", "--db", "postgresql://nobody@127.0.0.1:1/none"]) == 2


def test_ledger_monitor_flags_rigged_blackjack_tables_end_to_end(tmp_path: Any,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """simulate (the three blackjack rule sets, faults in the feed) -> ledger ingest -> the view ->
    ledger monitor --json: exactly the two rigged tables are flagged, exit 1; every table is tested."""
    feed, db = tmp_path / "feed.jsonl", f"sqlite:///{tmp_path / 'monitor.db'}"
    rigged = frozenset({"bj-spielbank-1", "bj-tour-1"})
    blackjack = [r for r in simulated_rule_sets() if r.game == "blackjack"]
    # 120 rounds a table: the rigged tables' dealer busts at p < 1e-4 (this seed), the fair one not flagged
    feed.write_bytes(b"".join(Studio(3, 120, 4, 40, rule_sets=blackjack, biased_tables=rigged).lines()))
    assert main(["ingest", str(feed), "--db", db]) in (0, 1)  # the faults are refused on purpose
    capsys.readouterr()
    code = main(["monitor", "--db", db, "--json", "--all"])
    every = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == 1
    flagged_tables = {f["table_id"] for f in every if f["flagged"] and f["table_id"] is not None}
    assert flagged_tables == rigged, [f for f in every if f["flagged"]]
    assert not [f for f in every if f["level"] == "untested"]
    tested = {f["table_id"] for f in every if f["level"] in ("up_card", "dealer_bust")} - {None}
    assert tested == {"bj-live-1", "bj-spielbank-1", "bj-tour-1"}
    from ops.cli.options import open_views

    with open_views(db) as views:  # every settled blackjack round counted once, dealer outcomes in range
        q = views.db.query
        counted = dict(q("SELECT table_id, SUM(rounds) FROM proj_monitor_deals GROUP BY table_id"))
        outcomes = {o for (o,) in q("SELECT DISTINCT outcome FROM proj_monitor_deals")}
        settled = dict(q("SELECT table_id, COUNT(*) FROM proj_ggr_settlements WHERE settlement_no = 1 "
                         "AND table_id LIKE 'bj-%' GROUP BY table_id"))
    assert outcomes <= {"bust", "17", "18", "19", "20", "21", "blackjack", NOT_PLAYED_OUT}
    assert counted == settled
