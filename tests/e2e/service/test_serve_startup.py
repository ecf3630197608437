"""A `ledger serve` worker that cannot start because the store is out of reach (here: restarted
by uvicorn after a crash, during an outage): uvicorn stops the whole service, and the command
says why in one line and exits 2, so a supervisor sees a failure, not a clean stop (it was
exit 0 with "ledger serve: stopped")."""
from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path
from urllib.parse import urlparse

import pytest

from tests.e2e.service.conftest import free_port
from tests.e2e.service.test_serve_process import LEDGER, _wait_ready
from tests.e2e.service.test_store_outage import CuttableProxy

pytestmark = pytest.mark.postgres
STOP_S = 60  # uvicorn restarts the worker at once; its start fails at once (the proxy refuses)


def test_a_worker_restarted_during_an_outage_stops_the_service_with_exit_2(pg_schema_url: str) -> None:
    target = urlparse(pg_schema_url)
    proxy = CuttableProxy(target.hostname or "127.0.0.1", target.port or 5432)
    db = pg_schema_url.replace(f"{target.hostname}:{target.port}", f"127.0.0.1:{proxy.port}", 1)
    port = free_port()
    proc = subprocess.Popen([*LEDGER, "serve", "--db", db, "--port", str(port), "--workers", "2"],
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        _wait_ready(f"http://127.0.0.1:{port}", proc)
        children = [int(c) for t in Path(f"/proc/{proc.pid}/task").iterdir()
                    for c in (t / "children").read_text().split()]
        # uvicorn's workers (spawned), not multiprocessing's resource tracker
        workers = [c for c in children if b"spawn_main" in Path(f"/proc/{c}/cmdline").read_bytes()]
        assert len(workers) == 2, children
        proxy.cut()  # the store out of reach: new connections refused
        os.kill(workers[0], signal.SIGKILL)  # a worker dies (a crash, the OOM killer); uvicorn starts another
        _, err = proc.communicate(timeout=STOP_S)
    finally:
        proc.kill()
        proxy.close()
    last = err.strip().splitlines()[-1]
    assert proc.returncode == 2, err[-2000:]
    assert last.startswith("ledger serve: error store_unreachable: a worker could not start, so the service "
                           "stopped: "), last
    assert "stopped (http" not in err  # not the clean stop's line
