"""`ledger export dgoj` in bounded memory, whatever the number of rounds stored.

The same sessions, placed the same way and written as the same bytes as
`dgoj.read_sessions` + `dgoj_register.plan` + `dgoj_xml.render`, but nothing is held
whole: what must be sorted goes to a temporary SQLite file (the spill, deleted
afterwards; SQLite sorts on disk past its cache) and the batch is written a chunk of
records at a time (`dgoj_xml.write_lote`). Three passes:

1. the rounds stored up to the head read at the start (the high-water mark, so a
   writer appending meanwhile changes nothing; `replay_range.stored_rounds`: each
   round complete, only rounds in flight held): each round's plays
   (`dgoj.collect_plays` on its records) go to the spill; the studio's clock is the
   latest studio time seen;
2. the plays in (player, table, first bet) order: each gets its session's start
   (the gap rule of `dgoj.sessions_of`);
3. the plays in (session start, table, player) order, `sessions_of`'s order: each
   session is built (`dgoj.make_session`), placed against the register
   (`dgoj_register.place`; the register copied into the spill a page at a time) and
   counted; its record is yielded to the writer and its register row spilled.
"""
from __future__ import annotations

import sqlite3
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from domain.operators import DEFAULT_OPERATOR_ID, OperatorScope
from ledger.eventlog import EventLog
from projections.dgoj import KINDS, ExportRules, Play, Session, collect_plays, make_session
from projections.dgoj_register import REGISTER, Entry, latest_pages, place, register_row
from projections.replay_range import stored_rounds
from projections.sql import Db

SPILL_PAGE_SIZE = 1000  # rows written to or read from the spill at once
ROUND_CHUNK_EVENTS = 5000  # events of completed rounds decoded at once
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
_PLAY_COLUMNS = ("round_id", "table_id", "round_no", "game", "ruleset_id", "currency", "player_id", "first_us",
                 "closed_us", "status", "staked_minor", "refunded_minor", "won_minor")  # `Play`'s fields, in order


def _us(at: datetime) -> int:
    """An aware time as integer microseconds since the epoch (exact; sorts as the time)."""
    return (at - _EPOCH) // _MICROSECOND


def _at(us: int) -> datetime:
    return _EPOCH + us * _MICROSECOND  # UTC, as `studio_instant` gives


def _play_row(p: Play) -> tuple[Any, ...]:
    return (p.round_id, p.table_id, p.round_no, p.game, p.ruleset_id, p.currency, p.player_id, _us(p.first_bet_at),
            None if p.closed_at is None else _us(p.closed_at), p.status, p.staked_minor, p.refunded_minor,
            p.won_minor)


def _play(row: tuple[Any, ...]) -> Play:
    (round_id, table_id, round_no, game, ruleset_id, currency, player_id, first_us, closed_us, status, staked,
     refunded, won) = row
    return Play(round_id, table_id, round_no, game, ruleset_id, currency, player_id, _at(first_us),
                None if closed_us is None else _at(closed_us), status, staked, refunded, won)


@dataclass
class Tally:
    """The export's summary, counted as the sessions go (what `ops/cli/commands/export.py` prints)."""

    through: int = 0  # the high-water mark: the last position read
    records: int = 0
    new: int = 0
    rectifications: int = 0
    unchanged: int = 0
    pending_sessions: int = 0
    pending_rounds_open: int = 0
    omitted_sessions: int = 0
    omitted_rounds: int = 0  # distinct rounds: a round of five players is in five sessions (`SessionExport`)
    omitted_money: dict[str, dict[str, int]] = field(default_factory=dict)
    totals: dict[str, dict[str, int]] = field(default_factory=dict)

    def count(self, kind: str, s: Session, entry: Entry | None) -> None:
        if entry is not None:
            self.records += 1
            self.new += entry.rectifies is None
            self.rectifications += entry.rectifies is not None
            _add_money(self.totals, s)
        elif kind == "unchanged":
            self.unchanged += 1
        elif kind == "pending":
            self.pending_sessions += 1
            self.pending_rounds_open += sum(1 for p in s.plays if not p.closed)
        else:
            self.omitted_sessions += 1
            _add_money(self.omitted_money, s)


def _add_money(out: dict[str, dict[str, int]], s: Session) -> None:
    for currency, (staked, refunded, won) in s.totals().items():
        t = out.setdefault(currency, {"participacion_minor": 0, "devolucion_minor": 0, "premios_minor": 0})
        t["participacion_minor"] += staked
        t["devolucion_minor"] += refunded
        t["premios_minor"] += won


class Spill:
    """The plays on disk (a temporary SQLite file in `directory`): added in any order, then
    grouped into sessions and read back in `sessions_of`'s order, in bounded memory."""

    def __init__(self, directory: str) -> None:
        self.conn = sqlite3.connect(Path(directory) / "spill.db", isolation_level=None)
        self.conn.execute("PRAGMA journal_mode=OFF")  # a scratch file: nothing to recover
        self.conn.execute("PRAGMA synchronous=OFF")
        self.conn.execute(f"CREATE TABLE plays ({', '.join(_PLAY_COLUMNS)})")
        self.conn.execute("CREATE TABLE grouped (session_us, play_id)")

    def close(self) -> None:
        self.conn.close()

    def add_plays(self, plays: Iterable[Play]) -> None:
        self.conn.executemany(f"INSERT INTO plays VALUES ({', '.join('?' * len(_PLAY_COLUMNS))})",
                              map(_play_row, plays))

    def group(self, gap: timedelta) -> None:
        """Pass 2: each play's session start, by `sessions_of`'s gap rule."""
        gap_us = gap // _MICROSECOND
        key: tuple[str, str] | None = None
        start = end = 0
        page: list[tuple[int, int]] = []
        reader = self.conn.execute("SELECT rowid, player_id, table_id, first_us, coalesce(closed_us, first_us) "
                                   "FROM plays ORDER BY player_id, table_id, first_us, round_no")
        for play_id, player_id, table_id, first_us, end_us in reader:
            if (player_id, table_id) != key or first_us - end > gap_us:
                key, start, end = (player_id, table_id), first_us, end_us
            else:
                end = max(end, end_us)
            page.append((start, play_id))
            if len(page) >= SPILL_PAGE_SIZE:
                self.conn.executemany("INSERT INTO grouped VALUES (?, ?)", page)
                page = []
        self.conn.executemany("INSERT INTO grouped VALUES (?, ?)", page)

    def sessions(self, rules: ExportRules, clock: datetime | None) -> Iterator[Session]:
        """Every session (after `group`), in `sessions_of`'s order (start, table, player)."""
        columns = ", ".join(f"p.{c}" for c in _PLAY_COLUMNS)
        reader = self.conn.execute(f"SELECT g.session_us, {columns} FROM grouped g JOIN plays p ON p.rowid = "
                                   "g.play_id ORDER BY g.session_us, p.table_id, p.player_id, p.first_us, p.round_no")
        run: list[Play] = []
        key: tuple[int, str, str] | None = None
        for session_us, *row in reader:
            play = _play(tuple(row))
            if run and (session_us, play.table_id, play.player_id) != key:
                yield make_session(run[0].player_id, run[0].table_id, run, rules, clock)
                run = []
            key = (session_us, play.table_id, play.player_id)
            run.append(play)
        if run:
            yield make_session(run[0].player_id, run[0].table_id, run, rules, clock)


class SessionExport:
    """One export's sessions, in bounded memory (module doc). Use as a context manager:
    entering reads the store (passes 1 and 2); `entries()` yields the records to write (pass 3,
    once), counting them in `tally`; then `register_pages()` gives their register rows."""

    def __init__(self, log: EventLog, db: Db, rules: ExportRules, fecha: str, lote_id: str,
                 since: datetime | None = None, until: datetime | None = None,
                 operator_id: str = DEFAULT_OPERATOR_ID) -> None:
        self.log, self.db, self.rules = log, db, rules
        # One operator's players only: a batch goes to a regulator under that operator's licence.
        self.scope = OperatorScope.of(operator_id)
        self.fecha, self.lote_id, self.since, self.until = fecha, lote_id, since, until
        self.tally = Tally()
        self.clock: datetime | None = None
        self._dir: tempfile.TemporaryDirectory[str] | None = None
        self._spill: Spill | None = None

    def __enter__(self) -> SessionExport:
        self._dir = tempfile.TemporaryDirectory(prefix="ledger-dgoj-")
        try:  # a failed first pass (store error, Ctrl-C) never reaches __exit__: clean up here
            self._spill = Spill(self._dir.name)
            self.spill.conn.execute("CREATE TABLE register (sesion_id PRIMARY KEY, registro_id, seq, fecha, content)")
            self.spill.conn.execute(f"CREATE TABLE written ({', '.join(REGISTER.column_names)})")
            # The rounds of the sessions left out, each once however many players it had (on disk:
            # memory stays flat in the rounds).
            self.spill.conn.execute("CREATE TABLE omitted_rounds (round_id PRIMARY KEY) WITHOUT ROWID")
            self._copy_register()
            self.tally.through = self.log.head()
            self._spill_plays(self.tally.through)
            self.spill.group(self.rules.session_gap)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self._spill is not None:
            self._spill.close()
        if self._dir is not None:
            self._dir.cleanup()

    @property
    def spill(self) -> Spill:
        if self._spill is None:
            raise RuntimeError("SessionExport used outside its `with` block")
        return self._spill

    def _copy_register(self) -> None:
        """Each session's latest record (rows in seq order: the last one stays)."""
        if not self.db.table_exists(REGISTER.name):
            return
        for rows in latest_pages(self.db, SPILL_PAGE_SIZE):
            self.spill.conn.executemany("INSERT OR REPLACE INTO register VALUES (?, ?, ?, ?, ?)",
                                   [(r[1], r[0], r[2], r[3], r[7]) for r in rows])

    def _spill_plays(self, through: int) -> None:
        """Pass 1: every round's plays into the spill; the studio's clock."""
        kind = self.log.kind
        for chunk in stored_rounds(self.log, through, ROUND_CHUNK_EVENTS):
            plays: list[Play] = []
            for round_rows in chunk:
                mine, latest = collect_plays(self.log.decode_rows([r for r in round_rows if kind(r[3]) in KINDS]))
                if latest is not None and (self.clock is None or latest > self.clock):
                    self.clock = latest
                plays += [p for p in mine if self.scope.allows_key(p.player_id)]
            self.spill.add_plays(plays)

    def entries(self) -> Iterator[Entry]:
        """Pass 3: the records to write, in order; every session counted in `tally`."""
        written: list[tuple[object, ...]] = []
        insert = f"INSERT INTO written VALUES ({', '.join('?' * len(REGISTER.column_names))})"
        for s in self.spill.sessions(self.rules, self.clock):
            placed = place(s, self.rules, self._before(s.session_id), self.since, self.until)
            if placed is None:
                continue
            kind, entry = placed
            self.tally.count(kind, s, entry)
            if kind == "omitted":
                self.spill.conn.executemany("INSERT OR IGNORE INTO omitted_rounds VALUES (?)",
                                            [(p.round_id,) for p in s.plays])
            if entry is not None:
                written.append(register_row(entry, self.fecha, self.lote_id))
                if len(written) >= SPILL_PAGE_SIZE:
                    self.spill.conn.executemany(insert, written)
                    written = []
                yield entry
        self.spill.conn.executemany(insert, written)
        self.tally.omitted_rounds = self.spill.conn.execute("SELECT count(*) FROM omitted_rounds").fetchone()[0]

    def _before(self, sesion_id: str) -> dict[str, object] | None:
        row = self.spill.conn.execute("SELECT registro_id, seq, fecha, content FROM register WHERE sesion_id = ?",
                                 (sesion_id,)).fetchone()
        return None if row is None else dict(zip(("registro_id", "seq", "fecha", "content"), row))

    def register_pages(self) -> Iterator[list[tuple[object, ...]]]:
        """The register rows of the records `entries` yielded, a page at a time."""
        reader = self.spill.conn.execute("SELECT * FROM written ORDER BY rowid")
        while rows := reader.fetchmany(SPILL_PAGE_SIZE):
            yield rows
