"""`ledger export ksa` and `ledger export verify`: the Netherlands' KSA control database
(CDB v1.11) batches, signed, encrypted and chained (docs/ksa.md), on the regulator seam
(`projections/regulator.py`)."""
from __future__ import annotations

import argparse
import json
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from domain.money import format_minor
from domain.operators import DEFAULT_OPERATOR_ID
from ledger.eventlog import EventLog
from ops.cli.errors import CliError, ErrorCode, check_input_file
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
from projections.dgoj import SESSION_GAP_DEFAULT, SESSION_GAP_MAX, ExportRules
from projections.regulator import Period, Scope
from projections.sql import Db

# The KSA modules load lxml and cryptography (~14 MiB and a tenth of a second): imported by
# the two commands that use them, not by every `ledger` command that builds the parser.
if TYPE_CHECKING:
    from projections.ksa_stream import Tally
    from projections.ksa_xml import Keys

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas" / "nl-ksa"  # ops/schemas/nl-ksa: the KSA's XSDs, unchanged

KSA_DESCRIPTION = """\
Write the KSA (Netherlands) control database batches, CDB v1.11, into DIR:
WOK_Game (each rule set, CASINO), WOK_Game_Session (a player's rounds at one table,
the same sessions as DGOJ's) and WOK_Player_Account_Transaction (per player and
round: STAKE, WINNING, VOID_STAKE), at most 512 records of one type a file. Each
batch is the data file zipped (ksa-NNNNNN.zip), encrypted to every --recipient-cert
(ksa-NNNNNN.zip.enc: AES-256-GCM, the key wrapped by RSA-OAEP) and described by a
signed ControlManifest (ksa-NNNNNN.manifest.xml) chained by SHA-256 to the batch
before, across runs. A session is sent once all its rounds are settled or voided.

The export register (proj_ksa_register, proj_ksa_manifests) keeps what was sent:
running again sends only what is new or changed; a changed record is sent again
naming the one it replaces (Replaced_Record_ID); a transaction sent that no longer
holds (the winnings of a round reversed and voided) is cancelled (KSA_Cancellation)."""
KSA_EPILOG = """\
Files, field map, corrections and the chain: docs/ksa.md.
Exit status: 0 written, 2 could not run (bad arguments, keys, store, or DIR).

Examples:
  ledger export ksa --out ksa/ --signing-key op.key.pem --signing-cert op.pem --recipient-cert ksa.pem
  ledger export verify ksa/ --signing-cert op.pem
"""
VERIFY_DESCRIPTION = """\
Check the KSA batches in DIR from the files alone: every manifest and data file
against the KSA's XSDs (with the W3C signature and encryption schemas), each
manifest's signature, the SHA-256 chain from the first manifest (a missing or
reordered batch breaks it), each batch file's hash and size, record counts and
times. With --db, also against the store's register of what was sent (the
--operator's): a batch sent missing (the last ones too, which the files alone
cannot show), a manifest never sent, a manifest or zip not the one sent. One line
per finding, naming the file."""


def add(esub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`ledger export ksa` and `ledger export verify` (ops/cli/commands/export.py)."""
    k = add_command(esub, "ksa", "Netherlands KSA control database batches v1.11 (signed, encrypted, chained)",
                    run_ksa, description=KSA_DESCRIPTION, epilog=KSA_EPILOG)
    add_db_argument(k)
    add_period_arguments(k, "sessions whose first bet is")
    k.add_argument("--out", required=True, metavar="DIR", help="the folder the batches go to (created if missing)")
    k.add_argument("--signing-key", required=True, metavar="KEY.pem", help="the operator's RSA private key (PEM)")
    k.add_argument("--signing-cert", required=True, metavar="CERT.pem", help="its certificate (PEM)")
    k.add_argument("--recipient-cert", required=True, action="append", metavar="KSA.pem",
                   help="a recipient's certificate (PEM); repeat for several")
    k.add_argument("--operator", type=operator_id, default=DEFAULT_OPERATOR_ID, metavar="ID",
                   help="the ledger operator whose players and bets the batches hold, with its own register "
                        f"and manifest chain (default: the operator {DEFAULT_OPERATOR_ID!r}, of every bet whose "
                        "feed names none); give each operator its own --out")
    k.add_argument("--operator-id", type=text_length(1, 256), default=DEFAULT_OPERATOR_ID, metavar="ID",
                   help=f"Operator_ID, the licensee's KSA id (default {DEFAULT_OPERATOR_ID})")
    k.add_argument("--data-safe-id", type=text_length(1, 256), default="ledger", metavar="ID",
                   help="Data_Safe_ID (default ledger)")
    k.add_argument("--session-gap-minutes", type=number_range(0, SESSION_GAP_MAX.days * 1440, low_open=True),
                   default=SESSION_GAP_DEFAULT.total_seconds() / 60, metavar="M",
                   help=f"a longer pause ends a session (default {SESSION_GAP_DEFAULT.seconds // 60})")
    add_json_argument(k, "the summary as JSON on stdout")
    v = add_command(esub, "verify", "check KSA batches in a folder: XSDs, signatures, the chain, hashes, counts",
                    run_verify, description=VERIFY_DESCRIPTION,
                    epilog="Exit status: 0 verified, 1 findings, 2 could not run.\n\nExample:\n"
                           "  ledger export verify ksa/ --signing-cert op.pem\n"
                           "  ledger export verify ksa/ --db postgresql://ledger@db/ledger --operator op-nl\n")
    v.add_argument("dir", metavar="DIR", help="the folder `ledger export ksa --out` wrote")
    v.add_argument("--signing-cert", metavar="CERT.pem",
                   help="the signer's certificate (default: the one each manifest carries)")
    v.add_argument("--db", metavar="URL",
                   help="also check DIR against this store's register of the batches sent (no default: without "
                        "it, the files alone)")
    v.add_argument("--operator", type=operator_id, default=DEFAULT_OPERATOR_ID, metavar="ID",
                   help=f"with --db: whose register (the export's --operator; default {DEFAULT_OPERATOR_ID!r})")
    add_json_argument(v, "the findings as JSON on stdout")


def _keys(args: argparse.Namespace) -> Keys:
    from projections.ksa_xml import Keys

    for path in (args.signing_key, args.signing_cert, *args.recipient_cert):
        check_input_file(path)
    try:
        return Keys.load(Path(args.signing_key), Path(args.signing_cert), [Path(p) for p in args.recipient_cert])
    except (ValueError, TypeError) as exc:
        raise CliError(ErrorCode.INPUT_INVALID, f"keys: {exc}") from None


def scope(args: argparse.Namespace) -> Scope:
    """Whose players and bets the export holds: the `--operator`'s (one licensee's batches)."""
    return Scope(args.operator)


def run_ksa(args: argparse.Namespace) -> int:
    from projections.ksa import KsaError
    from projections.ksa_register import ensure
    from projections.ksa_stream import KsaExport, RegisterError, Target

    check_period(args)
    keys = _keys(args)
    log = EventLog.open(args.db)  # the store first: a missing one leaves no folder behind
    db = Db.for_store(log.backend)
    try:
        out = Path(args.out)
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CliError(ErrorCode.OUTPUT_UNWRITABLE, f"cannot make {out}: {exc.strerror or exc}") from None
        target = Target(out, args.operator_id, args.data_safe_id, keys, regulator.now())
        ensure(db)
        export = KsaExport(log, db, scope(args), Period(args.since, args.until), target,
                           ExportRules(timedelta(minutes=args.session_gap_minutes)))
        tally = export.run()
    except KsaError as exc:
        raise CliError(ErrorCode.EXPORT_REFUSED, f"{exc}; the batches before it are written and registered") from None
    except RegisterError as exc:
        raise CliError(ErrorCode.REGISTER_FAILED, f"{exc}; its files were removed, the batches before it are "
                       "written and registered; the next export writes it again") from None
    except FileExistsError as exc:
        raise CliError(ErrorCode.OUTPUT_UNWRITABLE, f"{exc.filename} is already there (a batch of another "
                       "register?); nothing of that batch registered") from None
    except OSError as exc:
        raise CliError(ErrorCode.OUTPUT_UNWRITABLE, f"cannot write in {args.out}: {exc.strerror or exc}; the "
                       "batches before it are written and registered") from None
    finally:
        db.close()
        log.close()
    _print(_summary(tally, args), args.json)
    return 0


def _summary(tally: Tally, args: argparse.Namespace) -> dict[str, Any]:
    return {"out": args.out, "operator": args.operator, "batches": tally.batches, "records": tally.records,
            "new": tally.new, "replacements": tally.replacements, "cancellations": tally.cancellations,
            "sessions_unchanged": tally.unchanged, "sessions_pending": tally.pending_sessions,
            "money_minor": tally.money, "through": tally.through}


def _print(info: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps(info, indent=2))
        return
    batches = info["batches"]
    print(f"wrote {len(batches)} batches to {info['out']}" + (f" ({batches[0]} .. {batches[-1]})" if batches else "")
          + f": {sum(info['records'].values())} records ({info['new']} new, {info['replacements']} replacing, "
          f"{info['cancellations']} cancellations); the store as of position {info['through']}")
    m = info["money_minor"]
    print(f"  stakes {format_minor(m['STAKE'], 'EUR')}, winnings {format_minor(m['WINNING'], 'EUR')}, "
          f"refunds {format_minor(m['VOID_STAKE'], 'EUR')} (what these batches change)")
    if info["sessions_pending"]:
        print(f"  pending: {info['sessions_pending']} sessions with a round not settled or voided yet")


def _against_register(directory: Path, url: str, operator: str) -> list[regulator.Finding]:
    from projections.ksa_register import sent_batches
    from projections.ksa_verify import against_register

    log = EventLog.open(url)
    db = Db.for_store(log.backend)
    try:
        return against_register(directory, sent_batches(db, operator), operator)
    finally:
        db.close()
        log.close()


def run_verify(args: argparse.Namespace) -> int:
    from projections.ksa_verify import verify

    directory = Path(args.dir)
    if not directory.exists():
        raise CliError(ErrorCode.INPUT_MISSING, f"{args.dir} does not exist")
    if not directory.is_dir():
        raise CliError(ErrorCode.INPUT_INVALID, f"{args.dir} is a file; give the folder `ledger export ksa` wrote")
    cert = None
    if args.signing_cert:
        check_input_file(args.signing_cert)
        cert = Path(args.signing_cert).read_bytes()
    result = verify(directory, SCHEMAS, cert)
    if args.db is not None:
        result.findings += _against_register(directory, args.db, args.operator)
    if args.json:
        print(json.dumps({"dir": args.dir, "batches": result.batches, "records": result.records,
                          "findings": [{"file": f.file, "finding": f.message} for f in result.findings]}, indent=2))
    else:
        for f in result.findings:
            print(f"{f.file}: {f.message}")
        print(f"{args.dir}: {result.batches} batches, {result.records} records, "
              + (f"{len(result.findings)} findings" if result.findings else "verified"))
    return 1 if result.findings else 0
