"""Many concurrent clients on several tables against a real uvicorn server: every
command answered once, nothing recorded twice, the same results and state as a
CLI ingest, and commits grouped (fewer transactions than requests)."""
from __future__ import annotations

import json
import threading
from collections import defaultdict

import httpx
from prometheus_client import REGISTRY

from ops.service.app import Settings
from tests.e2e.service.conftest import LiveServer, auth, cli_results, feed, make_keys, round_events, second_store


def _batches() -> tuple[float, float]:
    count = REGISTRY.get_sample_value("ledger_batch_commands_count") or 0.0
    total = REGISTRY.get_sample_value("ledger_batch_commands_sum") or 0.0
    return count, total


def test_concurrent_clients(store_url, tmp_path, request):
    lines = feed(tables=8, rounds=2)
    by_table: dict[str, list[int]] = defaultdict(list)
    for i, line in enumerate(lines):
        by_table[json.loads(line).get("table_id", "?")].append(i)
    key = make_keys(store_url)["studio"]
    answers: dict[int, list[dict]] = defaultdict(list)
    lock = threading.Lock()
    failures: list[str] = []

    def client(indexes: list[int], repeat: bool) -> None:
        with httpx.Client(base_url=server.url, headers=auth(key), timeout=30) as http:
            for at in range(0, len(indexes), 2):  # two commands per request, in feed order
                chunk = indexes[at : at + 2]
                r = http.post("/v1/commands", content=b"\n".join(lines[i] for i in chunk),
                              headers={"Content-Type": "application/x-ndjson"})
                if r.status_code != 200 or len(r.json()) != len(chunk):
                    failures.append(r.text)
                    return
                with lock:
                    for i, result in zip(chunk, r.json()):
                        answers[i].append(result)
                if repeat:  # a client that retries everything at once: never recorded twice
                    http.post("/v1/commands", content=b"\n".join(lines[i] for i in chunk),
                              headers={"Content-Type": "application/x-ndjson"})

    before = _batches()
    with LiveServer(Settings(db_url=store_url, max_wait_ms=5)) as server:
        threads = [threading.Thread(target=client, args=(ix, n % 3 == 0)) for n, ix in enumerate(by_table.values())]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert failures == []
    assert sorted(answers) == list(range(len(lines))) and all(len(a) == 1 for a in answers.values())
    cli_url = second_store(store_url, tmp_path, request)
    assert [answers[i][0] for i in range(len(lines))] == cli_results(lines, cli_url)
    assert round_events(store_url, lines) == round_events(cli_url, lines)
    after = _batches()
    requests = sum((len(ix) + 1) // 2 for ix in by_table.values())
    batches, commands = after[0] - before[0], after[1] - before[1]
    assert commands >= len(lines) and batches < requests  # grouped: fewer transactions than requests
