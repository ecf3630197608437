"""`ledger audit replay` over a range, with one and with several worker processes,
on SQLite and PostgreSQL: the same rounds, counts and findings in the same order;
altered payouts are found whichever worker replays their round; the bulk
recompute checks exactly what the single-round replay checks."""
from __future__ import annotations

import json
import threading
from typing import Any
from uuid import UUID

import pytest

from ledger.eventlog import EventLog
from ledger.records import BetPlaced, Opened, Settled, is_round, is_round_topic
from ledger.store import open_app
from ops.cli import main as cli
from ops.cli.commands.audit import replay_all
from ops.sim.simulator import simulate
from projections import replay_range as rr
from projections.replay import recompute
from tests.store.projections.test_audit_store import Store
from tests.support.reference import rounds_in_range, rounds_to_replay

TABLES, ROUNDS, SEED, FAULTS_PER_MILLE = 4, 8, 9, 250


@pytest.fixture
def day(store_url: str) -> tuple[str, Any]:
    app = open_app(store_url)
    app.ingest(simulate(TABLES, ROUNDS, SEED, FAULTS_PER_MILLE))
    return store_url, app


def outcome(summary: dict[str, Any]) -> tuple:
    return (summary["rounds"], summary["events"], summary["bets_checked"],
            [f.as_dict() for f in summary["findings"]], summary["labels"])


def paying_settlements(app: Any) -> list[Any]:
    return [e for e in EventLog(app).records() if isinstance(e, Settled)
            and any(r.returned_minor > 0 for r in e.results)]


def pay_more(state: dict) -> None:
    line = next(r for r in state["results"] if r["returned_minor"] > 0)
    line["returned_minor"] += 500


def test_workers_give_the_same_outcome_as_one_process(day) -> None:
    _, app = day
    one = replay_all(EventLog(app), workers=1)
    round_ids = {e.originator_id for e in EventLog(app).records() if is_round(e)}
    assert one["workers"] == 1 and one["rounds"] == len(round_ids) >= TABLES * ROUNDS and one["findings"] == []
    for workers in (2, 3):
        many = replay_all(EventLog(app), workers=workers)
        assert many["workers"] == workers
        assert outcome(many) == outcome(one)


def test_altered_payouts_are_found_in_every_block_with_workers(day, capsys) -> None:
    """The first and the last paying settlement are altered: with 2 or 3 workers the
    last one lies in a forked worker's block; the findings come back in store order."""
    url, app = day
    settlements = paying_settlements(app)
    first, last = settlements[0], settlements[-1]
    store = Store(app)
    store.edit_state(first.position, pay_more)
    store.edit_state(last.position, pay_more)
    expected = [("payout_differs", first.position), ("payout_differs", last.position)]
    results = {}
    for workers in (1, 2, 3):
        summary = replay_all(EventLog.open(url), workers=workers)
        assert summary["workers"] == workers
        assert [(f.kind, f.position) for f in summary["findings"]] == expected
        results[workers] = outcome(summary)
    assert results[1] == results[2] == results[3]
    opened = next(e for e in EventLog(app).records() if isinstance(e, Opened) and e.originator_id == last.originator_id)
    assert results[2][4][last.position] == f"{opened.table_id}#{opened.round_no}"

    capsys.readouterr()
    assert cli(["audit", "replay", "--db", url, "--quiet", "--workers", "2"]) == 1
    out = capsys.readouterr().out
    assert "2 finding(s)" in out and "with 2 worker(s)" in out
    assert f"payout_differs at position {last.position}" in out


def test_a_failure_inside_a_worker_is_not_swallowed(day, monkeypatch) -> None:
    """Forked workers inherit the process: a recompute that breaks on the last round breaks the audit."""
    _, app = day
    last_round = list(rounds_in_range(EventLog(app)))[-1][0]
    real = recompute

    def breaks_on_last(events, **kw):  # type: ignore[no-untyped-def]
        if events[0].originator_id == last_round:
            raise RuntimeError("model broke on the last round")
        return real(events, **kw)

    monkeypatch.setattr("projections.replay.recompute", breaks_on_last)
    with pytest.raises(RuntimeError, match="last round"):
        replay_all(EventLog(app), workers=2)


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_a_range_replays_every_round_touching_it_with_all_its_events(day) -> None:
    _, app = day
    head = max(e.position for e in EventLog(app).records())
    for start, stop in ((1, None), (head // 3, head // 2), (head, head), (head // 2, None), (1, 5)):
        oracle = list(rounds_in_range(EventLog(app), start, stop))  # the reference grouping (decodes everything)
        rounds = rounds_to_replay(EventLog(app), start, stop)
        assert [str(UUID(r[0][1])) for r in rounds] == [round_id for round_id, _ in oracle]
        assert [[row[0] for row in r] for r in rounds] == [[e.position for e in events] for _, events in oracle]
        summary = replay_all(EventLog(app), start, stop, workers=2)
        assert summary["rounds"] == len(oracle)
        assert summary["events"] == sum(len(events) for _, events in oracle)


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_bulk_recompute_checks_what_the_full_replay_checks(day) -> None:
    _, app = day
    store = Store(app)
    settled = paying_settlements(app)[1]
    store.edit_state(settled.position, pay_more)
    bets = [e for e in EventLog(app).records() if isinstance(e, BetPlaced)]
    store.edit_state(bets[4].position, lambda s: s.update(stake_minor=s["stake_minor"] + 1))
    kinds = set()
    for _, events in rounds_in_range(EventLog(app)):
        full, bulk = recompute(events), recompute(events, views=False)
        assert bulk.steps == [] and len(full.steps) == len(events)
        assert [c.as_dict() for c in bulk.results] == [c.as_dict() for c in full.results]
        assert bulk.findings == full.findings
        kinds |= {f.kind for f in full.findings}
    assert "payout_differs" in kinds and "postings_differ" in kinds


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_default_workers_follow_the_cores_for_a_large_range(day, monkeypatch) -> None:
    _, app = day
    assert replay_all(EventLog(app))["workers"] == 1  # a small store: not worth a fork
    monkeypatch.setattr(rr, "EVENTS_PER_WORKER_MIN", 10)
    monkeypatch.setattr(rr, "default_workers", lambda: 2)
    assert replay_all(EventLog(app))["workers"] == 2
    assert outcome(replay_all(EventLog(app))) == outcome(replay_all(EventLog(app), workers=1))


def test_workers_option_is_checked(capsys) -> None:
    for bad in ("0", "-1", "x", "33"):
        with pytest.raises(SystemExit) as exit_:
            cli(["audit", "replay", "--workers", bad, "--db", "sqlite:///unused.db"])
        assert exit_.value.code == 2


def test_small_chunks_give_the_same_outcome_in_the_same_order(day, monkeypatch) -> None:
    """Rounds are replayed a chunk at a time as they complete (memory stays flat): with tiny
    chunks, one and two workers, the findings still come back in store order."""
    url, app = day
    settlements = paying_settlements(app)
    store = Store(app)
    for s in (settlements[-1], settlements[0], settlements[len(settlements) // 2]):
        store.edit_state(s.position, pay_more)
    whole = replay_all(EventLog.open(url), workers=1)
    assert [f.position for f in whole["findings"]] == sorted(f.position for f in whole["findings"])
    monkeypatch.setattr(rr, "CHUNK_EVENTS", 30)
    monkeypatch.setattr(rr, "POOL_CHUNK_EVENTS", 30)
    monkeypatch.setattr(rr, "POOL_TASKS_PER_WORKER", 1)  # the reader waits on the workers
    for workers in (1, 2):
        assert outcome(replay_all(EventLog.open(url), workers=workers)) == outcome(whole)


def naive_plan(log: EventLog, start: int, stop: int | None) -> list[tuple[int, Any, int, int]]:
    """Every round with an event in [start, stop]: (first, id as stored, events, last), from all rows."""
    seen: dict[Any, list[int]] = {}
    for position, key, _, topic, _ in log.rows(1, 100_000):
        if is_round_topic(topic):
            entry = seen.setdefault(key, [position, 0, 0, 0])
            entry[1:3] = [entry[1] + 1, position]
            entry[3] |= start <= position and (stop is None or position <= stop)
    return [(first, key, n, last) for key, (first, n, last, touching) in seen.items() if touching]


def test_the_plan_is_the_database_count_of_every_round_touching_the_range(day, monkeypatch) -> None:
    _, app = day
    log = EventLog(app)
    head = log.head()
    monkeypatch.setattr(rr, "PLAN_PAGE_SIZE", 7)  # many pages of the plan
    for start, stop in ((1, None), (head // 3, head // 2), (head, head), (head // 2, None), (1, 5), (head + 1, None)):
        assert list(rr.Plan(log, start, stop).spans()) == naive_plan(log, start, stop)


def test_a_replay_holds_the_rounds_in_flight_not_the_rounds_stored(day, monkeypatch) -> None:
    """The plan is read a page at a time beside the rows and a round is held only from its
    first event to its last: with small pages, the rounds held at once stay near the
    tables' count (one round in flight per table, a few more where a round is reversed
    later) while the store holds many times more."""
    _, app = day
    log = EventLog(app)
    monkeypatch.setattr(rr, "PAGE_SIZE", 5)
    monkeypatch.setattr(rr, "PLAN_PAGE_SIZE", 5)
    reads: list[tuple[str, int]] = []  # ("plan" | "rows", rows returned), in call order
    spans, rows = log.round_spans, log.rows
    monkeypatch.setattr(log, "round_spans", lambda *a: reads.append(("plan", len(got := spans(*a)))) or got)
    monkeypatch.setattr(log, "rows", lambda *a: reads.append(("rows", len(got := rows(*a)))) or got)
    plan = rr.Plan(log, 1, None)
    rounds = sum(len(chunk) for chunk in rr._completed_rounds(log, plan, rr.CHUNK_EVENTS, None))
    plan_pages = [n for kind, n in reads if kind == "plan"]
    assert rounds >= TABLES * ROUNDS and max(plan_pages) <= 5 and len(plan_pages) >= rounds // 5
    first_rows = reads.index(("rows", 5))
    assert sum(kind == "plan" for kind, _ in reads[:first_rows]) <= 1  # the plan is not read ahead whole
    assert 1 <= plan.held_max <= TABLES + 2 < rounds // 4


def planned_through(log: EventLog, through: int) -> tuple[int, int]:
    """(rounds, round events) stored at positions up to `through`, counted from the rows alone."""
    rounds: dict[Any, int] = {}
    for position, key, _, topic, _ in log.rows(1, 100_000):
        if position <= through and is_round_topic(topic):
            rounds[key] = rounds.get(key, 0) + 1
    return len(rounds), sum(rounds.values())


def test_a_replay_reads_one_snapshot_while_rounds_gain_events(store_url, monkeypatch) -> None:
    """A writer appends to the rounds in flight between the rows read and the plan's later pages
    (tiny plan pages, so all but the first are read after the rows): the replay covers exactly
    the store up to the head read at its start (its high-water mark), with no finding; without
    the bound, the rounds planned after the write end past the rows read and were dropped."""
    feed = list(simulate(TABLES, ROUNDS, SEED, FAULTS_PER_MILLE))
    cut = len(feed) // 2
    app = open_app(store_url)
    app.ingest(feed[:cut])
    log = EventLog.open(store_url)
    mark = log.head()
    monkeypatch.setattr(rr, "PLAN_PAGE_SIZE", 1)
    rows, written = log.rows, []

    def rows_then_write(*a: Any) -> Any:
        got = rows(*a)
        if not written:
            written.append(app.ingest(feed[cut:]))  # the rest of the day, while the replay reads
        return got

    monkeypatch.setattr(log, "rows", rows_then_write)
    summary = replay_all(log, workers=1)
    assert written and EventLog(app).head() > mark
    assert summary["through"] == mark and summary["findings"] == []
    assert (summary["rounds"], summary["events"]) == planned_through(log, mark)


def test_a_replay_beside_a_concurrent_writer_has_no_finding(store_url, monkeypatch) -> None:
    """A writer thread ingests a day batch by batch while replays run (small pages, so plan and
    rows are read in many transactions): every replay counts the store up to its mark, no finding."""
    feed = list(simulate(TABLES, 2 * ROUNDS, SEED + 1, FAULTS_PER_MILLE))
    app = open_app(store_url)
    app.ingest(feed[:50])
    monkeypatch.setattr(rr, "PAGE_SIZE", 7)
    monkeypatch.setattr(rr, "PLAN_PAGE_SIZE", 3)
    writer = threading.Thread(target=lambda: app.ingest(feed[50:], batch_size=5))
    writer.start()
    replays = []
    try:
        while writer.is_alive() or not replays:
            log = EventLog.open(store_url)
            replays.append((replay_all(log, workers=1), log))
    finally:
        writer.join()
    assert len(replays) >= 2
    for summary, log in replays:
        assert summary["findings"] == []
        assert (summary["rounds"], summary["events"]) == planned_through(log, summary["through"])


def test_audit_replay_reports_its_high_water_mark(day, capsys) -> None:
    url, app = day
    head = EventLog(app).head()
    assert cli(["audit", "replay", "--db", url, "--quiet", "--workers", "1"]) == 0
    assert f"the store as of position {head}: 0 finding(s)" in capsys.readouterr().out
    assert cli(["audit", "replay", "--db", url, "--json", "--quiet"]) == 0
    assert json.loads(capsys.readouterr().out)["through"] == head


def test_a_narrow_range_reads_its_rounds_stretch_not_the_store(day, monkeypatch) -> None:
    """The rows are read from the first planned round's first event and no further than the
    page where the last planned round completes: a dispute's range late (or early) in a large
    store does not read the whole store. The rounds replayed are the reference grouping's."""
    _, app = day
    monkeypatch.setattr(rr, "PAGE_SIZE", 20)
    head = max(e.position for e in EventLog(app).records())
    reads: list[tuple[int, int]] = []
    rows = EventLog.rows

    def counted(self: EventLog, start: int, limit: int) -> list:
        got = rows(self, start, limit)
        reads.append((start, got[-1][0] if got else start))
        return got

    monkeypatch.setattr(EventLog, "rows", counted)
    for start, stop in ((head - 3, head), (1, 5)):
        oracle = list(rounds_in_range(EventLog(app), start, stop))
        reads.clear()
        rounds = rounds_to_replay(EventLog(app), start, stop)
        assert [[row[0] for row in r] for r in rounds] == [[e.position for e in events] for _, events in oracle]
        first = min(events[0].position for _, events in oracle)
        last = max(events[-1].position for _, events in oracle)
        assert reads[0][0] == first  # nothing before the first planned round's first event
        assert reads[-1][0] <= last  # the last page read is the one that completed the last round
    assert last < head - 40  # (1, 5): the early rounds end long before the head, so the test can fail


def configured(lines: list[bytes]) -> list[bytes]:
    """`lines` after a configure_table of each of their tables (before its first round): each
    round then reads its table's configuration in the replay."""
    tables: dict[str, dict[str, Any]] = {}
    for line in lines:
        command = json.loads(line)
        if command["type"] == "open_round":
            tables.setdefault(command["table_id"], command)
    return [json.dumps({"type": "configure_table", "command_id": f"cfg-{t}", "table_id": t,
                        "studio_time": "2026-11-21T11:00:00.000+00:00", "game": c["ruleset_id"].split("/")[0],
                        "ruleset_id": c["ruleset_id"], "ruleset_version": c["ruleset_version"],
                        "currency": c["currency"], "timezone": "UTC"}).encode()
            for t, c in tables.items()] + lines


def test_workers_read_tables_on_connections_of_their_own(store_url: str, monkeypatch) -> None:
    """Rounds at configured tables: each worker reads a table's configuration from the store.
    On the parent's connections (inherited by the fork: on PostgreSQL the same socket as the
    parent's reads) the answers were garbled: `ProgrammingError: the last operation didn't
    produce records` at the first replay with two workers. Small chunks keep the parent reading
    while the workers read their tables."""
    app = open_app(store_url)
    results = list(app.ingest(configured(list(simulate(12, 4, SEED, 0)))))
    assert {r.status for r in results} == {"accepted"}
    log = EventLog.open(store_url)
    one = replay_all(log, workers=1)
    assert one["findings"] == [] and one["rounds"] == 12 * 4
    monkeypatch.setattr(rr, "POOL_CHUNK_EVENTS", 40)
    for workers in (2, 3, 2, 3):
        assert outcome(replay_all(log, workers=workers)) == outcome(one)
