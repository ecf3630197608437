"""The DGOJ export register: every record sent, so a later export knows what the
regulator already has (docs/dgoj.md).

`proj_dgoj_register` lives beside the views in the ledger's own database but is
not a view: it records exports, which the events cannot tell, so `ledger
project --rebuild` never touches it. One row per `RegistroOtrosJuegos`
written: its `RegistroId`, the session, its `Fecha`, the batch (`LoteId`) and
the session's canonical content when exported (`Session.content`).

Planning an export against it (`plan`): a closed session of the period never
exported gets a new record (`seq` 0, `SesionNueva` S); one whose content changed since its
latest record (a settlement reversed and resettled or voided, a late round, the
session now complete) gets a rectifying record (`seq` n + 1, `SesionNueva` N)
whose `Rectificacion` names the latest record of that session, the one it
replaces, whatever the export's period; an unchanged one is not sent again, so
an export can be re-run.
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime

from projections.dgoj import KINDS, ExportRules, Session
from projections.regulator import Regulator, RegulatorExport
from projections.sql import Db, Table

REGISTER = Table(
    "proj_dgoj_register",
    key=("registro_id",),
    columns=(
        ("registro_id", "text"), ("sesion_id", "text"), ("seq", "int"), ("fecha", "text"), ("lote_id", "text"),
        ("player_id", "text"), ("table_id", "text"), ("content", "text"),
    ),
    indexes=(("sesion_id", "seq"),),
)
DGOJ: Regulator = RegulatorExport("dgoj", KINDS, (REGISTER,))  # DGOJ on the seam (projections/regulator.py)


@dataclass(frozen=True)
class Entry:
    """One `RegistroOtrosJuegos` to write."""

    session: Session
    game_type: str
    registro_id: str
    seq: int  # 0: the first record of the session; n: its n-th rectification
    rectifies: tuple[str, str] | None  # (RegistroId, RegistroFecha) of the record it replaces


@dataclass
class Plan:
    entries: list[Entry] = field(default_factory=list)
    unchanged: list[Session] = field(default_factory=list)  # exported before, nothing new
    pending: list[Session] = field(default_factory=list)  # a round not settled or voided yet
    omitted: list[Session] = field(default_factory=list)  # no TipoJuego under the rules (Teen Patti: omit)


def registro_id(sesion_id: str, seq: int) -> str:
    """Unique per session and version, within DGOJ's 100 characters whatever the ids' length."""
    return f"OJ-{hashlib.sha256(sesion_id.encode()).hexdigest()[:32]}-{seq}"


def ensure(db: Db) -> None:
    db.create(REGISTER)  # IF NOT EXISTS


def latest(db: Db) -> dict[str, dict[str, object]]:
    """sesion_id -> its latest record in the register."""
    cols = REGISTER.column_names
    out: dict[str, dict[str, object]] = {}
    for values in db.query(f"SELECT {', '.join(cols)} FROM {REGISTER.name} ORDER BY sesion_id, seq"):
        row = dict(zip(cols, values))
        out[str(row["sesion_id"])] = row
    return out


def plan(sessions: list[Session], rules: ExportRules, exported: dict[str, dict[str, object]],
         since: datetime | None = None, until: datetime | None = None) -> Plan:
    """What to write: the sessions that started in [since, until) and were never sent,
    and, whatever their period, the sent sessions whose content changed since (a
    correction goes out with the next export, not only with one of its own period)."""
    result = Plan()
    for s in sessions:
        placed = place(s, rules, exported.get(s.session_id), since, until)
        if placed is not None:
            kind, entry = placed
            if entry is not None:
                result.entries.append(entry)
            else:
                getattr(result, kind).append(s)
    return result


def place(s: Session, rules: ExportRules, before: dict[str, object] | None,
          since: datetime | None = None, until: datetime | None = None) -> tuple[str, Entry | None] | None:
    """Where one session goes in an export (`plan`'s rules), given its latest record in the
    register (None: never sent): None (outside the period and never sent), ("entries", its
    Entry), or ("omitted" | "pending" | "unchanged", None)."""
    in_period = not ((since is not None and s.start < since) or (until is not None and s.start >= until))
    if not in_period and before is None:
        return None
    game_type = rules.game_type(s.game)
    if game_type is None:
        return "omitted", None
    if not s.closed:
        return "pending", None
    if before is None:
        return "entries", Entry(s, game_type, registro_id(s.session_id, 0), 0, None)
    if unchanged(str(before["content"]), s, game_type):
        return "unchanged", None
    seq = int(str(before["seq"])) + 1
    rectifies = (str(before["registro_id"]), str(before["fecha"]))
    return "entries", Entry(s, game_type, registro_id(s.session_id, seq), seq, rectifies)


def unchanged(sent: str, s: Session, game_type: str) -> bool:
    """Whether the register's latest content of the session is what a record would say now.

    A row registered before `complete` was part of the content (`Session.content`) does not
    say whether it was sent complete: it counts as unchanged only while the session is still
    incomplete, so every such session is rectified once when complete (its figures again,
    `SesionCompleta` S) and the regulator's last record of it says S. Re-sending the figures
    of a session that was already sent as complete is harmless; never saying S is not."""
    if sent == s.content(game_type):
        return True
    if '"complete":' in sent:
        return False
    return not s.complete and sent == s.content(game_type, with_complete=False)


def register_row(e: Entry, fecha: str, lote_id: str) -> tuple[object, ...]:
    """The register's row of a written record (REGISTER's columns, in order)."""
    return (e.registro_id, e.session.session_id, e.seq, fecha, lote_id, e.session.player_id, e.session.table_id,
            e.session.content(e.game_type))


def record_rows(db: Db, pages: Iterable[list[tuple[object, ...]]]) -> None:
    """Insert the register rows, a page at a time, in one transaction: all or none."""
    cols = REGISTER.column_names
    with db.transaction():
        for rows in pages:
            db.executemany(f"INSERT INTO {REGISTER.name} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                           rows)


def latest_pages(db: Db, page_size: int) -> Iterator[list[tuple[object, ...]]]:
    """Every register row, REGISTER's columns, in (sesion_id, seq) order, a page at a time
    (`latest` without holding the register: the last row of a session is its latest)."""
    cols = ", ".join(REGISTER.column_names)
    after: tuple[str, int] = ("", -1)
    while rows := db.query(f"SELECT {cols} FROM {REGISTER.name} WHERE sesion_id > ? OR (sesion_id = ? AND seq > ?) "
                           f"ORDER BY sesion_id, seq LIMIT {int(page_size)}", (after[0], after[0], after[1])):
        yield rows
        after = (str(rows[-1][1]), int(str(rows[-1][2])))
