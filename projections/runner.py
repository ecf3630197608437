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
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import Any

from domain.errors import InvariantBroken, require
from domain.text import storable
from ledger.eventdecode import no_cyclic_gc
from ledger.eventlog import PAGE_SIZE_MAX, EventLog
from ledger.records import Record, RecordType
from ledger.unreachable import lost_store_errors
from projections import balances, ggr, monitor, operators, recall, refunds, rounds, tables
from projections.folding import CachedRows, View
from projections.sql import Db, Table

# Order matters: a view reads only views listed before it (View.reads).
ALL_VIEWS: tuple[View, ...] = (tables.VIEW, operators.VIEW, rounds.VIEW, balances.VIEW, recall.VIEW, recall.TIMELINE_VIEW, refunds.VIEW, ggr.VIEW,
                                 monitor.VIEW)
PAGE_SIZE_DEFAULT = 5000  # larger pages: fewer transactions, fewer rewrites of rows that span pages
CONFLICT_RETRIES_MAX = 50

TRACKING = Table(
    "proj_tracking",
    key=("view",),
    columns=(("view", "text"), ("position", "int"), ("fingerprint", "text"), ("updated_at", "text")),
)
# Views stopped at an event they could not fold or store (one row per stopped view): kept in the
# store, so every process sees the stop; emptied by a rebuild (a new view version rebuilds too).
STOPS = Table(
    "proj_stops",
    key=("view",),
    columns=(("view", "text"), ("event_position", "int"), ("aggregate_id", "text"), ("event_type", "text"),
             ("error", "text"), ("stopped_at", "text")),
)
# The store not answering is no fault of an event: it ends the catch-up, as it always did.
UNREACHABLE: tuple[type[BaseException], ...] = (*lost_store_errors(), OSError)


class ConcurrentRunner(Exception):
    """Another runner advanced a view first; this page was rolled back."""


class Unfoldable(Exception):
    """A page of events the views cannot decode (a store altered behind the ledger's back)."""


class PageNotStored(Exception):
    """A page's write failed on what its rows hold (not on the store answering); `last`: its last position."""

    def __init__(self, last: int, error: Exception) -> None:
        super().__init__(f"page up to position {last}: {type(error).__name__}: {error}")
        self.last, self.error = last, error


@dataclass(frozen=True)
class Stop:
    """A view that stopped at an event it could not fold or store: it stays at the position
    before the event (so do the views that read it), the other views go on."""

    view: str
    position: int  # the event's
    aggregate_id: str
    event_type: str
    error: str
    stopped_at: str = ""

    def describe(self) -> str:
        return (f"view {self.view} stopped at event {self.position} ({self.event_type} of {self.aggregate_id}): "
                f"{self.error}")


READS_STOPPED = "it reads view"  # the error of a view stopped because a view it reads stopped


def stops_line(stops: Sequence[Stop]) -> str:
    """The stopped views in one line: each that failed, the event and why; those stopped with it."""
    causes = "; ".join(s.describe() for s in stops if not s.error.startswith(READS_STOPPED))
    readers = ", ".join(s.view for s in stops if s.error.startswith(READS_STOPPED))
    return (causes + (f"; stopped with it, as they read it: {readers}" if readers else "")
            + "; the other views go on; once fixed, `ledger project --rebuild` folds it again")


def read_stops(db: Db) -> dict[str, Stop]:
    """The stopped views kept in the store, by name."""
    return {row[0]: Stop(*row) for row in db.query(f"SELECT {', '.join(STOPS.column_names)} FROM {STOPS.name}")}


def stop_at(view: str, event: Record, err: BaseException) -> Stop:
    """The stop of `view` at `event`, naming what went wrong (as the store can hold it)."""
    why = storable(f"{type(err).__name__}: {err}"[:500])
    return Stop(view, event.position, event.originator_id, type(event).__name__, why, _now())


@dataclass
class CatchUp:
    events: int = 0  # events read (each folded by every view that handles it and had not seen it)
    pages: int = 0
    rows_written: int = 0
    position: int = 0
    conflicts: int = 0
    finding: str | None = None  # why catch-up stopped early: events that cannot be read (views stay consistent)
    stopped: list[Stop] = field(default_factory=list)  # views stopped at an event (this run or before), the others caught up


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
        self.positions: dict[str, int] = {}
        self.stops: dict[str, Stop] = {}  # the stopped views (the store's, and this page's)
        self._careful_to = 0  # write one event a page up to here: a page's write failed on its rows
        self._page: list[Record] = []  # the last page read, when it was one event (see `_find_unstorable`)
        self._arrange()
        self.setup()

    def _arrange(self) -> None:
        """The views that fold (those not stopped), by the record types they handle."""
        self._active = tuple(v for v in self.views if v.name not in self.stops)
        self._dispatch: dict[RecordType, list[View]] = {}  # record type -> views folded event by event
        for view in self._active:
            if view.fold_page is None:
                for kind in view.handles:
                    self._dispatch.setdefault(kind, []).append(view)
        self._paged = tuple(v for v in self._active if v.fold_page is not None)  # folded after the others
        self._kinds = frozenset(kind for v in self._active for kind in v.handles)
        self._folds = {kind: tuple(v.fold for v in views) for kind, views in self._dispatch.items()}

    def _readers_of(self, name: str) -> list[str]:
        """`name` and every view that reads it, directly or not (they stop with it)."""
        stopping = [name]
        for view in self.views:
            if set(view.reads) & set(stopping) and view.name not in stopping:
                stopping.append(view.name)
        return stopping

    # ---------------------------------------------------------------- setup
    def setup(self) -> None:
        """Create missing tables; a view whose definition changed is rebuilt
        (all views are, since later views read earlier ones). One runner at a time."""
        with self.db.exclusive("projector"):
            self._setup()

    def _setup(self) -> None:
        self.db.create(TRACKING)
        self.db.create(STOPS)
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
        self.stops = {name: stop for name, stop in read_stops(self.db).items() if name in self.positions}
        self._arrange()
        # Fresh views have empty tables: nothing to read back, the cache is the truth.
        self.rows.complete = all(p == 0 for p in self.positions.values())

    def rebuild(self) -> None:
        """Empty every view and start again from position 0 (one transaction)."""
        with self.db.exclusive("projector"):
            self._rebuild()

    def _rebuild(self) -> None:
        with self.db.transaction():
            for view in self.views:
                self.db.execute(f"DELETE FROM {STOPS.name} WHERE view=?", (view.name,))  # tried again from the start
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
        one waits, then finds little left); events that cannot be read stop it cleanly with
        `finding` set, the views left at the last page that folded. A view that cannot fold or
        store an event stops there (`stopped`, kept in the store), the others go on."""
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
                    self._catch_up_carefully(result, head, progress, max_pages, after_commit)
            except Unfoldable as damage:
                result.finding = str(damage)
            finally:
                self._careful_to = 0
                if self._freezing:
                    gc.unfreeze()
            result.stopped = list(self.stops.values())
        return result

    def _catch_up_carefully(self, result: CatchUp, head: int, progress: ProgressFn | None, max_pages: int | None,
                            after_commit: Callable[[int], None] | None) -> None:
        """Catch up; a page whose write failed on what its rows hold is read again one event a
        page, and the view whose rows the store refuses stops at that event (`_find_unstorable`)."""
        while True:
            try:
                self._catch_up(result, head, progress, max_pages, after_commit)
                return
            except PageNotStored as failed:
                if self._careful_to and not self._find_unstorable(failed):
                    raise failed.error from None  # no one view's rows fail alone: not an event's doing
                self._careful_to = max(self._careful_to, failed.last)
                self._load_positions()

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
        folded = self._folded()  # what the cache holds: committed, or being written (views not stopped)
        pending: _Pending | None = None
        writer: ThreadPoolExecutor | None = None
        try:
            while folded and (max_pages is None or result.pages + (pending is not None) < max_pages):
                start = min(folded.values()) + 1
                try:
                    # Events no view handles (the shoes') are read but never decoded.
                    read, last, stops = self._read_and_fold(start, folded)
                    if not read:
                        break
                    targets = {name: last for name in folded} | {s.view: s.position - 1 for s in stops}
                    if pending is not None:
                        done, pending = pending, None
                        self._finish(done, result, head, progress, after_commit)
                    with no_cyclic_gc():
                        self.rows.seal()
                    write = partial(self._write, targets, dict(self.positions), stops)
                    # Write behind only while the cache holds every row: a fold that had to read the
                    # database must not race the writer; nor while pages are written one event each.
                    if self.write_behind and self.rows.complete and start > self._careful_to:
                        writer = writer or ThreadPoolExecutor(1, thread_name_prefix="projector-writer")
                        pending = _Pending(writer.submit(write), targets, last, read)
                        # A dropped row read back while this page is written: wait for the write
                        # first (one connection; the row's last write is already committed).
                        self.rows.before_read = partial(wait, [pending.job])
                    else:
                        self._finish(_Pending(_run(write), targets, last, read), result, head, progress, after_commit)
                except ConcurrentRunner:
                    result.conflicts += 1
                    require(result.conflicts <= CONFLICT_RETRIES_MAX, "too many concurrent-runner conflicts")
                    if pending is not None:  # the page in flight lands (or not) before positions are read
                        done, pending = pending, None
                        try:
                            self._finish(done, result, head, progress, after_commit)
                        except ConcurrentRunner:
                            pass
                    self.rows.before_read = None
                    self.rows.forget()
                    self._load_positions()
                    folded = self._folded()
                    continue
                folded = {name: max(position, last) for name, position in folded.items() if name not in self.stops}
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

    def _folded(self) -> dict[str, int]:
        """The committed positions of the views that fold (not stopped)."""
        return {view.name: self.positions[view.name] for view in self._active}

    def _read_and_fold(self, start: int, folded: dict[str, int]) -> tuple[int, int, list[Stop]]:
        """Read the page from `start` and fold it into the cache; a page that does not decode
        (events swapped, edited or deleted in the store) is Unfoldable. A view whose fold raises
        stops at that event (`_fold_carefully`). Returns (events read, last position, the views
        stopped): the page's records are dropped here, so that they are not alive while the next
        page is read (two pages of records at once would double the reader's memory)."""
        limit = 1 if start <= self._careful_to else self.page_size
        try:
            page, read, last = self.log.page(start, limit, self._kinds)
        except (InvariantBroken, ValueError, KeyError) as err:
            raise Unfoldable(
                f"events from position {start} cannot be read ({type(err).__name__}: {err}); the views stop at "
                f"position {min(folded.values())}: the store may have been altered, check it with "
                "`ledger audit verify --db URL`"
            ) from err
        self._page = page if limit == 1 else []  # a page of one event: the event a failed write names
        if not read:
            return read, last, []
        try:
            with no_cyclic_gc():
                self._fold(page, start, folded)
        except InvariantBroken as err:
            # A state the ledger can never record (a bet before its round opened): the store was
            # altered, and every view is in doubt, not one: all stop, with a finding. Unless the
            # views moved under the fold (a runner beside this one, which the lock should
            # prevent): rows read past their position are no finding; start again from there.
            if self._moved_beside():
                raise ConcurrentRunner("the views moved while this page was folded") from err
            raise Unfoldable(
                f"events from position {start} cannot be folded ({type(err).__name__}: {err}); the views stop at "
                f"position {min(folded.values())}: the store may have been altered, check it with "
                "`ledger audit verify --db URL`"
            ) from err
        except Exception:
            return read, last, self._fold_carefully(page, folded)
        return read, last, []

    def _moved_beside(self) -> bool:
        """Another runner committed positions other than this one's since it last looked."""
        if self.rows.before_read is not None:  # a page in flight: let it land (one connection)
            self.rows.before_read()
            return True  # this runner's own page moved them: fold again from there, to be sure
        tracked = dict(self.db.query("SELECT view, position FROM proj_tracking"))
        return any(tracked.get(name) != position for name, position in self.positions.items())

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

    def _fold_carefully(self, page: list[Record], folded: dict[str, int]) -> list[Stop]:
        """A fold raised: fold the page again, event by event and view by view, from the page's
        start (a fold that raised may have changed rows first). The first view that raises stops
        at that event, with the views that read it; they fold the events before it. Again until
        the page folds; the stopped views leave the views that fold."""
        stops: dict[str, Stop] = {}
        while True:
            self.rows.rollback()
            failed = self._first_failure(page, folded, stops)
            if failed is None:
                break
            for name in self._readers_of(failed.view):
                if name in folded and name not in stops:
                    why = failed.error if name == failed.view else f"{READS_STOPPED} {failed.view}, which stopped there"
                    stops[name] = Stop(name, failed.position, failed.aggregate_id, failed.event_type, why,
                                       failed.stopped_at)
        self.stops.update(stops)
        self._arrange()
        return list(stops.values())

    def _first_failure(self, page: list[Record], folded: dict[str, int], stops: dict[str, Stop]) -> Stop | None:
        """Fold the page one event and one view at a time (views folded a page at a time last,
        event by event: the same result); the first fold that raises, as a Stop."""
        rows = self.rows
        ordered = [(ev, view) for ev in page for view in self._dispatch.get(type(ev), ())]
        ordered += [(ev, view) for view in self._paged for ev in page if type(ev) in view.handles]
        for ev, view in ordered:
            stop = stops.get(view.name)
            if folded[view.name] < ev.position and (stop is None or ev.position < stop.position):
                try:
                    view.fold(rows, ev)
                except UNREACHABLE:
                    raise
                except Exception as err:
                    return stop_at(view.name, ev, err)
        return None

    def _find_unstorable(self, failed: PageNotStored) -> bool:
        """The one event of a page whose write failed: each view's rows written alone (and rolled
        back); the first view whose rows fail stops at the event (with the views that read it),
        kept in the store at once. False when no view's rows fail alone."""
        if not self._page:
            return False
        event = self._page[0]
        sealed = {table.name: (table, puts) for table, puts in self.rows.sealed}
        for view in self._active:
            error = self._trial_write([sealed[t.name] for t in view.tables if t.name in sealed])
            if error is not None:
                first = stop_at(view.name, event, error)
                stops = [first] + [Stop(name, first.position, first.aggregate_id, first.event_type,
                                        f"{READS_STOPPED} {view.name}, which stopped there", first.stopped_at)
                                   for name in self._readers_of(view.name)[1:] if name not in self.stops]
                with self.db.transaction():
                    self._record_stops(stops)
                return True
        return False

    def _trial_write(self, tables: Iterable[tuple[Table, list[tuple[Any, ...]]]]) -> Exception | None:
        """What writing these rows raises (None: nothing); never committed."""
        try:
            with self.db.transaction():
                for table, puts in tables:
                    self.db.upsert_many(table, puts)
                raise _TrialOver
        except _TrialOver:
            return None
        except UNREACHABLE:
            raise
        except Exception as err:
            return err

    def _record_stops(self, stops: Sequence[Stop]) -> None:
        """Keep the stops in the store (inside the caller's transaction)."""
        self.db.upsert_many(STOPS, [(s.view, s.position, s.aggregate_id, s.event_type, s.error, s.stopped_at)
                                    for s in stops])

    def _write(self, targets: dict[str, int], expected: dict[str, int], stops: Sequence[Stop]) -> int:
        """ONE transaction: the sealed rows of every view, the views stopped on the page, and each
        view's position, moved from `expected` (what this runner last committed) to its target
        (the page's last position; for a view stopped on it, the one before its event). A guard
        that matches fewer rows than views means another runner got there first. On PostgreSQL
        the page's statements go in one pipeline. Rows the store refuses are PageNotStored."""
        moves: dict[tuple[int, int], list[str]] = {}  # views by (from, to): one group, usually
        for name, target in targets.items():
            if target > expected[name]:
                moves.setdefault((expected[name], target), []).append(name)
        try:
            with self.db.pipeline() as sync, self.db.transaction():
                written = self.rows.flush()
                self._record_stops(stops)
                now = _now()
                guards = [(names, self.db.execute_cursor(
                    f"UPDATE proj_tracking SET position=?, updated_at=? WHERE position=? AND view IN ({_marks(names)})",
                    (target, now, start, *names))) for (start, target), names in moves.items()]
                sync()  # the guards' row counts
                for names, moved in guards:
                    if moved.rowcount != len(names):
                        raise ConcurrentRunner(", ".join(names))
        except ConcurrentRunner:
            raise
        except UNREACHABLE:
            raise
        except Exception as err:
            raise PageNotStored(max(targets.values(), default=0), err) from err
        return written

    def _finish(self, done: _Pending, result: CatchUp, head: int, progress: ProgressFn | None,
                after_commit: Callable[[int], None] | None) -> None:
        """Wait for a page's write; once committed, count it."""
        result.rows_written += done.job.result()  # raises what the write raised
        for name, target in done.targets.items():
            self.positions[name] = max(self.positions[name], target)
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
    """A sealed page being written: its transaction, each view's position after it, last position, events read."""

    job: Future[int]
    targets: dict[str, int]
    last: int
    read: int


class _TrialOver(Exception):
    """Ends a trial write: its transaction rolls back."""


def _run(fn: Callable[[], int]) -> Future[int]:
    """Run `fn` here and now, as a finished Future (the write without a writer thread)."""
    job: Future[int] = Future()
    try:
        job.set_result(fn())
    except BaseException as exc:
        job.set_exception(exc)
    return job


def _marks(names: list[str]) -> str:
    return ", ".join("?" * len(names))


def _now() -> str:
    return datetime.now(UTC).isoformat()
