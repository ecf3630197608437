"""The catalogue of error codes: why a command of the command line could not run (exit 2),
and why the HTTP service refused a request (an RFC 9457 problem's `code`). Refusal codes
(a command the ledger refuses) are the other catalogue, domain/refusals.py; no code is in both.

Every code is declared here once and raised by name (`ErrorCode.BAD_DB_URL`), by the
ledger (ledger/store.py), the command line (ops/cli/errors.py) and the live service
(ops/service/problems.py). `http_status` is the status the service answers a code with
(None: the command line's only); `cli` says whether the command line reports it (the
docs/cli.md's table lists those: `python -m ops.cli.errors --markdown`).
"""
from __future__ import annotations

from enum import StrEnum


class ErrorCode(StrEnum):
    """A stable snake_case error code with its meaning (a member equals its string)."""

    meaning: str
    http_status: int | None
    cli: bool

    def __new__(cls, code: str, meaning: str, http_status: int | None = None, cli: bool = True) -> ErrorCode:
        member = str.__new__(cls, code)
        member._value_ = code
        member.meaning = meaning
        member.http_status = http_status
        member.cli = cli
        return member

    # ------------------------------------------------- the command line (exit 2)
    USAGE = ("usage", "an unknown or invalid option or argument (`--since 2026-13-01`, `--since` not before "
                      "`--until`, `--limit -1`, `--operator-id OPERATOR1`, `--log-level verbose`)")
    INPUT_MISSING = ("input_missing", "an input file (feed, round file, wallet, export folder, XSD) that is not there")
    INPUT_IS_DIRECTORY = ("input_is_directory", "an input file that is a folder")
    INPUT_UNREADABLE = ("input_unreadable", "an input that cannot be read (no permission, an I/O error)")
    INPUT_NOT_UTF8 = ("input_not_utf8", "an input that is not UTF-8 text", 422)
    INPUT_EMPTY = ("input_empty", "an input with nothing in it (a wallet file, an export, a range without events)",
                   422)
    INPUT_INVALID = ("input_invalid", "an input that is not what the command reads (wallet columns, an export "
                                      "without manifest)", 422)
    OUTPUT_NOT_EMPTY = ("output_not_empty", "`audit export` into a folder that is not empty")
    OUTPUT_UNWRITABLE = ("output_unwritable", "an output file (`--out`, `--html`, `--bundle`) that cannot be written")
    BAD_DB_URL = ("bad_db_url", "a store URL that is neither `sqlite:///FILE` nor `postgresql://…`")
    STORE_MISSING = ("store_missing", "a read command, `serve` or `consume` on a SQLite store that does not exist "
                     "(nothing is created; `serve --create` and `consume --create` make one)")
    NO_LEDGER = ("no_ledger", "a read command on a store that holds no ledger (nothing is created)")
    DATABASE_MISSING = ("database_missing", "a PostgreSQL database that does not exist")
    STORE_UNREACHABLE = ("store_unreachable", "a store that does not answer (named at once, no retries)")
    STORE_NOT_EMPTY = ("store_not_empty", "`ledger demo --db` on a store that already holds data (`--force` "
                                          "deletes such a SQLite file first)")
    SERVICE_TIMEOUT = ("service_timeout", "a service the command talks to (NATS JetStream for `consume` and "
                                          "`publish`) did not answer in time, after retries")
    ADDRESS_IN_USE = ("address_in_use", "`ledger serve` on a host and port that another process holds (or that "
                                        "this user may not listen on)")
    EXPORT_REFUSED = ("export_refused", "`export dgoj`, `export ksa`: data the format cannot carry (DGOJ: an "
                                        "amount above 12 digits, a player id too long, a batch not valid against "
                                        "`--xsd`, nothing written; KSA: a currency other than EUR, an id above 256 "
                                        "characters, the batches before it written and registered)")
    REGISTER_FAILED = ("register_failed", "`export dgoj`: the file was written but the export register could not "
                                          "record it (the next export sends the same records again); `export ksa`: "
                                          "a batch could not be registered (its files removed, the next export "
                                          "writes it again)")
    BUNDLE_REFUSED = ("bundle_refused", "`replay --bundle`: the dispute bundle cannot be made as asked (with "
                                        "`--at`, or a `--manifest` that does not cover the round)")
    CHAIN_MISMATCH = ("chain_mismatch", "`replay --proof`, `--html`, `--bundle`, the dispute page: the audit chain "
                                        "kept in the store disagrees with the events stored (an event changed after "
                                        "it was chained); no proof is made from it", 409)
    INTERNAL = ("internal_error", "a bug: rerun with `--debug` and report it", 500)

    # ------------------------------------------------- the live service only (`ledger serve`)
    BAD_REQUEST = ("bad_request", "a request the service cannot read (malformed HTTP, a malformed multipart form)",
                   400, False)
    UNAUTHORIZED = ("unauthorized", "no API key, or one the store does not know or has revoked "
                                    "(`Authorization: Bearer KEY`)", 401, False)
    FORBIDDEN = ("forbidden", "a valid API key whose role may not use the route", 403, False)
    OPERATOR_FORBIDDEN = ("operator_forbidden", "a read of an operator the API key is not limited to "
                                                    "(`?operator=` or a player of another operator, a key made "
                                                    "with `ledger keys add --operator`), or a route that shows "
                                                    "every operator (the audit trail, refused commands)", 403, False)
    NOT_FOUND = ("not_found", "no route at this path", 404, False)
    ROUND_NOT_FOUND = ("round_not_found", "no round of that UUID or TABLE#ROUND_NO in the store", 404, False)
    METHOD_NOT_ALLOWED = ("method_not_allowed", "the route does not answer this HTTP method", 405, False)
    REQUEST_TIMEOUT = ("request_timeout", "the request's headers or body did not arrive in time", 408, False)
    BODY_TOO_LARGE = ("body_too_large", "a body (or an uploaded file) larger than the service accepts", 413, False)
    TOO_MANY_COMMANDS = ("too_many_commands", "more commands in one request than the service accepts", 413, False)
    UNSUPPORTED_MEDIA_TYPE = ("unsupported_media_type", "a Content-Type the route does not read", 415, False)
    REQUEST_INVALID = ("request_invalid", "a path, query or form parameter missing, of the wrong type, out of "
                                          "its range, or holding a control or bidirectional formatting character "
                                          "(`errors` names each)", 422, False)
    UNKNOWN_PARAMETER = ("unknown_parameter", "a query parameter the route does not take (a misspelt or "
                                              "unsupported filter is refused, never ignored; `errors` names it)",
                         422, False)
    BODY_NOT_JSON = ("body_not_json", "a POST /v1/commands body that is not JSON (or not UTF-8)", 422, False)
    BODY_NOT_ARRAY = ("body_not_array", "a JSON POST /v1/commands body that is not an array of commands",
                      422, False)
    HEADERS_TOO_LARGE = ("headers_too_large", "a request line and headers larger than the service accepts",
                         431, False)
    HEADERS_TOO_MANY = ("headers_too_many", "more headers than the service accepts", 431, False)
    STORE_UNAVAILABLE = ("store_unavailable", "the store did not answer in time or failed: nothing of the request "
                                              "is known to be done; send it again after Retry-After", 503, False)


class EmptyPeriod(StrEnum):
    """Why a period asked for (`--since/--until`, a console form) holds nothing: said beside the
    empty answer, so that an empty check is never read as a clean one."""

    meaning: str

    def __new__(cls, code: str, meaning: str) -> EmptyPeriod:
        member = str.__new__(cls, code)
        member._value_ = code
        member.meaning = meaning
        return member

    NO_PLAY = ("no_play", "the store has events recorded during or after the period, but none played on its "
                          "gaming days")
    NOTHING_RECORDED = ("nothing_recorded", "the store's last event was recorded before the period began (or "
                                            "the store holds none): nothing of it can be there yet")
