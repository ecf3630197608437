"""Who may call a route: Bearer API keys (ledger/keys.py) and their roles.

studio: POST /v1/commands (a key may be scoped to tables); backoffice: reads and
reconcile; auditor: reads, audit export and verify; admin: everything.
No key or an unknown/revoked one: 401. A valid key of the wrong role: 403.
"""
from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from domain.errorcodes import ErrorCode
from ledger.keys import ROLE_AUDIT, ROLE_READ, ApiKey, KeyStore
from ops.service.health import RETRY_AFTER_S
from ops.service.intake import IntakeError
from ops.service.problems import ServiceError

KEY_CACHE_S_DEFAULT = 2.0  # a revoked key stops working within this long


class Keys:
    """KeyStore lookups with a short cache (a store read per request would cost more than the check).

    A key in use is read again in the background once half its time in the cache has passed,
    and requests meanwhile answer from the cache; callers that miss together share one read.
    Before, every `ttl_s` all the connections in flight missed at once and each read the store
    through the reader's one pooled connection (50 reads, and overflow connections opened,
    every 2 s under live_bench). A revoked key still stops working within `ttl_s`: an entry
    lives `ttl_s` from the START of the read that made it."""

    def __init__(self, store: KeyStore, ttl_s: float, read_timeout_s: float | None = None) -> None:
        self.store, self.ttl_s, self.read_timeout_s = store, ttl_s, read_timeout_s
        self._seen: dict[str, tuple[float, ApiKey | None]] = {}  # key -> (valid until, what the store said)
        self._reading: dict[str, tuple[float, Future[ApiKey | None]]] = {}  # key -> (read started, its result)
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="key-check")

    async def get(self, key: str) -> ApiKey | None:
        """The key from the cache (a read started ahead of expiry when it is half gone), else
        from a store read in a worker thread, shared with the callers that want it too."""
        now = time.monotonic()
        with self._lock:
            hit = self._seen.get(key)
        if hit is not None and hit[0] > now:
            if hit[0] - now < self.ttl_s / 2:
                self._read(key, now)
            return hit[1]
        try:
            async with asyncio.timeout(self.read_timeout_s):
                # shielded: the read is shared with other callers, one caller's timeout must not cancel it
                return await asyncio.shield(asyncio.wrap_future(self._read(key, now)))
        except Exception as exc:  # not the caller's fault: 503, retry later (never a hang, never a 500)
            raise IntakeError(ErrorCode.STORE_UNAVAILABLE,
                              f"the API key could not be read from the store: {str(exc)[:200] or 'timed out'}",
                              headers={"Retry-After": str(RETRY_AFTER_S)}) from exc

    def _read(self, key: str, now: float) -> Future[ApiKey | None]:
        """The store read for `key` in flight that started recently enough to count as fresh
        (within `ttl_s`; with ttl_s 0 every caller reads), else a new one."""
        with self._lock:
            reading = self._reading.get(key)
            if reading is None or reading[0] + self.ttl_s <= now:
                reading = self._reading[key] = (now, self._pool.submit(self._check_from, key, now))
        return reading[1]

    def _check_from(self, key: str, started: float) -> ApiKey | None:
        try:
            return self.check(key, started)
        finally:
            with self._lock:
                reading = self._reading.get(key)
                if reading is not None and reading[0] == started:  # not a newer read's entry
                    del self._reading[key]

    def check(self, key: str, started: float | None = None) -> ApiKey | None:
        """The key as the store has it now (a store read), remembered for `ttl_s` from `started`."""
        started = time.monotonic() if started is None else started
        found = self.store.check(key)
        with self._lock:
            if len(self._seen) > 10_000:
                self._seen.clear()
            self._seen[key] = (started + self.ttl_s, found)
        return found

    def close(self) -> None:
        self._pool.shutdown(wait=True)


bearer = HTTPBearer(auto_error=False, description="an API key made with `ledger keys add`")


def role(*allowed: str) -> Callable[..., Awaitable[ApiKey]]:
    """A dependency: the caller's key, which must have one of `allowed` roles (401 without a valid key, 403 else)."""

    async def check(request: Request,
                    creds: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]) -> ApiKey:
        key = await checked_key(request.app.state.keys, creds.credentials if creds is not None else None, allowed)
        request.state.api_key = key  # the operators it may see: ops/service/routes/deps.py `caller`
        return key

    return check


async def checked_key(keys: Keys, credentials: str | None, allowed: tuple[str, ...]) -> ApiKey:
    """The key of these credentials, which must have one of `allowed` roles (401 without a
    valid key, 403 else). async, so a cached key costs no thread hop; a store read goes to
    a worker thread (Keys.get)."""
    key = None if credentials is None else await keys.get(credentials)
    if key is None:
        raise ServiceError(ErrorCode.UNAUTHORIZED, "a valid API key is required: Authorization: Bearer KEY",
                           headers={"WWW-Authenticate": "Bearer"})
    if key.role not in allowed:
        raise ServiceError(ErrorCode.FORBIDDEN, f"role {key.role} may not use this route (needs {' or '.join(allowed)})")
    return key


def bearer_credentials(authorization: str | None) -> str | None:
    """The credentials of an `Authorization: Bearer X` header value, as `bearer` (HTTPBearer)
    reads them; None for no header, another scheme or no credentials."""
    if not authorization:
        return None
    scheme, _, credentials = authorization.partition(" ")
    credentials = credentials.strip()
    return credentials if scheme and credentials and scheme.lower() == "bearer" else None


Reader = Annotated[ApiKey, Depends(role(*ROLE_READ))]
Auditor = Annotated[ApiKey, Depends(role(*ROLE_AUDIT))]
