"""Why a command could not run: one line on standard error with a stable code, exit 2.

Exit statuses, the same for every command and with or without --json:
0 done; 1 the answer is "no" (findings, refusals, discrepancies); 2 the command could
not run (`ErrorCode` below); 3 `ledger settle` only: the round is not complete yet.
A traceback is printed only with `--debug`.
"""
from __future__ import annotations

import os
import sqlite3
from enum import StrEnum

from eventsourcing.persistence import InterfaceError as LibraryInterfaceError
from eventsourcing.persistence import OperationalError as LibraryOperationalError

EXIT_OK = 0
EXIT_NO = 1
EXIT_ERROR = 2


class ErrorCode(StrEnum):
    """The stable codes of the errors that stop a command (exit 2), each with what it means.
    This is the one catalogue of them: refusal codes (a command refused, exit 1) live in
    domain/refusals.py. The README's table is generated from this one:

        python -m ops.errors --markdown
    """

    meaning: str

    def __new__(cls, code: str, meaning: str) -> ErrorCode:
        member = str.__new__(cls, code)
        member._value_ = code
        member.meaning = meaning
        return member

    USAGE = ("usage", "an unknown or invalid option or argument (`--since 2026-13-01`, `--since` not before "
                      "`--until`, `--limit -1`, `--operator-id OPERATOR1`, `--log-level verbose`)")
    INPUT_MISSING = ("input_missing", "an input file (feed, round file, wallet, export folder, XSD) that is not there")
    INPUT_IS_DIRECTORY = ("input_is_directory", "an input file that is a folder")
    INPUT_UNREADABLE = ("input_unreadable", "an input that cannot be read (no permission, an I/O error)")
    INPUT_NOT_UTF8 = ("input_not_utf8", "an input that is not UTF-8 text")
    INPUT_EMPTY = ("input_empty", "an input with nothing in it (a wallet file, an export, a range without events)")
    INPUT_INVALID = ("input_invalid", "an input that is not what the command reads (wallet columns, an export "
                                      "without manifest)")
    OUTPUT_NOT_EMPTY = ("output_not_empty", "`audit export` into a folder that is not empty")
    OUTPUT_UNWRITABLE = ("output_unwritable", "an output file (`--out`, `--html`, `--bundle`) that cannot be written")
    BAD_DB_URL = ("bad_db_url", "a store URL that is neither `sqlite:///FILE` nor `postgresql://…`")
    STORE_MISSING = ("store_missing", "a read command on a SQLite store that does not exist (nothing is created)")
    NO_LEDGER = ("no_ledger", "a read command on a store that holds no ledger (nothing is created)")
    DATABASE_MISSING = ("database_missing", "a PostgreSQL database that does not exist")
    STORE_UNREACHABLE = ("store_unreachable", "a store that does not answer (named at once, no retries)")
    STORE_NOT_EMPTY = ("store_not_empty", "`ledger demo --db` on a store that already holds data (`--force` "
                                          "deletes such a SQLite file first)")
    SERVICE_TIMEOUT = ("service_timeout", "a service the command talks to (NATS JetStream for `consume` and "
                                          "`publish`) did not answer in time, after retries")
    ADDRESS_IN_USE = ("address_in_use", "`ledger serve` on a host and port that another process holds (or that "
                                        "this user may not listen on)")
    EXPORT_REFUSED = ("export_refused", "`export dgoj`: data the DGOJ format cannot carry (an amount above 12 "
                                        "digits, a player id too long), or a batch not valid against `--xsd`; "
                                        "nothing written")
    REGISTER_FAILED = ("register_failed", "`export dgoj`: the file was written but the export register could not "
                                          "record it (the next export sends the same records again)")
    BUNDLE_REFUSED = ("bundle_refused", "`replay --bundle`: the dispute bundle cannot be made as asked (with "
                                        "`--at`, or a `--manifest` that does not cover the round)")
    INTERNAL = ("internal_error", "a bug: rerun with `--debug` and report it")


def markdown_table() -> str:
    """The README's table of codes ("Exit statuses and errors"), one row per code."""
    rows = [f"| `{c.value}` | {c.meaning} |" for c in ErrorCode]
    return "\n".join(["| code | cause |", "|---|---|", *rows]) + "\n"


class CliError(Exception):
    """Stop the command: `code` and a one-line `message` naming the cause."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def usage(message: str) -> CliError:
    return CliError(ErrorCode.USAGE, message)


def check_input_file(path: str) -> None:
    """Refuse an input file that is missing, a directory or unreadable, before anything
    is opened or created ('-' is standard input and always passes)."""
    if path == "-":
        return
    if os.path.isdir(path):
        raise CliError(ErrorCode.INPUT_IS_DIRECTORY, f"{path} is a directory, not a file")
    if not os.path.exists(path):
        raise CliError(ErrorCode.INPUT_MISSING, f"{path} does not exist")
    if not os.access(path, os.R_OK):
        raise CliError(ErrorCode.INPUT_UNREADABLE, f"{path} cannot be read (permission denied)")


def classify(exc: BaseException) -> CliError:
    """Any exception that ends a command -> the one line it is reported as."""
    from ledger.store import StoreUnavailable

    if isinstance(exc, CliError):
        return exc
    if isinstance(exc, StoreUnavailable):
        return CliError(ErrorCode(exc.code), exc.message)
    if isinstance(exc, TimeoutError):  # an OSError too, but no file's: NATS (asyncio) timeouts
        return CliError(ErrorCode.SERVICE_TIMEOUT, f"no answer in time: {_first_line(exc)}")
    if isinstance(exc, OSError):
        return _os_error(exc)
    if isinstance(exc, UnicodeDecodeError):
        return CliError(ErrorCode.INPUT_NOT_UTF8, f"not UTF-8 text: {exc.reason} at byte {exc.start}")
    if isinstance(exc, sqlite3.OperationalError | LibraryInterfaceError | LibraryOperationalError) \
            or _is_psycopg_operational(exc):
        return CliError(ErrorCode.STORE_UNREACHABLE, _first_line(exc))
    return CliError(ErrorCode.INTERNAL, f"{type(exc).__name__}: {_first_line(exc)} (rerun with --debug)")


def _os_error(exc: OSError) -> CliError:
    name = exc.filename or ""
    if isinstance(exc, FileNotFoundError):
        return CliError(ErrorCode.INPUT_MISSING, f"{name} does not exist")
    if isinstance(exc, IsADirectoryError):
        return CliError(ErrorCode.INPUT_IS_DIRECTORY, f"{name} is a directory, not a file")
    if isinstance(exc, PermissionError):
        return CliError(ErrorCode.INPUT_UNREADABLE, f"{name} cannot be read (permission denied)")
    return CliError(ErrorCode.INPUT_UNREADABLE, f"{name}: {exc.strerror or exc}")


def _is_psycopg_operational(exc: BaseException) -> bool:
    try:
        import psycopg
    except ImportError:  # pragma: no cover - psycopg is a dependency
        return False
    return isinstance(exc, psycopg.OperationalError)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


if __name__ == "__main__":
    import sys

    if sys.argv[1:] != ["--markdown"]:
        sys.exit("usage: python -m ops.errors --markdown")
    sys.stdout.write(markdown_table())
