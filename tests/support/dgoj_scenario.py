"""A fixed DGOJ scenario whose batches are kept as golden files (tests/store/golden/dgoj/):
a simulated day exported, a settlement reversed and voided afterwards, the next day's
export (rectifications), then an export with nothing new. The clock of each export is
fixed, so the same store and register give the same bytes; `make` writes the batches
with whatever code is checked out (the golden files were written by main's code before
DGOJ moved onto the regulator seam)."""
from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from pathlib import Path

from ledger.store import open_app
from ops.cli import main
from ops.sim.simulator import simulate

CLOCKS = (datetime(2026, 11, 22, 3, 0, 0, tzinfo=UTC), datetime(2026, 11, 23, 3, 0, 0, tzinfo=UTC),
          datetime(2026, 11, 23, 4, 0, 0, tzinfo=UTC))
EXPORTS = (("a.xml", ()), ("b.xml", ("--since", "2026-11-22")), ("c.xml", ()))
REVERSAL = {"type": "reverse_settlement", "command_id": "golden-rev-1", "table_id": "bacc-1", "round_no": 3,
            "studio_time": "2026-11-22T09:00:00.000+00:00", "by": "sup-1", "reason": "dealer misread",
            "then": "void"}


def make(url: str, out: Path, frozen: Callable[[datetime], AbstractContextManager[object]]) -> Iterator[Path]:
    """Build the store at `url`, run the three exports into `out` (the clock frozen by `frozen`)."""
    app = open_app(url)
    app.ingest(list(simulate(tables=5, rounds=12, seed=2, fault_rate=500)))
    app.close()
    for i, ((name, extra), clock) in enumerate(zip(EXPORTS, CLOCKS, strict=True)):
        if i == 1:
            app = open_app(url)
            app.ingest([json.dumps(REVERSAL).encode()])
            app.close()
        with frozen(clock):
            code = main(["export", "dgoj", "--db", url, "--operator-id", "OP01", "--store-id", "ALM1",
                         "--out", str(out / name), "--json", *extra])
        assert code == 0
        yield out / name
