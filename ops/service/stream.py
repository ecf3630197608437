"""A live feed on standard input (`ledger ingest -`): commit what has arrived after
`max_wait_ms` (or `batch_size` commands), not only when a batch fills, and hand each
committed batch's results on in feed order."""
from __future__ import annotations

import json
import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from typing import IO

from ledger.app import LedgerApp
from ledger.batching import Result
from ops.service.committer import GroupCommitter

STREAM_MAX_WAIT_MS_DEFAULT = 50.0
_END = None


def stream_batches(app: LedgerApp, lines: Iterable[bytes], batch_size: int,
                   max_wait_ms: float) -> Iterator[list[Result]]:
    """Like `LedgerApp.ingest_batches`, with a time limit per batch: a reader thread feeds
    the group committer line by line; each batch's results come out as it commits, in feed
    order (one writer thread). No result is kept: memory stays flat."""
    done: queue.Queue[list[Result] | BaseException | None] = queue.Queue()
    committer = GroupCommitter(app, max_wait_ms=max_wait_ms, max_batch=batch_size,
                               on_commit=lambda count, seconds, results: done.put(results))

    def failed(future: Future[list[Result]]) -> None:
        if future.exception() is not None:
            done.put(future.exception())

    def read() -> None:
        try:
            for line in lines:
                committer.submit([line]).add_done_callback(failed)
        except BaseException as exc:  # a broken input stream ends the ingest with its error
            done.put(exc)
        finally:
            committer.close()
            done.put(_END)

    threading.Thread(target=read, name="feed-reader", daemon=True).start()
    while (item := done.get()) is not _END:
        if isinstance(item, BaseException):
            raise item
        yield item


def results_writer(out: IO[str]) -> Callable[[list[Result]], None]:
    """One JSON line per result, flushed per batch (a reader of a pipe sees each commit)."""
    def write(results: list[Result]) -> None:
        out.write("".join(json.dumps(r.as_dict()) + "\n" for r in results))
        out.flush()

    return write
