"""The DGOJ v3.3 `Lote` XML of an export plan (docs/dgoj.md has the field map).

One `Registro xsi:type="RegistroOtrosJuegos"` per session, with one `Juego`
block (a session is at one table, so of one game type). Amounts are
`Importe` lines (`Cantidad` with two decimals, `Unidad` the currency), written
from integer minor units by integer arithmetic, never through a float.
Facts the studio feed does not carry (the player's IP and device, the
session's planning, why it ended) come from `PlayerContext`, whose defaults
say "not known to the ledger"; an operator's platform can supply its own.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import BinaryIO

from domain.operators import player_of
from projections.dgoj_register import Entry

NS = "http://cnjuego.gob.es/sci/v3.3.xsd"
XSI = "http://www.w3.org/2001/XMLSchema-instance"
VERSION = "3.3"
CANTIDAD_UNITS_MAX = 10**10  # totalDigits 12, fractionDigits 2
PARTIDAS_MAX = 999_999  # entero6
JUGADOR_ID_LEN_MAX = 50
GAME_NAMES = {"BLJ": "Blackjack en vivo", "PUN": "Punto y banca en vivo", "COM": "Teen Patti 20-20 en vivo",
              "AZA": "Teen Patti 20-20 en vivo"}


class ExportError(ValueError):
    """The export cannot be written as asked (an id too long for DGOJ's fields, ...)."""


@dataclass(frozen=True)
class Header:
    operator_id: str  # OperadorId, 1..4 characters
    store_id: str  # AlmacenId, 1..10
    lote_id: str  # LoteId, 1..50

    def __post_init__(self) -> None:
        for name, value, most in (("operator id", self.operator_id, 4), ("store id", self.store_id, 10),
                                  ("batch id", self.lote_id, 50)):
            if not 1 <= len(value) <= most:
                raise ExportError(f"{name} {value!r} must be 1..{most} characters (DGOJ v3.3)")


@dataclass(frozen=True)
class PlayerContext:
    """Session facts outside the feed (module doc): the defaults say "unknown"."""

    ip: str = "0.0.0.0"
    device: str = "OT"  # TipoDispositivo: OT = other
    device_id: str = "desconocido"
    end_reason: str = "Usuario"  # MotivoFinSesion: the player stopped playing
    duration_limit: str = "000000"  # PlanificacionSesion: no limit set in the ledger's knowledge
    spend_limit_minor: int = 0
    exclusion: str = "N"


def cantidad(amount_minor: int) -> str:
    """Integer cents -> DGOJ `cantidad` text: `1` -> `0.01`, `-250` -> `-2.50`, exact."""
    if type(amount_minor) is not int:
        raise ExportError(f"amount {amount_minor!r} is not an integer number of minor units")
    units, cents = divmod(abs(amount_minor), 100)
    if units >= CANTIDAD_UNITS_MAX:
        raise ExportError(f"amount {amount_minor} minor units exceeds DGOJ's 12 digits")
    return f"{'-' if amount_minor < 0 else ''}{units}.{cents:02d}"


def fecha_tz(at: datetime) -> str:
    """`date-aaaammddhhmmssTZ` in UTC: `20261121120001+0000`."""
    return at.astimezone(UTC).strftime("%Y%m%d%H%M%S") + "+0000"


def fecha(at: datetime) -> str:
    """`date-aaaammddhhmmss` (UTC)."""
    return at.astimezone(UTC).strftime("%Y%m%d%H%M%S")


def _q(name: str) -> str:
    return f"{{{NS}}}{name}"


def _add(parent: ET.Element, name: str, text: str | None = None) -> ET.Element:
    child = ET.SubElement(parent, _q(name))
    if text is not None:
        child.text = text
    return child


def _importe(parent: ET.Element, name: str, amounts: dict[str, int]) -> None:
    box = _add(parent, name)
    for currency, amount_minor in sorted(amounts.items()):
        line = _add(box, "Linea")
        _add(line, "Cantidad", cantidad(amount_minor))
        _add(line, "Unidad", currency)


def _cabecera(parent: ET.Element, entry: Entry, created: str) -> None:
    head = _add(parent, "Cabecera")
    _add(head, "RegistroId", entry.registro_id)
    _add(head, "SubregistroId", "1")
    _add(head, "SubregistroTotal", "1")
    _add(head, "Fecha", created)
    if entry.rectifies is not None:
        rect = _add(head, "Rectificacion")
        _add(rect, "RegistroId", entry.rectifies[0])
        _add(rect, "RegistroFecha", entry.rectifies[1])


def _juego(parent: ET.Element, entry: Entry) -> None:
    s = entry.session
    totals = s.totals()
    if len(s.plays) > PARTIDAS_MAX:
        raise ExportError(f"session {s.session_id} has {len(s.plays)} rounds, above DGOJ's {PARTIDAS_MAX}")
    game = _add(parent, "Juego")
    _add(game, "JuegoId", "+".join(s.ruleset_ids)[:200])
    _add(game, "JuegoDesc", f"{GAME_NAMES[entry.game_type]} ({', '.join(s.ruleset_ids)})"[:200])
    _add(game, "TipoJuego", entry.game_type)
    _add(game, "FechaInicio", fecha_tz(s.start))
    _add(game, "FechaFin", fecha_tz(s.end))
    _importe(game, "Participacion", {c: t[0] for c, t in totals.items()})
    _importe(game, "ParticipacionDevolucion", {c: t[1] for c, t in totals.items()})
    _importe(game, "Premios", {c: t[2] for c, t in totals.items()})
    botes = _add(game, "Botes")  # no jackpots at these tables: zero
    _importe(botes, "Total", dict.fromkeys(totals, 0))
    _add(game, "JuegoEnVivo", "S")
    _add(game, "MesaId", s.table_id)
    _add(game, "PartidasJugadas", str(len(s.plays)))


def _jugador(parent: ET.Element, entry: Entry, context: PlayerContext) -> None:
    s = entry.session
    player_id = player_of(s.player_id)  # as its operator names the player (a batch holds one operator's)
    if len(player_id) > JUGADOR_ID_LEN_MAX:
        raise ExportError(f"player id {player_id!r} is longer than DGOJ's {JUGADOR_ID_LEN_MAX} characters")
    player = _add(parent, "Jugador")
    _add(player, "JugadorId", player_id)
    session = _add(player, "Sesion")
    _add(session, "SesionId", s.session_id)
    for name, at in (("FechaInicioSesion", s.start), ("FechaFinSesion", s.end),
                     ("FechaInicioPrimerJuego", s.start), ("FechaFinUltimoJuego", s.end)):
        _add(session, name, fecha_tz(at))
    planning = _add(session, "PlanificacionSesion")
    _add(planning, "DuracionLimite", context.duration_limit)
    _add(planning, "GastoLimite", cantidad(context.spend_limit_minor))
    _add(planning, "PeriodoExclusion", context.exclusion)
    _add(session, "SesionCompleta", "S" if s.complete else "N")
    _add(session, "SesionNueva", "S" if entry.rectifies is None else "N")
    _add(session, "MotivoFinSesion", context.end_reason)
    _add(player, "IP", context.ip)
    _add(player, "Dispositivo", context.device)
    _add(player, "IdDispositivo", context.device_id)


def render(entries: list[Entry], header: Header, created: datetime,
           context: PlayerContext = PlayerContext()) -> bytes:
    """The `Lote` document, UTF-8 with an XML declaration."""
    lote = ET.Element(_q("Lote"))
    head = _add(lote, "Cabecera")
    _add(head, "OperadorId", header.operator_id)
    _add(head, "AlmacenId", header.store_id)
    _add(head, "LoteId", header.lote_id)
    _add(head, "Version", VERSION)
    stamp = fecha(created)
    for entry in entries:
        registro = _add(lote, "Registro")
        registro.set(f"{{{XSI}}}type", "RegistroOtrosJuegos")
        _cabecera(registro, entry, stamp)
        _juego(registro, entry)
        _jugador(registro, entry, context)
    ET.indent(lote)
    body: bytes = ET.tostring(lote, encoding="utf-8", xml_declaration=True, default_namespace=NS)
    return body + b"\n"


REGISTROS_PER_CHUNK = 200  # records rendered at once by `write_lote` at most (its memory, whatever the batch's size)
PLAYS_PER_CHUNK = 2000  # ... and rounds of their sessions at most: a long session holds its plays (one chunk alone)
_REGISTRO_OPEN, _REGISTRO_CLOSE = b"<Registro ", b"</Registro>"


def write_lote(entries: Iterable[Entry], header: Header, created: datetime, out: BinaryIO,
               context: PlayerContext = PlayerContext(), chunk_size: int = REGISTROS_PER_CHUNK) -> None:
    """`render`'s bytes written to `out` a chunk of records at a time: each chunk is rendered as
    a whole batch by `render` itself and its records cut out (the namespaces are declared on the
    root and the indentation depends only on the depth, so the records' bytes are the same), the
    head taken from the first chunk, the records joined by the indentation `render` puts between."""
    first = True
    for chunk in _chunks(entries, chunk_size, PLAYS_PER_CHUNK):
        doc = render(chunk, header, created, context)
        start, end = doc.index(_REGISTRO_OPEN), doc.rindex(_REGISTRO_CLOSE) + len(_REGISTRO_CLOSE)
        out.write(doc[:start] if first else b"\n  ")
        out.write(doc[start:end])
        first = False
    out.write(render([], header, created, context) if first else b"\n</Lote>\n")


def _chunks(entries: Iterable[Entry], size: int, plays_max: int) -> Iterator[list[Entry]]:
    """Consecutive entries, at most `size` a chunk, and no more sessions' plays than `plays_max`
    once a chunk has one entry: each is held (with its session) only until its chunk is written."""
    chunk: list[Entry] = []
    plays = 0
    for entry in entries:
        if chunk and (len(chunk) >= size or plays + len(entry.session.plays) > plays_max):
            yield chunk
            chunk, plays = [], 0
        chunk.append(entry)
        plays += len(entry.session.plays)
    if chunk:
        yield chunk
