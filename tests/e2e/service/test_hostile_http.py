"""Hostile HTTP clients against a real `ledger serve` on PostgreSQL (issue 19, part 3): every
hostile request gets its 4xx (or a per-command `bad_command`), never a 5xx, and a well-behaved
client sending commands meanwhile keeps its latency: all its answers 200, its p99 within
P99_BOUND_S of what it was with nobody else, or P99_FACTOR times it on a loaded machine (before:
1.8-2.3 s behind a 1,000,000-element array; 503s behind a deep line with two workers).
Loopback only; every loop is bounded."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.e2e.service.conftest import auth, feed, free_port, make_keys

pytestmark = pytest.mark.postgres

LEDGER = [sys.executable, "-m", "ops.cli"]
# The well-behaved client's p99 with hostile traffic: at most its p99 alone plus P99_BOUND_S, or
# P99_FACTOR times it, whichever is larger. "Alone" is the larger of two runs, before and after
# the hostile one, so a load that rises meanwhile is in it. Measured on the shared 2-core machine:
# - quiet-ish (load 9): 20-65 ms alone, 35-62 ms with the hostile bodies (parsed in a thread);
# - load 10-15: 0.22 s alone, 0.68 s with them (the old bound, alone + 0.25 s, failed there);
# - the fault, the bodies parsed on the request loop (INLINE_SPLIT_BYTES_MAX raised to 1 TB),
#   load 9: 19 ms alone, 288 ms with them; the 1,000,000-element array stalled it 1.8-2.3 s
#   before the count came first.
# On a loaded machine (alone p99 over P99_BOUND_S / (P99_FACTOR - 1), 83 ms) the bound scales with
# the load and a stall shorter than P99_FACTOR times the alone figure passes: a stall of seconds fails.
P99_BOUND_S = 0.25
P99_FACTOR = 4
ALONE_S = 1.5
DEEP = 100_000


class Served:
    def __init__(self, db: str, *extra: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        # A file, not a pipe: one log line per request would fill a pipe nobody reads and stall the server.
        self.log = tempfile.TemporaryFile("w+")
        self.proc = subprocess.Popen([*LEDGER, "serve", "--db", db, "--port", str(self.port), *extra],
                                     stderr=self.log, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        deadline = time.monotonic() + 60
        while True:
            assert self.proc.poll() is None, self.stop()
            assert time.monotonic() < deadline, "ledger serve did not get ready"
            try:
                if httpx.get(self.url + "/readyz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)

    def stop(self) -> str:
        """Stop the server (SIGTERM; it finishes what it took), and its log."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.seek(0)
        return self.log.read()


class SteadyClient(threading.Thread):
    """One table's game server: a command at a time on a keep-alive connection, each timed."""

    def __init__(self, url: str, key: str, lines: list[bytes]) -> None:
        super().__init__(daemon=True)
        self.url, self.key, self.lines = url, key, lines
        self.latencies: list[float] = []
        self.statuses: list[int] = []
        self.errors: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        headers = {**auth(self.key), "Content-Type": "application/x-ndjson"}
        with httpx.Client(base_url=self.url, headers=headers, timeout=30) as http:
            for line in self.lines:
                if self.stop.is_set():
                    return
                started = time.perf_counter()
                try:
                    status = http.post("/v1/commands", content=line).status_code
                except httpx.HTTPError as exc:  # counted, not raised: the test reports it
                    status = 0
                    self.errors.append(f"{time.monotonic():.2f}: {exc!r}")
                self.latencies.append(time.perf_counter() - started)
                self.statuses.append(status)
                time.sleep(0.005)

    def p99(self) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def steady(url: str, key: str, lines: list[bytes], seconds: float, during: Any = None) -> SteadyClient:
    """The steady client for `seconds` (or for as long as `during()` runs, at least 1 s)."""
    client = SteadyClient(url, key, lines)
    client.start()
    started = time.monotonic()
    if during is not None:
        during()
    time.sleep(max(0.0, seconds - (time.monotonic() - started)))
    client.stop.set()
    client.join(60)
    return client


def raw_exchange(port: int, data: bytes, read_s: float = 10.0) -> bytes:
    """Send raw bytes, read until the server closes or `read_s` passes."""
    with socket.create_connection(("127.0.0.1", port), timeout=read_s) as s:
        s.sendall(data)
        got = b""
        deadline = time.monotonic() + read_s
        while time.monotonic() < deadline:
            try:
                chunk = s.recv(65536)
            except (TimeoutError, ConnectionResetError):
                break
            if not chunk:
                break
            got += chunk
            if b"\r\n\r\n" in got and b"connection: close" not in got.lower():
                head, _, body = got.partition(b"\r\n\r\n")
                length = next((int(x.split(b":")[1]) for x in head.lower().split(b"\r\n")
                               if x.startswith(b"content-length:")), None)
                if length is not None and len(body) >= length:
                    break
        return got


def trickled(s: socket.socket, data: bytes) -> bytes:
    """`data` sent one byte at a time, a second apart, until the server answers (or hangs up):
    its answer, or b"" if none came."""
    for byte in data:
        try:
            s.sendall(bytes([byte]))
        except OSError:
            return b""
        s.settimeout(1.0)
        try:
            return s.recv(4096)
        except TimeoutError:
            continue
    return b""


def status_of(response: bytes) -> int:
    return int(response.split(b" ", 2)[1]) if response.startswith(b"HTTP/1.1 ") else 0


@pytest.fixture
def served(pg_schema_url: str) -> Iterator[tuple[Served, dict[str, str]]]:
    keys = make_keys(pg_schema_url, scoped=["T1"])
    server = Served(pg_schema_url, "--header-timeout-s", "2", "--body-timeout-s", "2", "--max-body-bytes",
                    str(16 * 1024 * 1024))
    try:
        yield server, keys
    finally:
        log = server.stop()
        assert "Traceback" not in log, log[-3000:]
        requests = [json.loads(x) for x in log.splitlines() if x.startswith("{") and '"request"' in x]
        assert requests and all(r["status"] < 500 for r in requests), [r for r in requests if r["status"] >= 500]


def test_hostile_bodies_get_4xx_or_bad_command_and_the_steady_client_keeps_its_p99(served):
    server, keys = served
    key = keys["studio"]
    lines = feed(tables=3, rounds=40, fault_rate=0)
    alone = steady(server.url, key, lines[:200], ALONE_S)
    assert set(alone.statuses) == {200}

    deep = b"[" * DEEP + b"]" * DEEP
    busy = {json.loads(x)["table_id"] for x in lines}
    valid = next(x for x in feed(tables=9, rounds=1, seed=99, fault_rate=0) if json.loads(x)["table_id"] not in busy)
    answers: list[tuple[str, int, Any]] = []

    def hostile() -> None:
        with httpx.Client(base_url=server.url, headers=auth(key), timeout=60) as http:
            def post(name: str, body: bytes, content_type: str = "application/json", k: str = key) -> None:
                try:
                    r = http.post("/v1/commands", content=body, headers={**auth(k), "Content-Type": content_type})
                except httpx.HTTPError as exc:
                    answers.append((name, 0, repr(exc)))
                    return
                answers.append((name, r.status_code, r.json()))

            for _ in range(2):  # the second time: the deep element's valid command is a duplicate
                post("deep body", deep)
                post("deep element", b"[" + deep + b"," + valid + b"]")
                post("deep line, scoped key", deep + b"\n", "application/x-ndjson", keys["scoped"])
                post("a million elements", b"[" + b",".join([b"{}"] * 1_000_000) + b"]")
                post("a million lines", b"\n".join([b"{}"] * 1_000_000), "application/x-ndjson")
                post("text/plain", valid, "text/plain")
                post("xml", b"<commands/>", "application/xml")
                post("too large", b"[" + b" " * (17 * 1024 * 1024) + b"]")

    during = steady(server.url, key, lines[200:], 4.0, hostile)
    codes = {(name, status) for name, status, _ in answers}
    assert codes == {("deep body", 200), ("deep element", 200), ("deep line, scoped key", 200),
                     ("a million elements", 413), ("a million lines", 413), ("text/plain", 415), ("xml", 415),
                     ("too large", 413)}, codes
    by_name = {name: body for name, _, body in answers}
    assert [r["code"] for r in by_name["deep body"]] == ["bad_command"]
    assert [r["status"] for r in by_name["deep element"]] == ["refused", "duplicate"]  # the 2nd send: duplicate
    assert by_name["deep element"][0]["code"] == "bad_command"
    assert [r["code"] for r in by_name["deep line, scoped key"]] == ["bad_command"]
    assert by_name["a million elements"]["code"] == "too_many_commands"
    assert by_name["text/plain"]["code"] == "unsupported_media_type"
    assert by_name["too large"]["code"] == "body_too_large"
    assert set(during.statuses) == {200} and len(during.latencies) >= 20, during.errors
    after = steady(server.url, key, lines[200 + len(during.latencies):], ALONE_S)  # its next commands, in order
    assert set(after.statuses) == {200}
    reference = max(alone.p99(), after.p99())
    print(f"steady client p99: alone {alone.p99() * 1000:.1f} and {after.p99() * 1000:.1f} ms "
          f"({len(alone.latencies)} + {len(after.latencies)} requests), "
          f"with hostile bodies {during.p99() * 1000:.1f} ms ({len(during.latencies)})")
    assert during.p99() <= max(reference + P99_BOUND_S, reference * P99_FACTOR), (reference, during.p99())

    # The rejections log keeps a JSON array's element as it was sent, not re-serialised.
    spaced = b'[ {"type" :  "open_round", "table_id": "T9"} ]'
    with httpx.Client(base_url=server.url, timeout=30) as http:
        r = http.post("/v1/commands", content=spaced, headers={**auth(key), "Content-Type": "application/json"})
        assert r.status_code == 200 and r.json()[0]["code"] == "bad_command"
        logged = http.get("/v1/rejections", headers=auth(keys["backoffice"])).json()["rejections"]
    assert '{"type" :  "open_round", "table_id": "T9"}' in [x["payload"] for x in logged]


def test_hostile_connections_get_431_408_and_a_hang_up_is_no_500(served):
    server, keys = served
    key = keys["studio"]
    head = f"POST /v1/commands HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n".encode()

    def hostile() -> None:
        big = raw_exchange(server.port, head + b"X-Big: " + b"a" * (1024 * 1024) + b"\r\n\r\n")
        assert status_of(big) == 431 and b"headers_too_large" in big, big[:300]
        many = raw_exchange(server.port, head + b"".join(b"X-%d: 1\r\n" % i for i in range(10_000)) + b"\r\n")
        assert status_of(many) == 431 and b"headers_too_many" in many, many[:300]
        assert b"content-type: application/problem+json" in big and b'"status": 431' in many  # RFC 9457
        garbled = raw_exchange(server.port, b"GET /\x00 HTTP/1.1\r\n\r\n")
        assert status_of(garbled) == 400 and b'"code": "bad_request"' in garbled, garbled[:300]

        # One byte a second: answered 408 once the header timeout (2 s here) has passed.
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
            started = time.monotonic()
            answer = trickled(s, head[:8])
            assert status_of(answer) == 408 and b"request_timeout" in answer, answer
            assert time.monotonic() - started < 5

        # A body that stops coming: 408 once the body timeout (2 s) has passed.
        slow_body = raw_exchange(server.port, head + b"Content-Type: application/x-ndjson\r\n"
                                 b"Content-Length: 1000\r\n\r\n{\"type\":", read_s=8)
        assert status_of(slow_body) == 408, slow_body[:300]

        # A client hanging up mid-body: nothing to answer; logged 499, no traceback (checked by the fixture).
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
            s.sendall(head + b"Content-Type: application/x-ndjson\r\nContent-Length: 100000\r\n\r\n" + b"{" * 1000)
            time.sleep(0.3)
        time.sleep(0.3)

    during = steady(server.url, key, feed(tables=3, rounds=30, fault_rate=0), 2.0, hostile)
    assert set(during.statuses) == {200}
    log = server.stop()
    requests = [json.loads(x) for x in log.splitlines() if x.startswith("{") and '"request"' in x]
    assert 499 in {r["status"] for r in requests}
    assert "Traceback" not in log, log[-3000:]


def test_a_deep_line_does_not_fail_other_clients_batches_with_two_workers(pg_schema_url):
    """With --workers 2 the table locks read each command's table id: a line nested 100,000 deep
    raised RecursionError there and failed its whole batch (503 for everyone in it)."""
    keys = make_keys(pg_schema_url)
    server = Served(pg_schema_url, "--workers", "2")
    try:
        deep = b'{"table_id": "T1", "x": ' + b"[" * DEEP + b"]" * DEEP + b"}"
        lines = feed(tables=4, rounds=3, fault_rate=0)
        statuses: list[int] = []

        tables: dict[str, list[bytes]] = {}
        for line in lines:
            tables.setdefault(json.loads(line)["table_id"], []).append(line)
        accepted: list[str] = []

        def post(bodies: list[bytes]) -> None:  # a table's commands in order, one request each
            with httpx.Client(base_url=server.url, timeout=30) as http:
                for body in bodies:
                    r = http.post("/v1/commands", content=body,
                                  headers={**auth(keys["studio"]), "Content-Type": "application/x-ndjson"})
                    statuses.append(r.status_code)
                    if r.status_code == 200:
                        accepted.extend(x["status"] for x in r.json())

        # Two clients sending the deep line twice each (the fault failed the deep line's own batch too:
        # one is enough to see it; the others' commands share batches with it).
        threads = [threading.Thread(target=post, args=(bodies,)) for bodies in [[deep] * 2] * 2 + list(tables.values())]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert statuses == [200] * (4 + len(lines)), statuses
        assert accepted.count("accepted") == len(lines) and accepted.count("refused") == 4
    finally:
        log = server.stop()
    assert "Traceback" not in log, log[-3000:]
