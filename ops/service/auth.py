"""Who may call a route: Bearer API keys (ledger/keys.py) and their roles.

studio: POST /v1/commands (a key may be scoped to tables); backoffice: reads and
reconcile; auditor: reads, audit export and verify; admin: everything.
No key or an unknown/revoked one: 401. A valid key of the wrong role: 403.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Awaitable, Callable
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from ledger.keys import ApiKey, KeyStore

KEY_CACHE_S_DEFAULT = 2.0  # a revoked key stops working within this long
ROLE_WRITE = ("studio", "admin")
ROLE_READ = ("backoffice", "auditor", "admin")
ROLE_AUDIT = ("auditor", "admin")


class Keys:
    """KeyStore lookups with a short cache (a store read per request would cost more than the check)."""

    def __init__(self, store: KeyStore, ttl_s: float) -> None:
        self.store, self.ttl_s = store, ttl_s
        self._seen: dict[str, tuple[float, ApiKey | None]] = {}
        self._lock = threading.Lock()

    def cached(self, key: str) -> tuple[bool, ApiKey | None]:
        """(known, the key): no store read, so the event loop may call it."""
        with self._lock:
            hit = self._seen.get(key)
        if hit is not None and hit[0] > time.monotonic():
            return True, hit[1]
        return False, None

    def check(self, key: str) -> ApiKey | None:
        """The key as the store has it now (a store read), remembered for `ttl_s`."""
        found = self.store.check(key)
        with self._lock:
            if len(self._seen) > 10_000:
                self._seen.clear()
            self._seen[key] = (time.monotonic() + self.ttl_s, found)
        return found


bearer = HTTPBearer(auto_error=False, description="an API key made with `ledger keys add`")


def role(*allowed: str) -> Callable[..., Awaitable[ApiKey]]:
    """A dependency: the caller's key, which must have one of `allowed` roles (401 without a valid key, 403 else)."""

    async def check(request: Request,
                    creds: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]) -> ApiKey:
        return await checked_key(request.app.state.keys, creds.credentials if creds is not None else None, allowed)

    return check


async def checked_key(keys: Keys, credentials: str | None, allowed: tuple[str, ...]) -> ApiKey:
    """The key of these credentials, which must have one of `allowed` roles (401 without a
    valid key, 403 else). async, so a cached key costs no thread hop; a store read goes to
    the thread pool."""
    key = None
    if credentials is not None:
        known, key = keys.cached(credentials)
        if not known:
            key = await run_in_threadpool(keys.check, credentials)
    if key is None:
        raise HTTPException(401, "a valid API key is required: Authorization: Bearer KEY",
                            headers={"WWW-Authenticate": "Bearer"})
    if key.role not in allowed:
        raise HTTPException(403, f"role {key.role} may not use this route (needs {' or '.join(allowed)})")
    return key


def bearer_credentials(authorization: str | None) -> str | None:
    """The credentials of an `Authorization: Bearer X` header value, as `bearer` (HTTPBearer)
    reads them; None for no header, another scheme or no credentials."""
    if not authorization:
        return None
    scheme, _, credentials = authorization.partition(" ")
    credentials = credentials.strip()
    return credentials if scheme and credentials and scheme.lower() == "bearer" else None


Writer = Annotated[ApiKey, Depends(role(*ROLE_WRITE))]
Reader = Annotated[ApiKey, Depends(role(*ROLE_READ))]
Auditor = Annotated[ApiKey, Depends(role(*ROLE_AUDIT))]
