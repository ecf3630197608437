"""A `ledger serve` worker that cannot start (its store out of reach when it starts, or when
uvicorn restarts it after a crash) says why in a file the command reads when uvicorn returns,
so the command ends with exit 2 and that line instead of a clean stop (ops/cli/commands/serve.py)."""
from __future__ import annotations

import os

STARTUP_FAILED_ENV = "LEDGER_SERVE_STARTUP_FAILED"  # the file's path, set by `ledger serve` for its workers


def note_startup_failure(exc: BaseException) -> None:
    """Append why this worker could not start (one line) where `ledger serve` looks for it."""
    path = os.environ.get(STARTUP_FAILED_ENV)
    if not path:
        return
    lines = str(exc).strip().splitlines()
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"{type(exc).__name__}: {lines[0] if lines else ''}\n")
    except OSError:  # the command is gone or its folder removed: nobody to tell
        pass
