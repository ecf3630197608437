"""A PostgreSQL outage under a real `ledger serve` (issue 19, part 4): the store is reached
through a TCP proxy this test runs, which is cut (every link closed, new ones refused) and
restored. /readyz answers 503 within 2 s of the cut and 200 within 2 s of the restore,
without a restart; a command request meanwhile is answered 503 `store_unavailable` with
Retry-After within the store timeout, never hangs; and the commands sent again after the
outage are recorded exactly once."""
from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any
from urllib.parse import urlparse

import httpx
import pytest

from tests.e2e.service.conftest import auth, cli_results, feed, free_port, make_keys, round_events
from tests.e2e.service.test_hostile_http import Served

pytestmark = pytest.mark.postgres


class CuttableProxy:
    """127.0.0.1:<port> -> the PostgreSQL server, on an asyncio loop in a thread of its own.
    `cut()` closes every link and refuses new connections until `restore()` (a server that
    crashed); `stall()` forwards nothing, on old links or new ones, until `restore()` (a
    network that drops packets: nothing fails, everything waits)."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = free_port()
        self.loop = asyncio.new_event_loop()
        self.links: set[asyncio.StreamWriter] = set()
        self.flowing = asyncio.Event()
        self.server: asyncio.base_events.Server | None = None
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.restore()

    def _call(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(10)

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while chunk := await reader.read(65536):
                await self.flowing.wait()
                writer.write(chunk)
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    async def _link(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        await self.flowing.wait()
        try:
            server_r, server_w = await asyncio.open_connection(*self.target)
        except OSError:
            client_w.close()
            return
        self.links.update((client_w, server_w))
        await asyncio.gather(self._pipe(client_r, server_w), self._pipe(server_r, client_w))
        self.links.difference_update((client_w, server_w))

    async def _start(self) -> None:
        self.flowing.set()
        if self.server is None:
            self.server = await asyncio.start_server(self._link, "127.0.0.1", self.port, reuse_address=True)

    async def _stall(self) -> None:
        self.flowing.clear()

    async def _cut(self) -> None:
        if self.server is not None:
            self.server.close()  # new connections: refused
            self.server = None
        for writer in list(self.links):
            writer.transport.abort()  # every link dropped at once, as a server crash would
        self.links.clear()

    def cut(self) -> None:
        self._call(self._cut())

    def stall(self) -> None:
        self._call(self._stall())

    def restore(self) -> None:
        self._call(self._start())

    def close(self) -> None:
        self.cut()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


def until(predicate: Any, seconds: float) -> float:
    """Seconds until `predicate()` holds, polling; fails after `seconds`."""
    started = time.monotonic()
    while not predicate():
        assert time.monotonic() - started < seconds, f"not within {seconds} s"
        time.sleep(0.05)
    return time.monotonic() - started


def readyz(url: str) -> int:
    try:
        return httpx.get(url + "/readyz", timeout=5).status_code
    except httpx.HTTPError:
        return 0


@pytest.mark.parametrize("outage", ["cut", "stall"])
def test_an_outage_is_503_with_retry_after_and_the_resent_commands_land_exactly_once(outage, pg_schema_url,
                                                                                     pg_schema_url_2):
    keys = make_keys(pg_schema_url)
    real = urlparse(pg_schema_url)
    proxy = CuttableProxy(real.hostname or "127.0.0.1", real.port or 5432)
    proxied = pg_schema_url.replace(f"{real.hostname}:{real.port or 5432}", f"127.0.0.1:{proxy.port}", 1)
    server = Served(proxied, "--store-timeout-s", "3")
    headers = {**auth(keys["studio"]), "Content-Type": "application/x-ndjson"}
    lines = feed(tables=3, rounds=3, fault_rate=0)
    third = len(lines) // 3
    try:
        with httpx.Client(base_url=server.url, headers=headers, timeout=30) as http:
            r = http.post("/v1/commands", content=b"\n".join(lines[:third]))
            assert r.status_code == 200 and {x["status"] for x in r.json()} == {"accepted"}

            # In flight when the store goes away: answered within the store timeout (3 s), 503, Retry-After.
            answers: dict[str, Any] = {}

            def in_flight() -> None:
                started = time.monotonic()
                with httpx.Client(base_url=server.url, headers=headers, timeout=30) as other:
                    answers["r"] = other.post("/v1/commands", content=b"\n".join(lines[third : 2 * third]))
                answers["s"] = time.monotonic() - started

            proxy.cut() if outage == "cut" else proxy.stall()
            poster = threading.Thread(target=in_flight)
            poster.start()
            down = until(lambda: readyz(server.url) == 503, 2.0)  # a stall: the probe's 1 s timeout, then 503
            poster.join(30)
            r = answers["r"]
            assert r.status_code == 503 and r.json()["code"] == "store_unavailable" and r.headers["Retry-After"]
            assert answers["s"] < 3.0 + 1.0, answers["s"]
            assert readyz(server.url) == 503
            ready = httpx.get(server.url + "/readyz", timeout=5)
            assert ready.json()["code"] == "store_unavailable" and ready.headers["Retry-After"]
            assert r.headers["content-type"] == ready.headers["content-type"] == "application/problem+json"

            # Known down: a request is answered at once, nothing queued.
            started = time.monotonic()
            r = http.post("/v1/commands", content=b"\n".join(lines[2 * third :]))
            assert r.status_code == 503 and r.json()["code"] == "store_unavailable" and r.headers["Retry-After"]
            assert time.monotonic() - started < 1.0
            assert r.json()["instance"] == f"urn:casino-ledger:request:{r.headers['x-request-id']}"
            assert ready.json()["instance"] == f"urn:casino-ledger:request:{ready.headers['x-request-id']}"
            time.sleep(3)  # a few seconds of outage

            proxy.restore()
            up = until(lambda: readyz(server.url) == 200, 2.0)

            # Everything sent again after the outage (the writer may need a moment for its own connection).
            def resend() -> Any:
                return http.post("/v1/commands", content=b"\n".join(lines[third:]))

            deadline = time.monotonic() + 20
            r = resend()
            sends = 1
            while r.status_code == 503 and time.monotonic() < deadline:
                sends += 1
                time.sleep(float(r.headers.get("Retry-After", "1")) / 4)
                r = resend()
            assert r.status_code == 200, r.text
            assert {x["status"] for x in r.json()} <= {"accepted", "duplicate"}
            again = http.post("/v1/commands", content=b"\n".join(lines))
            assert [x["status"] for x in again.json()] == ["duplicate"] * len(lines)
        print(f"/readyz 503 {down:.2f} s after the cut, 200 {up:.2f} s after the restore; the request in flight "
              f"answered 503 after {answers['s']:.2f} s; the resend accepted at send {sends}, "
              f"{time.monotonic() - deadline + 20:.2f} s after the readiness")
    finally:
        log = server.stop()
        proxy.close()
    assert "Traceback" not in log, log[-3000:]
    requests = [json.loads(x) for x in log.splitlines() if x.startswith("{") and '"request"' in x]
    assert all(r["status"] < 500 or r["status"] == 503 for r in requests)

    # Exactly once: every command known once as accepted, and every round's events as the CLI
    # records the same feed on a store of its own (a command applied twice would add events).
    from ledger.store import open_app

    app = open_app(pg_schema_url)
    try:
        known = app.ledger_recorder().select_commands([json.loads(x)["command_id"] for x in lines])
    finally:
        app.close()
    assert len(known) == len(lines) and {k.status for k in known.values()} == {"accepted"}
    cli_results(lines, pg_schema_url_2)
    assert round_events(pg_schema_url, lines) == round_events(pg_schema_url_2, lines)
