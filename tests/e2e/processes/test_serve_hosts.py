"""Two `ledger serve` hosts on one PostgreSQL store, as behind a load balancer (issue 33 item 4):
two processes with nothing shared but the store (no lock directory in common, each its own
cache of rounds), every table's commands alternating between them, one command per request.
Every decision is checked against the store in the transaction that records it
(docs/scaling.md), so each answer is what `ledger ingest` gives for the same feed. One host is
killed (SIGKILL) mid-run; each table resends what got no answer to the other host, and then:
the answers (a resent command that the killed host had committed answers `duplicate` of
what ingest answered) and the store equal a clean ingest."""
from __future__ import annotations

import http.client
import random
import threading
import time
from typing import Any

import pytest

from tests.e2e.processes.test_serve_workers import START_S, Served, assert_store_as_ingest, by_table, post_one
from tests.e2e.service.conftest import cli_results, feed, make_keys
from tests.e2e.service.conftest import pg_schema_url_2 as pg_schema_url_2  # the fixture

pytestmark = pytest.mark.postgres


class Table:
    """A table's game server: its commands in order, each after the previous one's answer, the
    n-th to host (n + offset) % 2; once a host is gone (no answer), everything to the other one,
    starting with the command that got no answer."""

    def __init__(self, lines: list[bytes], expected: list[dict[str, Any]], offset: int) -> None:
        self.lines, self.expected, self.offset = lines, expected, offset  # expected: ingest's answers
        self.answers: list[dict[str, Any]] = []
        self.resent: set[int] = set()  # the commands sent again after a host gave no answer

    def run(self, urls: list[str], key: str, dead: set[int]) -> None:
        for n in range(len(self.lines)):
            host = (n + self.offset) % 2
            while True:
                if host in dead:
                    host = 1 - host
                try:
                    self.answers.append(post_one(urls[host], key, self.lines[n]))
                    break
                except (OSError, http.client.HTTPException):
                    dead.add(host)  # gone: this command again, to the other host
                    self.resent.add(n)


def test_two_hosts_alternating_one_killed_answers_and_store_equal_ingest(pg_schema_url, pg_schema_url_2,
                                                                         capsys) -> None:
    lines = feed(tables=6, rounds=3, seed=33, fault_rate=100)
    expected = cli_results(lines, pg_schema_url_2)
    key = make_keys(pg_schema_url)["studio"]
    answers = {id(line): e for line, e in zip(lines, expected)}
    tables = [Table(t, [answers[id(line)] for line in t], offset=i % 2) for i, t in enumerate(by_table(lines).values())]
    hosts = [Served(pg_schema_url, workers=1) for _ in range(2)]
    starting = [threading.Thread(target=h.start) for h in hosts]
    for t in starting:
        t.start()
    for t in starting:
        t.join()
    dead: set[int] = set()
    try:
        senders = [threading.Thread(target=t.run, args=([h.url for h in hosts], key, dead)) for t in tables]
        for s in senders:
            s.start()
        # Killed mid-run, once a share of the feed has been answered (requests in flight on both hosts).
        target = int(len(lines) * random.Random(33).uniform(0.2, 0.5))
        deadline = time.monotonic() + START_S
        while sum(len(t.answers) for t in tables) < target and time.monotonic() < deadline:
            time.sleep(0.002)
        hosts[1].kill()
        for s in senders:
            s.join(timeout=120)
        assert not any(s.is_alive() for s in senders), "a table's sender hung"
    finally:
        for h in hosts:
            h.stop()
    answered = sum(len(t.answers) for t in tables)
    assert answered == len(lines), f"{answered} of {len(lines)} answered"
    assert dead == {1}, "no request found host 1 gone: killed after the run?"
    assert_answers_as_ingest(tables)
    assert_store_as_ingest(lines, pg_schema_url, pg_schema_url_2, capsys)


def assert_answers_as_ingest(tables: list[Table]) -> None:
    differ = []
    for t in tables:
        for n, (line, want, got) in enumerate(zip(t.lines, t.expected, t.answers)):
            if n in t.resent and got["status"] == "duplicate":  # the killed host committed it before dying
                got = {**got, "status": got["original_status"], "original_status": None}
                want = {k: want[k] for k in ("status", "command_id", "code", "round_id")}
            if {k: got[k] for k in want} != want:
                differ.append((line, want, got))
    assert not differ, f"{len(differ)} answers differ from ingest's, first: {differ[0]}"
