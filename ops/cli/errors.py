"""Why a command could not run: one line on standard error with a stable code, exit 2.

Exit statuses, the same for every command and with or without --json:
0 done; 1 the answer is "no" (findings, refusals, discrepancies); 2 the command could
not run (`ErrorCode`, domain/errorcodes.py); 3 `ledger settle` only: the round is not complete yet.
A traceback is printed only with `--debug`.
"""
from __future__ import annotations

import os

from domain.errorcodes import ErrorCode  # the one catalogue of error codes (the CLI's and the service's)

__all__ = ["EXIT_ERROR", "EXIT_NO", "EXIT_OK", "CliError", "ErrorCode", "check_input_file", "classify", "usage"]

EXIT_OK = 0
EXIT_NO = 1
EXIT_ERROR = 2


def markdown_table() -> str:
    """docs/cli.md's table of codes ("Exit statuses and errors"), one row per code the command line reports."""
    rows = [f"| `{c.value}` | {c.meaning} |" for c in ErrorCode if c.cli]
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
    from ledger.partitions import StoreLost
    from ledger.store import StoreUnavailable
    from ledger.unreachable import lost_store_errors

    if isinstance(exc, CliError):
        return exc
    if isinstance(exc, StoreUnavailable):
        return CliError(ErrorCode(exc.code), exc.message)  # type: ignore[call-arg]  # a lookup by value
    if isinstance(exc, TimeoutError):  # an OSError too, but no file's: NATS (asyncio) timeouts
        return CliError(ErrorCode.SERVICE_TIMEOUT, f"no answer in time: {_first_line(exc)}")
    if isinstance(exc, OSError):
        return _os_error(exc)
    if isinstance(exc, UnicodeDecodeError):
        return CliError(ErrorCode.INPUT_NOT_UTF8, f"not UTF-8 text: {exc.reason} at byte {exc.start}")
    if isinstance(exc, (*lost_store_errors(), StoreLost)):
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


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


if __name__ == "__main__":
    import sys

    if sys.argv[1:] != ["--markdown"]:
        sys.exit("usage: python -m ops.cli.errors --markdown")
    sys.stdout.write(markdown_table())
