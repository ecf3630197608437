"""NATS JetStream intake against a real nats-server (a private one per test, on a free
port): a consumer SIGKILLed between commit and ack, then restarted, and two partitions in
two processes both end in the state of one clean ingest; results and publisher dedup."""
from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import uuid

import nats
import pytest

from ledger import logging as ledger_logging
from ledger.store import open_app
from ops.jetstream.intake import NATS_URL_DEFAULT, Consumer, publish, token_for
from ops.service.committer import partition_of
from tests.e2e.service.conftest import feed, round_events, second_store

CONSUME = [sys.executable, "-m", "ops.cli", "consume"]


@pytest.fixture(autouse=True)
def _log_to_this_tests_stderr() -> None:
    """The in-process consumers log; `ledger.logging.configure` binds the sys.stderr of when it
    ran, which, after a test with capsys in the same worker (test_fast_path), is a closed file:
    the consumer then died with "I/O operation on closed file" (order-dependent, seen in an xdist run)."""
    ledger_logging.configure()


def state(db_url: str, lines: list[bytes]) -> tuple[object, ...]:
    """Round events, the command index and the rejections log: what must match a clean ingest."""
    ids = [json.loads(x)["command_id"] for x in lines if x.startswith(b"{") and b'"command_id"' in x]
    app = open_app(db_url)
    try:
        known = sorted(app.ledger_recorder().select_commands(ids).items())
        rejected = sorted((r["command_id"] or "", r["code"]) for r in app.rejections(limit=100_000))
    finally:
        app.close()
    return round_events(db_url, lines), known, rejected


def clean_state(lines: list[bytes], store_url: str, tmp_path, request) -> tuple[object, ...]:
    url = second_store(store_url, tmp_path, request)
    app = open_app(url)
    try:
        app.ingest(lines)
    finally:
        app.close()
    return state(url, lines)


def consume(db: str, nats_url: str, *extra: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    # --create: these consumers start on a fresh store on purpose
    return subprocess.Popen([*CONSUME, "--db", db, "--create", "--nats", nats_url, "--ack-wait-s", "1", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})})


def finished(proc: subprocess.Popen) -> dict[str, int]:
    """The consumer's closing summary line (its standard error in the failure message otherwise)."""
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and out.strip(), err[-3000:]
    return json.loads(out.splitlines()[-1])


def stored_tables(lines: list[bytes]) -> list[str]:
    """The table of each line the stream stores (the feed's resends of a command, same payload, are
    dropped by the duplicate window)."""
    seen: set[bytes] = set()
    tables = []
    for line in lines:
        data = json.loads(line)
        key = json.dumps(data, sort_keys=True).encode()
        if key not in seen:
            seen.add(key)
            tables.append(data.get("table_id") or "_")
    return tables


def test_sigkill_between_commit_and_ack_then_restart(store_url, nats_url, tmp_path, request):
    lines = feed(tables=5, rounds=3)
    published = asyncio.run(publish(lines, nats_url))["published"]
    assert published < len(lines)  # the feed's own redeliveries (same command id) are dropped
    crashed = consume(store_url, nats_url, "--batch", "40", env={"LEDGER_TEST_KILL_AFTER_BATCH": "2"})
    crashed.communicate(timeout=120)
    assert crashed.returncode == -signal.SIGKILL
    app = open_app(store_url)
    try:  # batches 1 and 2 are committed; batch 2 was never acked
        assert len(app.ledger_recorder().select_commands([json.loads(x)["command_id"] for x in lines])) >= 40
    finally:
        app.close()
    again = consume(store_url, nats_url, "--batch", "40", "--idle-exit")
    assert finished(again)["commands"] == published - 40  # batch 2 came again, batch 1 did not
    assert state(store_url, lines) == clean_state(lines, store_url, tmp_path, request)


def test_two_partitions_in_two_processes(store_url, nats_url, tmp_path, request):
    lines = feed(tables=6, rounds=2)
    asyncio.run(publish(lines, nats_url))
    procs = [consume(store_url, nats_url, "--partitions", "2", "--partition", str(i), "--batch", "50", "--idle-exit")
             for i in (0, 1)]
    outs = [finished(p) for p in procs]
    shares = [sum(1 for t in stored_tables(lines) if partition_of(t, 2) == i) for i in (0, 1)]
    assert [o["commands"] for o in outs] == shares and all(shares)  # each wrote its own share only
    assert state(store_url, lines) == clean_state(lines, store_url, tmp_path, request)


def test_results_published_and_publisher_dedup_on_the_shared_server(tmp_path):
    """On the machine's own nats-server (127.0.0.1:4222, started by ops/deploy/test-services.sh), in a stream and
    subject prefix of this test's own, deleted afterwards."""
    lines = feed(tables=5, rounds=1, fault_rate=0)
    db = f"sqlite:///{tmp_path / 'r.db'}"
    url, stream, prefix = NATS_URL_DEFAULT, f"T_{uuid.uuid4().hex[:12]}", f"t{uuid.uuid4().hex[:12]}"

    async def run() -> tuple[dict[str, int], dict[str, int], list[dict]]:
        first = await publish(lines, url, stream, prefix)
        second = await publish(lines, url, stream, prefix)  # a publisher's resend: dropped by the duplicate window
        nc = await nats.connect(url)
        got: list[dict] = []

        async def on_result(msg) -> None:
            got.append({"subject": msg.subject, **json.loads(msg.data)})

        await nc.subscribe(f"{prefix}.results.>", cb=on_result)
        app = open_app(db)
        try:
            await Consumer(app, nats_url=url, stream=stream, prefix=prefix, batch=25).run(
                idle_exit=True, fetch_timeout_s=0.2)
        finally:
            app.close()
            await nc.flush()
            await nc.jetstream().delete_stream(stream)
            await nc.drain()
        return first, second, got

    first, second, got = asyncio.run(run())
    assert first == {"published": len(lines), "duplicate": 0, "conflict": 0}
    assert second == {"published": 0, "duplicate": len(lines), "conflict": 0}
    assert len(got) == len(lines) and {r["status"] for r in got} == {"accepted"}
    table = json.loads(lines[0])["table_id"]
    assert got[0]["subject"] == f"{prefix}.results.{token_for(table)}" and got[0]["command_id"] == json.loads(lines[0])["command_id"]


def test_subject_tokens():
    assert token_for("bj-live-1") == "bj-live-1"
    assert token_for("a.b*c>d #e") == "a%2Eb%2Ac%3Ed%20%23e"
    assert token_for(None) == "_"


def test_sigterm_finishes_the_batch_then_a_restart_completes(nats_url, tmp_path, request):
    """On SQLite only (the crash tests above cover both stores; this one is about the signal)."""
    store_url = f"sqlite:///{tmp_path / 'term.db'}"
    lines = feed(tables=5, rounds=2)
    asyncio.run(publish(lines, nats_url))
    ids = [json.loads(x)["command_id"] for x in lines]
    proc = consume(store_url, nats_url, "--batch", "20")
    app = open_app(store_url)
    try:
        while len(app.ledger_recorder().select_commands(ids)) < 20:  # until a batch has landed
            assert proc.poll() is None
            time.sleep(0.05)
    finally:
        app.close()
    proc.send_signal(signal.SIGTERM)
    stopped = finished(proc)  # exit 0 with its summary: the batch in hand was committed and acked
    again = finished(consume(store_url, nats_url, "--batch", "20", "--idle-exit"))
    assert stopped["commands"] >= 20 and stopped["commands"] + again["commands"] >= len(set(ids))
    assert state(store_url, lines) == clean_state(lines, store_url, tmp_path, request)


def test_each_consumer_receives_only_its_partitions_messages(nats_url, tmp_path):
    """Issue 19: every partition's consumer read the whole stream (and acked the others'), so
    two consumers did the reading of two. Each must be handed its own tables' messages only."""
    lines = feed(tables=8, rounds=2, fault_rate=0)
    received: dict[int, list[str]] = {}

    class Spy(Consumer):
        async def _fetch(self, sub, timeout_s):  # type: ignore[no-untyped-def]
            msgs = await super()._fetch(sub, timeout_s)
            received.setdefault(self.partition, []).extend(json.loads(m.data)["table_id"] for m in msgs or [])
            return msgs

    async def run(partitions: int) -> None:
        # A stream per layout (a new layout starts where the old one's consumers are).
        stream, prefix = f"FEED{partitions}", f"p{partitions}"
        await publish(lines, nats_url, stream, prefix)
        for i in range(partitions):
            app = open_app(f"sqlite:///{tmp_path / f'p{partitions}-{i}.db'}")
            try:
                await Spy(app, nats_url=nats_url, stream=stream, prefix=prefix, partitions=partitions, partition=i,
                          batch=30).run(
                    idle_exit=True, fetch_timeout_s=0.2)
            finally:
                app.close()

    for n in (2, 4):
        received.clear()
        asyncio.run(run(n))
        tables = [json.loads(x)["table_id"] for x in lines]
        for i in range(n):
            mine = [t for t in tables if partition_of(t, n) == i]
            assert received.get(i, []) == mine, f"partition {i} of {n}"  # all its messages, in order, no other
        assert sum(len(v) for v in received.values()) == len(lines)


def test_publish_a_reused_command_id_with_another_payload_is_a_conflict(store_url, nats_url, tmp_path, request):
    """Issue 19: the Nats-Msg-Id was the command id alone, so the duplicate window dropped a different
    command sent under a used id and `ledger publish` called it a duplicate, where `ledger ingest`
    refuses it command_id_conflict. It must reach the ledger and be refused the same way."""
    lines = feed(tables=2, rounds=1, fault_rate=0)
    bet = next(x for x in lines if b'"place_bet"' in x)
    other = json.loads(bet)
    other["stake_minor"] += 100  # same command id, another payload
    same = json.dumps(json.loads(bet), indent=1).encode().replace(b"\n", b"")  # same command, other spacing
    lines = [*lines, json.dumps(other).encode(), same]
    path = tmp_path / "feed.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    out = subprocess.run([sys.executable, "-m", "ops.cli", "publish", str(path), "--nats", nats_url],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 1 and "command_id_conflict" in out.stderr and len(out.stderr.splitlines()) == 1
    assert json.loads(out.stdout) == {"published": len(lines) - 1, "duplicate": 1, "conflict": 1}
    finished(consume(store_url, nats_url, "--idle-exit"))
    codes = dict(state(store_url, lines)[2])
    assert codes[other["command_id"]] == "command_id_conflict"
    assert state(store_url, lines) == clean_state(lines, store_url, tmp_path, request)


def test_publish_and_consume_refuse_bad_arguments_in_one_line(tmp_path, nats_url):
    missing = subprocess.run([sys.executable, "-m", "ops.cli", "publish", str(tmp_path / "nope.jsonl"),
                              "--nats", nats_url], capture_output=True, text=True, timeout=60)
    three = subprocess.run([*CONSUME, "--nats", nats_url, "--partitions", "3", "--db",
                            f"sqlite:///{tmp_path / 'x.db'}"], capture_output=True, text=True, timeout=60)
    for done in (missing, three):
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "power of two" in three.stderr


def test_changing_n_starts_where_the_old_layout_had_committed(nats_url, tmp_path):
    """1 consumer, then 2: the new durables start after what the old one acked (nothing replayed),
    and a restart before any ack starts where the durable was made, not at the stream's start."""
    lines = feed(tables=8, rounds=2, fault_rate=0)
    first, later = lines[:150], lines[150:]
    db = f"sqlite:///{tmp_path / 'n.db'}"

    async def consume_all(partitions: int) -> list[int]:
        app = open_app(db)
        try:
            return [(await Consumer(app, nats_url=nats_url, partitions=partitions, partition=i, batch=40).run(
                idle_exit=True, fetch_timeout_s=0.2)).commands for i in range(partitions)]
        finally:
            app.close()

    async def run() -> tuple[list[int], list[int], list[int]]:
        await publish(first, nats_url)
        one = await consume_all(1)
        await publish(later, nats_url)
        return one, await consume_all(2), await consume_all(2)

    one, two, again = asyncio.run(run())
    tables = [json.loads(x)["table_id"] for x in later]
    assert one == [len(first)]
    assert two == [sum(1 for t in tables if partition_of(t, 2) == i) for i in (0, 1)]
    assert again == [0, 0]


def test_hostile_text_through_jetstream_is_refused_as_ingest_refuses_it(store_url, nats_url, tmp_path, request):
    """Issue 27: text is checked where it enters, JetStream included: a NUL note, a command id
    with CR LF (never put into a NATS header) and a lone surrogate are refused text_invalid,
    and the store ends as `ledger ingest` leaves it."""
    lines = feed(tables=1, rounds=1, fault_rate=0)
    opened = json.loads(next(x for x in lines if b'"open_round"' in x))
    base = {k: opened[k] for k in ("table_id", "round_no", "studio_time")}
    hostile = [
        {**base, "type": "void", "command_id": "h-1", "cause": "human_error", "by": "sup", "note": "a\u0000b"},
        {**base, "type": "void", "command_id": "h-2\r\nNats-Msg-Id: x", "cause": "human_error", "by": "sup"},
        {**base, "type": "void", "command_id": "h-3", "cause": "human_error", "by": "sup", "note": "a\ud800"},
    ]
    lines = [*lines, *(json.dumps(h).encode() for h in hostile)]
    path = tmp_path / "feed.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    out = subprocess.run([sys.executable, "-m", "ops.cli", "publish", str(path), "--nats", nats_url],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    finished(consume(store_url, nats_url, "--idle-exit"))
    rejected = state(store_url, lines)[2]
    assert [code for _, code in rejected] == ["text_invalid"] * 3
    assert state(store_url, lines) == clean_state(lines, store_url, tmp_path, request)


def test_a_bet_waits_for_its_operators_configuration_on_another_partition(nats_url, tmp_path):
    """Issue 30: a configure_operator names no table, so it goes to the `_` table's partition (1 of
    2) while bacc-1's bets go to partition 0. Started first, consumer 0 committed every bet before
    consumer 1 had committed the configurations: each bet of OP1/OP2 refused unknown_operator,
    where the feed (and `ledger ingest --workers`) has them configured first. It must wait for them."""
    from ops.sim.simulator import Studio

    lines = [x for x in Studio(3, 2, seed=3, operators=2).lines() if b"configure_operator" in x or b'"bacc-1"' in x]
    assert partition_of("_", 2) == 1 and partition_of("bacc-1", 2) == 0
    db, clean = f"sqlite:///{tmp_path / 'js.db'}", f"sqlite:///{tmp_path / 'clean.db'}"
    app = open_app(clean)
    try:
        app.ingest(lines)
    finally:
        app.close()

    async def run() -> None:
        await publish(lines, nats_url)
        apps = [open_app(db) for _ in range(2)]
        try:
            first, second = (Consumer(a, nats_url=nats_url, partitions=2, partition=i, batch=50)
                             for i, a in enumerate(apps))
            bets = asyncio.create_task(first.run(idle_exit=True, fetch_timeout_s=0.2))
            waits = asyncio.create_task(first.waiting.wait())
            done, _ = await asyncio.wait({bets, waits}, timeout=60, return_when=asyncio.FIRST_COMPLETED)
            assert waits in done, "consumer 0 committed its bets before their operators' configurations"
            await second.run(idle_exit=True, fetch_timeout_s=0.2)
            assert (await bets).barrier_waits == 1
        finally:
            for a in apps:
                a.close()

    asyncio.run(run())
    assert state(db, lines) == state(clean, lines)
    assert "unknown_operator" not in {code for _, code in state(db, lines)[2]}
