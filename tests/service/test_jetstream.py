"""NATS JetStream intake against a real nats-server (a private one per test, on a free
port): a consumer SIGKILLed between commit and ack, then restarted, and two partitions in
two processes both end in the state of one clean ingest; results and publisher dedup."""
from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator

import nats
import pytest

from ledger.store import open_app
from ops.jetstream.intake import NATS_URL_DEFAULT, Consumer, publish, token_for
from tests.service.conftest import feed, free_port, round_events, second_store

CONSUME = [sys.executable, "-m", "ops.cli", "consume"]


@pytest.fixture
def nats_url(tmp_path) -> Iterator[str]:
    binary = shutil.which("nats-server") or "/usr/sbin/nats-server"
    port = free_port()
    proc = subprocess.Popen([binary, "-js", "-a", "127.0.0.1", "-p", str(port), "-sd", str(tmp_path / "js")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while True:  # no skip: a missing or broken nats-server fails the test here
            assert proc.poll() is None, "nats-server exited"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        yield f"nats://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


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
    return subprocess.Popen([*CONSUME, "--db", db, "--nats", nats_url, "--ack-wait-s", "1", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})})


def finished(proc: subprocess.Popen) -> dict[str, int]:
    """The consumer's closing summary line (its standard error in the failure message otherwise)."""
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and out.strip(), err[-3000:]
    return json.loads(out.splitlines()[-1])


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
    assert all(o["commands"] > 0 and o["skipped"] > 0 for o in outs)  # each wrote its own share only
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
    assert first == {"published": len(lines), "duplicate": 0} and second == {"published": 0, "duplicate": len(lines)}
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
