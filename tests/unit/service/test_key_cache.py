"""The API key cache of the service (ops/service/auth.py Keys) on a stand-in key store:
callers that miss together share one store read, a key in use is read again ahead of
its expiry without making a request wait, and a revoked key still stops within the TTL."""
from __future__ import annotations

import asyncio
import threading
import time

import pytest
from fastapi import HTTPException

from ledger.keys import ROLE_WRITE, ApiKey
from ops.service.auth import Keys, checked_key

STUDIO = ApiKey("k1", "studio-1", "studio", (), "2026-11-26T00:00:00+00:00", None)


class SlowStore:
    """A key store whose every read takes `delay_s` and is counted; `key` is what it answers."""

    def __init__(self, delay_s: float) -> None:
        self.delay_s, self.reads, self.key = delay_s, 0, STUDIO
        self._lock = threading.Lock()

    def check(self, key: str) -> ApiKey | None:
        with self._lock:
            self.reads += 1
        time.sleep(self.delay_s)
        return self.key


def _check(keys: Keys) -> ApiKey:
    return asyncio.run(checked_key(keys, "lk_k1_secret", ROLE_WRITE))


def test_callers_that_miss_together_share_one_store_read() -> None:
    store = SlowStore(0.05)
    keys = Keys(store, ttl_s=2.0)  # type: ignore[arg-type]

    async def many() -> list[ApiKey]:
        return await asyncio.gather(*(checked_key(keys, "lk_k1_secret", ROLE_WRITE) for _ in range(20)))

    assert asyncio.run(many()) == [STUDIO] * 20
    assert store.reads == 1  # one read for 20 callers (was 20: each missed and read the store)
    keys.close()


def test_a_key_in_use_is_read_again_ahead_of_expiry_and_no_request_waits_for_it() -> None:
    store = SlowStore(0.3)
    keys = Keys(store, ttl_s=1.0)  # type: ignore[arg-type]
    assert _check(keys) == STUDIO and store.reads == 1
    time.sleep(0.6)  # more than half the TTL gone: the next request starts a read in the background
    started = time.perf_counter()
    assert _check(keys) == STUDIO
    assert time.perf_counter() - started < 0.15  # answered from the cache, not after the 0.3 s read
    time.sleep(0.05)
    assert store.reads == 2
    time.sleep(0.6)  # past the first read's expiry: the refreshed entry answers, no wait
    started = time.perf_counter()
    assert _check(keys) == STUDIO
    assert time.perf_counter() - started < 0.15
    keys.close()


def test_a_revoked_key_stops_within_the_ttl() -> None:
    store = SlowStore(0.0)
    keys = Keys(store, ttl_s=0.4)  # type: ignore[arg-type]
    assert _check(keys) == STUDIO
    store.key = None  # revoked
    deadline = time.monotonic() + 0.4
    while True:
        try:
            _check(keys)
        except HTTPException as exc:
            assert exc.status_code == 401
            break
        assert time.monotonic() < deadline + 0.05, "still accepted after the TTL"
        time.sleep(0.02)
    keys.close()


@pytest.mark.parametrize("callers", [1, 5])
def test_with_no_cache_every_request_reads_the_store(callers: int) -> None:
    store = SlowStore(0.0)
    keys = Keys(store, ttl_s=0.0)  # type: ignore[arg-type]
    for _ in range(callers):
        assert _check(keys) == STUDIO
    assert store.reads == callers
    keys.close()
