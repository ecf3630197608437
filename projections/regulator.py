"""The seam every regulator export sits on (docs/architecture.md, "a new regulator export").

A regulator export is five things, and only the first three differ between regulators:

1. **what it takes from which events**: the event kinds it reads (`Regulator.kinds`) and
   what it makes of each round (DGOJ: a player's sessions; KSA: games, game sessions and
   account transactions), read a chunk of complete rounds at a time up to the head read at
   the start (`projections.replay_range.stored_rounds`), in bounded memory;
2. **whose players and bets** (`Scope`: one operator, the licensee) and **which period**
   (`Period`: `--since` inclusive, `--until` exclusive, instants of the studio's time, a
   day being a UTC day unless an offset is given: a session belongs to the period of its
   first bet; gaming days, in the table's zone, are the views' unit, not an export's);
3. **the format**: its writer, its validator (the regulator's XSDs) and, where the format
   can be checked offline after the fact, its verifier (`Finding`s naming the file);
4. **the export register**: a table beside the views (never a view: `ledger project
   --rebuild` never touches it) of what was sent, so an export sends nothing twice and
   misses nothing: never sent -> a new record; sent and unchanged -> nothing; sent and
   changed -> a correction naming what it replaces (`placement`);
5. **the file written whole or not at all** (`write_atomically`), validated before it is
   renamed into place, registered after.

The clock of an export is `now()` (one place, so tests can fix it).
"""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO, Literal, Protocol

from domain.operators import DEFAULT_OPERATOR_ID, operator_of
from ledger.records import RecordType
from projections.sql import Table


def now() -> datetime:
    """The export's clock (UTC); the only one an export reads."""
    return datetime.now(UTC)


@dataclass(frozen=True)
class Scope:
    """Whose players and bets an export holds: one operator's (the licensee; `--operator`).
    `holds_key` is the one test a regulator applies to a play: its player key names the bet's
    operator (domain/operators.py; a bet whose feed named none is the default operator's)."""

    operator_id: str = DEFAULT_OPERATOR_ID

    def holds(self, bet_operator_id: str | None) -> bool:
        return (bet_operator_id or DEFAULT_OPERATOR_ID) == self.operator_id

    def holds_key(self, player_key: str) -> bool:
        return operator_of(player_key) == self.operator_id


@dataclass(frozen=True)
class Period:
    """`--since` inclusive, `--until` exclusive (aware times; None = open)."""

    since: datetime | None = None
    until: datetime | None = None

    def holds(self, at: datetime) -> bool:
        return not ((self.since is not None and at < self.since) or (self.until is not None and at >= self.until))


Placement = Literal["new", "unchanged", "correction"]


def placement(sent: str | None, content: str) -> Placement:
    """The register's rule for one subject (a session, a transaction, a game): its content now
    against the content of its latest record sent (None: never sent)."""
    if sent is None:
        return "new"
    return "unchanged" if sent == content else "correction"


@dataclass(frozen=True)
class Finding:
    """One way an exported file is not what was written: the file and what is wrong."""

    file: str
    message: str


class Regulator(Protocol):
    """What a regulator export declares on the seam (each regulator's module has one:
    `dgoj_register.DGOJ`, `ksa_register.KSA`): its subcommand, the events it reads and
    the register tables it keeps (beside the views, never rebuilt)."""

    @property
    def name(self) -> str: ...  # the subcommand: `ledger export NAME`

    @property
    def kinds(self) -> frozenset[RecordType]: ...  # the event kinds it reads

    @property
    def registers(self) -> tuple[Table, ...]: ...


@dataclass(frozen=True)
class RegulatorExport:
    """A `Regulator`, as data."""

    name: str
    kinds: frozenset[RecordType]
    registers: tuple[Table, ...]


def validate_xsd(xml: Path, xsd: Path) -> list[str]:
    """Every way the file breaks the XSD (xmlschema, reading it lazily: memory flat in its
    size), one line each; empty when valid."""
    import xmlschema

    schema = xmlschema.XMLSchema(str(xsd))
    resource = xmlschema.XMLResource(str(xml), lazy=True)
    return [f"{e.reason} at {e.path}" for e in schema.iter_errors(resource)]


def write_atomically(path: Path, write: Callable[[BinaryIO], None],
                     check: Callable[[Path], list[str]]) -> list[str]:
    """The whole file or none: written beside the target (mode from the umask, as any new
    file) by `write`, checked by `check` (its errors returned, the file removed), then
    renamed over the target."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "xb") as f:
            write(f)
        errors = check(tmp)
        if errors:
            tmp.unlink()
            return errors
        os.replace(tmp, path)
        return []
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
