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
    """Stable codes of the errors that stop a command (README, "Exit statuses")."""

    USAGE = "usage"  # an unknown or invalid option or argument
    INPUT_MISSING = "input_missing"  # an input file that does not exist
    INPUT_IS_DIRECTORY = "input_is_directory"
    INPUT_UNREADABLE = "input_unreadable"  # no permission, or an I/O error
    INPUT_NOT_UTF8 = "input_not_utf8"
    INPUT_EMPTY = "input_empty"  # an input with nothing in it (a wallet file, an export)
    INPUT_INVALID = "input_invalid"  # a file that is not what the command reads (columns, manifest)
    OUTPUT_NOT_EMPTY = "output_not_empty"  # a folder that would be overwritten
    BAD_DB_URL = "bad_db_url"
    STORE_MISSING = "store_missing"  # a SQLite file that does not exist
    NO_LEDGER = "no_ledger"  # a store without the ledger's tables
    DATABASE_MISSING = "database_missing"  # a PostgreSQL database that does not exist
    STORE_UNREACHABLE = "store_unreachable"
    STORE_NOT_EMPTY = "store_not_empty"  # `ledger demo` on a store that holds events
    SERVICE_TIMEOUT = "service_timeout"  # a service (NATS) did not answer in time
    INTERNAL = "internal_error"  # a bug: rerun with --debug and report it


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
    from domain.errors import Refusal
    from ledger.store import StoreUnavailable

    if isinstance(exc, CliError):
        return exc
    if isinstance(exc, StoreUnavailable):
        return CliError(ErrorCode(exc.code), exc.message)
    if isinstance(exc, Refusal) and exc.code == "bad_db_url":
        return CliError(ErrorCode.BAD_DB_URL, exc.message)
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
