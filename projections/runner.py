"""Bring views up to date, exactly once, one transaction per page.

Loop: read a page of events after the views' tracked position (global
order, `select_notifications`), fold each event through every view that has
not seen it, then in ONE transaction write the changed rows of every view
and advance each view's position in `proj_tracking`. The position update is
guarded (`WHERE position = <what we started from>`): a second runner that
got there first makes ours roll back, forget its cache and re-read, so no
event is ever counted twice and none is skipped. A crash anywhere loses at
most the uncommitted page, which the next run reads again.

The same pull loop serves SQLite (no subscriptions there) and PostgreSQL;
on PostgreSQL the view tables sit in the ledger's own database and schema.
"""
from __future__ import annotations

import gc
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any

from domain.errors import InvariantBroken, require
from ledger.eventlog import PAGE_SIZE_MAX, EventLog, no_cyclic_gc
from ledger.records import Record, RecordType
from projections import balances, ggr, monitor, recall, refunds, rounds, tables
from projections.sql import Db, Table
from projections.state import CachedRows, View

# Order matters: a view reads only views listed before it (View.reads).
ALL_VIEWS: tuple[View, ...] = (tables.VIEW, rounds.VIEW, balances.VIEW, recall.VIEW, recall.TIMELINE_VIEW, refunds.VIEW, ggr.VIEW,
                                 monitor.VIEW)
PAGE_SIZE_DEFAULT = 5000  # larger pages: fewer transactions, fewer rewrites of rows that span pages
CONFLICT_RETRIES_MAX = 50

TRACKING = Table(
    "proj_tracking",
    key=("view",),
    columns=(("view", "text"), ("position", "int"), ("fingerprint", "text"), ("updated_at", "text")),
)


class ConcurrentRunner(Exception):
    """Another runner advanced a view first; this page was rolled back."""


class Unfoldable(Exception):
    """A page of events the views cannot fold (a store altered behind the ledger's back)."""


@dataclass
class CatchUp:
    events: int = 0  # events read (each folded by every view that handles it and had not seen it)
    pages: int = 0
    rows_written: int = 0
    position: int = 0
    conflicts: int = 0
    finding: str | None = None  # why catch-up stopped early: events that cannot be folded (views stay consistent)


ProgressFn = Callable[[int, int], None]  # (position, head)


class Projector:
    """Runs `views` over the store's events (`log`) into tables of the same database."""

    def __init__(self, log: EventLog, views: Sequence[View] = ALL_VIEWS, *, db: Db | None = None,
                 page_size: int = PAGE_SIZE_DEFAULT, write_behind: bool | None = None,
                 gc_off_per_run: bool = True) -> None:
        require(1 <= page_size <= PAGE_SIZE_MAX, f"page size {page_size} outside 1..{PAGE_SIZE_MAX}")
        self._freezing = True  # catch_up freezes the long-lived cache unless its caller froze objects
        names = [v.name for v in views]
        require(len(set(names)) == len(names), f"duplicate views {names}")
        for i, view in enumerate(views):
            require(set(view.reads) <= set(names[:i]), f"view {view.name} reads {view.reads}: list them first")
        paged = {v.name for v in views if v.fold_page is not None}
        for view in views:
            require(not (set(view.reads) & paged) and not (view.name in paged and view.reads),
                    f"view {view.name}: a view folded a page at a time reads no other view and none reads it")
        self.log = log
        self.views = tuple(views)
        self.db = db or Db.for_store(log.backend)
        self.page_size = page_size
        # Fold the next page while this one is written (one writer thread). By default only on
        # PostgreSQL, where the write waits on the network; on SQLite the write is mostly
        # Python, and the two threads measured slower than one (they contend for the GIL).
        self.write_behind = self.db.dialect == "postgres" if write_behind is None else write_behind
        # The cyclic collector off from the first page to the last (`catch_up`). gc.disable is
        # process-wide: a server's catch-up on a read turns it off per page only, so its other
        # threads (event loop, writer) are not left without collection for a long backlog.
        self.gc_off_per_run = gc_off_per_run
        self.rows = CachedRows(self.db, [t for v in self.views for t in v.tables])
        self._dispatch: dict[RecordType, list[View]] = {}  # record type -> views folded event by event
        for view in self.views:
            if view.fold_page is None:
                for kind in view.handles:
                    self._dispatch.setdefault(kind, []).append(view)
        self._paged = tuple(v for v in self.views if v.fold_page is not None)  # folded after the others
        self._kinds = frozenset(kind for v in self.views for kind in v.handles)
        self._folds = {kind: tuple(v.fold for v in views) for kind, views in self._dispatch.items()}
        self.positions: dict[str, int] = {}
        self.setup()

    # ---------------------------------------------------------------- setup
    def setup(self) -> None:
        """Create missing tables; a view whose definition changed is rebuilt
        (all views are, since later views read earlier ones). One runner at a time."""
        with self.db.exclusive("projector"):
            self._setup()

    def _setup(self) -> None:
        self.db.create(TRACKING)
        tracked = {r[0]: (r[1], r[2]) for r in self.db.query("SELECT view, position, fingerprint FROM proj_tracking")}
        stale = [v for v in self.views if v.name not in tracked or tracked[v.name][1] != v.fingerprint()]
        changed = [v for v in stale if v.name in tracked]
        if changed:  # definition changed: drop its old tables BEFORE creating (new indexes name new columns)
            with self.db.transaction():
                for view in changed:
                    for table in view.tables:
                        self.db.drop(table)
        for view in self.views:
            for table in view.tables:
                self.db.create(table)
        if stale:
            with self.db.transaction():
                for view in stale:
                    self.db.execute("DELETE FROM proj_tracking WHERE view=?", (view.name,))
                    self.db.execute("INSERT INTO proj_tracking (view, position, fingerprint, updated_at) "
                                    "VALUES (?, 0, ?, ?)", (view.name, view.fingerprint(), _now()))
            self._rebuild()  # later views read earlier ones: never mix old and new positions
        self._load_positions()

    def _load_positions(self) -> None:
        rows = self.db.query("SELECT view, position FROM proj_tracking")
        tracked = {name: pos for name, pos in rows}
        self.positions = {v.name: tracked[v.name] for v in self.views}
        # Fresh views have empty tables: nothing to read back, the cache is the truth.
        self.rows.complete = all(p == 0 for p in self.positions.values())

    def rebuild(self) -> None:
        """Empty every view and start again from position 0 (one transaction)."""
        with self.db.exclusive("projector"):
            self._rebuild()

    def _rebuild(self) -> None:
        with self.db.transaction():
            for view in self.views:
                for table in view.tables:
                    self.db.execute(f"DELETE FROM {table.name}")
                self.db.execute("UPDATE proj_tracking SET position=0, fingerprint=?, updated_at=? WHERE view=?",
                                (view.fingerprint(), _now(), view.name))
        self.rows.forget()
        self._load_positions()

    # ---------------------------------------------------------------- run
    def catch_up(self, progress: ProgressFn | None = None, *, max_pages: int | None = None,
                 after_commit: Callable[[int], None] | None = None) -> CatchUp:
        """Fold every recorded event the views have not seen yet. Runners take turns (a second
        one waits, then finds little left); events that cannot be folded stop it cleanly with
        `finding` set, the views left at the last page that folded."""
        # A caller that froze objects itself (e.g. a server before it forks) is left alone.
        self._freezing = gc.get_freeze_count() == 0
        with self.db.exclusive("projector"):
            self._refresh_positions()
            result = CatchUp(position=min(self.positions.values(), default=0))
            head = self.log.head()
            try:
                # No cyclic collection while pages are folded and written: a page's records and
                # rows hold no cycles (refcounting frees them), and each collection re-walked
                # every row of the page in flight, several times a page; what survives a page
                # is frozen after it (`_finish`).
                with no_cyclic_gc() if self.gc_off_per_run else nullcontext():
                    self._catch_up(result, head, progress, max_pages, after_commit)
            except Unfoldable as damage:
                result.finding = str(damage)
            finally:
                if self._freezing:
                    gc.unfreeze()
        return result

    def _refresh_positions(self) -> None:
        """Another runner may have moved the views while this one waited: start from there."""
        before = dict(self.positions)
        self._load_positions()
        if self.positions != before:
            self.rows.forget()

    def _catch_up(self, result: CatchUp, head: int, progress: ProgressFn | None, max_pages: int | None,
                  after_commit: Callable[[int], None] | None) -> None:
        """Read, fold and seal page N+1 while page N is being written (one
        write in flight at most). Page N+1 is only written once page N
        committed; any failure drops the cache, so nothing folded on top of
        an unwritten page survives it."""
        folded = dict(self.positions)  # what the cache holds: committed, or being written
        pending: _Pending | None = None
        writer: ThreadPoolExecutor | None = None
        try:
            while max_pages is None or result.pages + (pending is not None) < max_pages:
                start = min(folded.values()) + 1
                try:
                    # Events no view handles (the shoes') are read but never decoded.
                    read, last = self._read_and_fold(start, folded)
                    if not read:
                        break
                    if pending is not None:
                        done, pending = pending, None
                        self._finish(done, result, head, progress, after_commit)
                    with no_cyclic_gc():
                        self.rows.seal()
                    # Write behind only while the cache holds every row: a fold
                    # that had to read the database must not race the writer.
                    if self.write_behind and self.rows.complete:
                        writer = writer or ThreadPoolExecutor(1, thread_name_prefix="projector-writer")
                        pending = _Pending(writer.submit(self._write, last, dict(self.positions)), last, read)
                        # A dropped row read back while this page is written: wait for the write
                        # first (one connection; the row's last write is already committed).
                        self.rows.before_read = partial(wait, [pending.job])
                    else:
                        self._finish(_Pending(_run(self._write, last, dict(self.positions)), last, read),
                                     result, head, progress, after_commit)
                except ConcurrentRunner:
                    result.conflicts += 1
                    require(result.conflicts <= CONFLICT_RETRIES_MAX, "too many concurrent-runner conflicts")
                    self.rows.forget()
                    self._load_positions()
                    folded = dict(self.positions)
                    continue
                for view in self.views:
                    folded[view.name] = max(folded[view.name], last)
            if pending is not None:
                done, pending = pending, None
                self._finish(done, result, head, progress, after_commit)
        except BaseException:
            if pending is not None:  # let the write in flight land (or fail) before anyone uses the connection
                try:
                    self._finish(pending, result, head, None, None)
                except BaseException:
                    pass
            self.rows.forget()  # the cache may hold what was rolled back or never written
            raise
        finally:
            self.rows.before_read = None
            if writer is not None:
                writer.shutdown(wait=True)

    def _read_and_fold(self, start: int, folded: dict[str, int]) -> tuple[int, int]:
        """Read the page from `start` and fold it into the cache; a page that does not decode or
        breaks a view's invariant (events swapped, edited or deleted in the store) is Unfoldable.
        Returns (events read, last position): the page's records are dropped here, so that they
        are not alive while the next page is read (two pages of records at once would double the reader's memory)."""
        try:
            page, read, last = self.log.page(start, self.page_size, self._kinds)
            if read:
                with no_cyclic_gc():
                    self._fold(page, start, folded)
        except (InvariantBroken, ValueError, KeyError) as err:
            raise Unfoldable(
                f"events from position {start} cannot be folded ({type(err).__name__}: {err}); the views stop at "
                f"position {min(folded.values())}: the store may have been altered, check it with "
                "`ledger audit verify --db URL`"
            ) from err
        return read, last

    def _fold(self, page: list[Record], first: int, folded: dict[str, int]) -> None:
        """Fold `page` (the decoded records from position `first` on) into the page's rows."""
        rows = self.rows
        fresh = max(folded.values()) < first  # the usual case: every view needs every event
        if fresh:
            folds = self._folds
            for ev in page:
                for fold in folds.get(type(ev), ()):
                    fold(rows, ev)
        else:
            for ev in page:
                for view in self._dispatch.get(type(ev), ()):
                    if ev.position > folded[view.name]:
                        view.fold(rows, ev)
        for view in self._paged:
            handles, seen = view.handles, folded[view.name]
            mine = [ev for ev in page if type(ev) in handles and (fresh or ev.position > seen)]
            if mine and view.fold_page is not None:
                view.fold_page(rows, mine)

    def _write(self, last: int, expected: dict[str, int]) -> int:
        """ONE transaction: the sealed rows of every view and each view's
        position, moved from `expected` (what this runner last committed) to
        `last`. A guard that matches fewer rows than views means another runner got
        there first. On PostgreSQL the page's statements go in one pipeline."""
        starts: dict[int, list[str]] = {}  # views by the position they move from (one group, usually)
        for view in self.views:
            if last > expected[view.name]:
                starts.setdefault(expected[view.name], []).append(view.name)
        with self.db.pipeline() as sync, self.db.transaction():
            written = self.rows.flush()
            now = _now()
            guards = [(names, self.db.execute_cursor(
                f"UPDATE proj_tracking SET position=?, updated_at=? WHERE position=? AND view IN ({_marks(names)})",
                (last, now, start, *names))) for start, names in starts.items()]
            sync()  # the guards' row counts
            for names, moved in guards:
                if moved.rowcount != len(names):
                    raise ConcurrentRunner(", ".join(names))
        return written

    def _finish(self, done: _Pending, result: CatchUp, head: int, progress: ProgressFn | None,
                after_commit: Callable[[int], None] | None) -> None:
        """Wait for a page's write; once committed, count it."""
        result.rows_written += done.job.result()  # raises what the write raised
        for view in self.views:
            self.positions[view.name] = max(self.positions[view.name], done.last)
        result.pages += 1
        result.events += done.read
        result.position = done.last
        if after_commit:
            after_commit(result.position)
        if progress:
            progress(result.position, max(head, result.position))
        # The cache is long-lived: keep the cyclic GC from rescanning it after every page.
        if self._freezing:
            gc.freeze()

    def close(self) -> None:
        self.db.close()


@dataclass
class _Pending:
    """A sealed page being written: its transaction, last position, events read."""

    job: Future[int]
    last: int
    read: int


def _run(fn: Callable[..., int], *args: Any) -> Future[int]:
    """Run `fn` here and now, as a finished Future (the write without a writer thread)."""
    job: Future[int] = Future()
    try:
        job.set_result(fn(*args))
    except BaseException as exc:
        job.set_exception(exc)
    return job


def _marks(names: list[str]) -> str:
    return ", ".join("?" * len(names))


def _now() -> str:
    return datetime.now(UTC).isoformat()
