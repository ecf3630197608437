"""The back-office console: server-rendered pages under /ui/ of `ledger serve`
(ops/console/pages.py), on the same read side as the command line and the API."""
from __future__ import annotations

from fastapi import FastAPI


def mount(api: FastAPI) -> None:
    """Add the console's routes to the service."""
    from ops.console.pages import router

    api.include_router(router)
