"""`ledger export dgoj`: Spain's DGOJ monitoring export (v3.3), one
`RegistroOtrosJuegos` per player session at a live table (docs/dgoj.md), on the
regulator seam (`projections/regulator.py`: clock, atomic write, XSD validation)."""
from __future__ import annotations

import argparse
import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from domain.money import format_minor
from domain.operators import DEFAULT_OPERATOR_ID
from ledger.eventlog import EventLog
from ops.cli.errors import CliError, ErrorCode, check_input_file, usage
from ops.cli.options import (
    add_command,
    add_db_argument,
    add_json_argument,
    add_period_arguments,
    check_period,
    number_range,
    operator_id,
    text_length,
)
from projections import regulator
from projections.dgoj import (
    SESSION_GAP_DEFAULT,
    SESSION_GAP_MAX,
    TEEN_PATTI_CHOICES,
    TEEN_PATTI_DEFAULT,
    ExportRules,
)
from projections.dgoj_register import ensure, record_rows
from projections.dgoj_stream import SessionExport, Tally
from projections.dgoj_xml import ExportError, Header, fecha, write_lote
from projections.regulator import validate_xsd as validate
from projections.regulator import write_atomically as _write_atomically
from projections.sql import Db

DGOJ_DESCRIPTION = """\
Write the DGOJ (Spain) monitoring batch, v3.3: a Lote with its Cabecera and one
Registro xsi:type="RegistroOtrosJuegos" per player session: JuegoEnVivo S, the
table as MesaId, stakes in Participacion, refunds of voided rounds in
ParticipacionDevolucion, what settlements returned in Premios, Botes zero,
PartidasJugadas; blackjack is BLJ, baccarat PUN. A session is a player's rounds
at one table with no gap above --session-gap-minutes (studio time); it belongs
to the period of its first bet, and is written once all its rounds are settled
or voided (until then it is pending).

Every record written is kept in the store's export register
(proj_dgoj_register), so running the export again writes only what is new:
sessions of the period not sent yet, and, whatever its period, for a session
that changed since it was sent (a settlement reversed and the round voided) a
new record whose Rectificacion names the record it replaces. Teen Patti has no TipoJuego in v3.3: by default
its sessions are left out and counted in the summary (--teen-patti)."""
DGOJ_EPILOG = """\
Sessions, money, field map and the register: docs/dgoj.md.
Exit status: 0 written, 2 could not run (bad arguments, store, or the batch is
not valid against --xsd: then nothing is written and nothing registered).

Examples:
  ledger export dgoj --operator-id OP01 --store-id ALM1 --out lote.xml \\
      --since 2026-11-21 --until 2026-11-22 --xsd ops/schemas/DGOJ_Monitorizacion_3.3.xsd
  ledger export dgoj --operator-id OP01 --store-id ALM1 --out preview.xml --no-register --json
"""


def add(esub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`ledger export dgoj` under `ledger export` (ops/cli/commands/export.py)."""
    d = add_command(esub, "dgoj", "Spain DGOJ monitoring batch v3.3 (RegistroOtrosJuegos per session)", run_dgoj,
                    description=DGOJ_DESCRIPTION, epilog=DGOJ_EPILOG)
    add_db_argument(d)
    add_period_arguments(d, "sessions whose first bet is")
    d.add_argument("--operator-id", required=True, type=text_length(1, 4), metavar="ID",
                   help="OperadorId (1..4 characters)")
    d.add_argument("--operator", type=operator_id, default=DEFAULT_OPERATOR_ID, metavar="ID",
                   help="the ledger operator whose players the batch holds (default: the operator "
                        f"{DEFAULT_OPERATOR_ID!r}, of every bet whose feed names none); one batch never holds "
                        "another operator's players")
    d.add_argument("--store-id", required=True, type=text_length(1, 10), metavar="ID",
                   help="AlmacenId (1..10 characters)")
    d.add_argument("--out", required=True, metavar="FILE.xml", help="where to write the batch")
    d.add_argument("--lote-id", metavar="ID", help="LoteId (default OPERATOR-STORE-yyyymmddhhmmss, UTC now)")
    d.add_argument("--xsd", metavar="PATH", help="validate against this XSD (the regulator's copy) before writing")
    d.add_argument("--session-gap-minutes", type=number_range(0, SESSION_GAP_MAX.days * 1440, low_open=True),
                   default=SESSION_GAP_DEFAULT.total_seconds() / 60,
                   metavar="M", help=f"a longer pause ends a session (default {SESSION_GAP_DEFAULT.seconds // 60})")
    d.add_argument("--teen-patti", choices=TEEN_PATTI_CHOICES, default=TEEN_PATTI_DEFAULT,
                   help="Teen Patti sessions: omit (default: left out, counted in the summary), or report them "
                        "under TipoJuego COM or AZA")
    d.add_argument("--no-register", action="store_true",
                   help="a preview: write the file but do not record it (a later export sends the same again)")
    add_json_argument(d, "the summary as JSON on stdout")


def run_dgoj(args: argparse.Namespace) -> int:
    gap = timedelta(minutes=args.session_gap_minutes)
    check_period(args)
    if args.xsd:
        check_input_file(args.xsd)
    now = regulator.now()  # the seam's clock (tests fix it)
    try:
        header = Header(args.operator_id, args.store_id, args.lote_id or
                        f"{args.operator_id}-{args.store_id}-{fecha(now)}")
    except ExportError as exc:  # --lote-id: the other ids are checked as options
        raise usage(str(exc)) from None
    try:
        return _export(args, ExportRules(gap, args.teen_patti), header, now)
    except ExportError as exc:  # data the format cannot carry: nothing written
        raise CliError(ErrorCode.EXPORT_REFUSED, str(exc)) from None


def _export(args: argparse.Namespace, rules: ExportRules, header: Header, now: datetime) -> int:
    """Sessions streamed from the store to the file (projections/dgoj_stream.py: memory flat in
    the rounds), validated in the file before it is renamed into place, then registered."""
    log = EventLog.open(args.db)
    db = Db.for_store(log.backend)
    try:
        if not args.no_register:
            ensure(db)
        with SessionExport(log, db, rules, fecha(now), header.lote_id, args.since, args.until,
                           args.operator) as export:
            xsd = Path(args.xsd) if args.xsd else None
            try:
                errors = _write_atomically(Path(args.out), lambda f: write_lote(export.entries(), header, now, f),
                                           lambda path: validate(path, xsd) if xsd else [])
            except OSError as exc:
                raise CliError(ErrorCode.OUTPUT_UNWRITABLE, f"cannot write {args.out}: {exc.strerror or exc}; "
                               "nothing registered") from None
            if errors:
                raise CliError(ErrorCode.EXPORT_REFUSED, f"the batch is not valid against {args.xsd} "
                               f"({len(errors)} errors; nothing written): {errors[0]}")
            if not args.no_register:
                try:
                    record_rows(db, export.register_pages())
                except Exception as exc:  # the file is out: say so in one line, the next export resends
                    raise CliError(ErrorCode.REGISTER_FAILED, f"{args.out} was written but the register could "
                                   f"not record it ({exc}); the next export sends these records again") from None
            info = summary(export.tally, args, header)
    finally:
        db.close()
        log.close()
    _print_summary(info, args.json)
    return 0


def summary(tally: Tally, args: argparse.Namespace, header: Header) -> dict[str, Any]:
    return {
        "out": args.out, "lote_id": header.lote_id, "records": tally.records, "new": tally.new,
        "rectifications": tally.rectifications, "unchanged": tally.unchanged,
        "pending": {"sessions": tally.pending_sessions, "rounds_open": tally.pending_rounds_open},
        "omitted": {"rule": f"teen-patti={args.teen_patti}", "sessions": tally.omitted_sessions,
                    "rounds": tally.omitted_rounds, "money": tally.omitted_money},
        "totals": tally.totals, "validated_against": args.xsd, "registered": not args.no_register,
        "through": tally.through,
    }


def _print_summary(info: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps(info, indent=2))
        return
    print(f"wrote {info['out']}: batch {info['lote_id']}, {info['records']} records ({info['new']} new, "
          f"{info['rectifications']} rectifications); {info['unchanged']} sessions already sent, unchanged; "
          f"the store as of position {info['through']}")
    for currency, t in sorted(info["totals"].items()):
        print(f"  stakes {format_minor(t['participacion_minor'], currency)}, refunds "
              f"{format_minor(t['devolucion_minor'], currency)}, returned {format_minor(t['premios_minor'], currency)}")
    pending, omitted = info["pending"], info["omitted"]
    if pending["sessions"]:
        print(f"  pending: {pending['sessions']} sessions with {pending['rounds_open']} rounds not settled or "
              "voided yet (a later export sends them)")
    if omitted["sessions"]:
        print(f"  left out ({omitted['rule']}): {omitted['sessions']} sessions, {omitted['rounds']} rounds")
    if info["validated_against"]:
        print(f"  valid against {info['validated_against']}")
    if not info["registered"]:
        print("  not registered (--no-register): a later export sends the same records again")
