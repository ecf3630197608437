"""The one home of the helpers the commands share: option types (a bad value is a usage
error, exit 2, naming the option, raised by argparse before anything is opened), the
period options (`--since/--until`) and progress on standard error (`--quiet`)."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime, timedelta
from types import TracebackType
from typing import Any
from uuid import UUID

from domain.errors import Refusal
from domain.operators import DEFAULT_OPERATOR_ID, OperatorScope, is_operator_id
from ops.cli.errors import CliError, ErrorCode, usage
from projections import queries
from projections.folding import Zones
from projections.read_service import Reading, ReadService
from projections.runner import CatchUp, Projector, stops_line


def int_range(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse type: a whole number in low..high (no upper bound when high is None)."""
    span = f"{low}..{high}" if high is not None else f">= {low}"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number ({span})") from None
        if value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"{value} is out of range ({span})")
        return value

    parse.__name__ = "whole number"  # argparse names the type in its messages
    return parse


def day(text: str) -> str:
    """An argparse type: a calendar day YYYY-MM-DD that exists (2026-13-01 does not)."""
    try:
        return date.fromisoformat(text).isoformat() if len(text) == 10 else _bad_day(text)
    except ValueError:
        return _bad_day(text)


def _bad_day(text: str) -> str:
    raise argparse.ArgumentTypeError(f"{text!r} is not a day like 2026-03-01")


def timezone(text: str) -> str:
    """An argparse type: an IANA time zone name (Europe/Malta) or UTC."""
    try:
        Zones.named(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def text_length(low: int, high: int) -> Callable[[str], str]:
    """An argparse type: text of low..high characters (an id with a fixed width in a format)."""
    def parse(text: str) -> str:
        if not low <= len(text) <= high:
            raise argparse.ArgumentTypeError(f"{text!r} must be {low}..{high} characters, it has {len(text)}")
        return text

    parse.__name__ = "text"
    return parse


def number_range(low: float, high: float, *, low_open: bool = False, high_open: bool = False) -> Callable[[str], float]:
    """An argparse type: a number in low..high (`low_open`/`high_open`: that end excluded)."""
    span = f"{'above' if low_open else 'from'} {low} {'below' if high_open else 'to'} {high}"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number ({span})") from None
        if not ((low < value) if low_open else (low <= value)) or not ((value < high) if high_open else (value <= high)):
            raise argparse.ArgumentTypeError(f"{value:g} is out of range ({span})")
        return value

    parse.__name__ = "number"
    return parse


# ------------------------------------------------------------------ periods
# One set of period options on every command that reads a period: `--since` inclusive,
# `--until` exclusive, each a day or an ISO 8601 time, UTC unless an offset is given.
PERIOD_HELP = "YYYY-MM-DD or an ISO 8601 time; UTC unless an offset is given"
DAYS_HELP = "YYYY-MM-DD"


def parse_instant(text: str) -> datetime:
    """`2026-11-21` -> midnight UTC that day; `2026-11-21T12:30` -> 12:30 UTC; offsets are kept."""
    try:
        if len(text) == 10:
            return datetime.combine(date.fromisoformat(text), datetime.min.time(), UTC)
        at = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a day (2026-11-21) or an ISO 8601 time") from None
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at


parse_instant.__name__ = "time"  # argparse names the type in its messages


def add_period_arguments(p: argparse.ArgumentParser, what: str, *, days: str | None = None,
                         old_day_options: bool = False) -> None:
    """`--since TIME` (inclusive) and `--until TIME` (exclusive). `days`: the command counts
    whole days (gaming days, UTC days), named so; a time there must be a midnight
    (`period_days`). `old_day_options`: `--from DAY`/`--to DAY` (last day inclusive) kept,
    hidden, for scripts written before the options were the same everywhere."""
    if days:
        p.add_argument("--since", type=parse_instant, metavar="DAY",
                       help=f"{what} on or after DAY ({DAYS_HELP}; {days})")
        p.add_argument("--until", type=parse_instant, metavar="DAY",
                       help=f"{what} before DAY (exclusive: --since 2026-11-21 --until 2026-11-22 is one day)")
    else:
        p.add_argument("--since", type=parse_instant, metavar="TIME", help=f"{what} at or after TIME ({PERIOD_HELP})")
        p.add_argument("--until", type=parse_instant, metavar="TIME", help=f"{what} before TIME (exclusive)")
    if old_day_options:
        p.add_argument("--from", dest="since", type=parse_instant, help=argparse.SUPPRESS)
        p.add_argument("--to", dest="until", type=_day_after, help=argparse.SUPPRESS)


def _day_after(text: str) -> datetime:
    """The old `--to DAY` named the last day included: `--until` is the day after it
    (the calendar's last day has none: its end is the largest time there is)."""
    try:
        return parse_instant(text) + timedelta(days=1)
    except OverflowError:
        return datetime.max.replace(tzinfo=UTC)


_day_after.__name__ = "day"


def check_period(args: argparse.Namespace) -> None:
    since, until = getattr(args, "since", None), getattr(args, "until", None)
    if since and until and since >= until:
        raise usage(f"--since {since.isoformat()} is not before --until {until.isoformat()}")


def period_days(args: argparse.Namespace) -> tuple[str | None, str | None]:
    """(first day, last day), both included, YYYY-MM-DD, for a command that counts whole
    days: `--until 2026-11-22` ends with the 21st. A time that is not a midnight is refused:
    such a command cannot count part of a day."""
    check_period(args)
    first = last = None
    for option, at in (("--since", args.since), ("--until", args.until)):
        if at is None:
            continue
        if at == datetime.max.replace(tzinfo=UTC):  # the old --to 9999-12-31
            last = date.max.isoformat()
            continue
        if at.time() != datetime.min.time():
            raise usage(f"{option} {at.isoformat()}: this command counts whole days; give a day (YYYY-MM-DD)")
        if option == "--since":
            first = at.date().isoformat()
        else:
            last = (at.date() - timedelta(days=1)).isoformat()
    return first, last


# ------------------------------------------------------------------ progress
PROGRESS_EVERY_S = 5.0  # off a terminal: one progress line per this many seconds


def add_quiet_argument(p: argparse.ArgumentParser, more: str = "") -> None:
    p.add_argument("--quiet", action="store_true",
                   help="no progress on standard error (a bar on a terminal, else a JSON line every few seconds)"
                   + (f" {more}" if more else ""))


class Progress:
    """How far a long command is, on standard error: a bar on a terminal; off one (a log
    file, a pipeline, a service manager) a JSON log line every PROGRESS_EVERY_S seconds,
    {"event": "progress", "command", "done", "total", "rate"} (rate: per second since the
    start; total null when not known), and a last one at the end when there were any (a
    command done sooner says nothing: its one result or error line stays alone); nothing
    with `quiet`."""

    def __init__(self, command: str, total: int | None = None, *, quiet: bool = False, done: int = 0) -> None:
        self.command, self.total, self.done, self.quiet = command, total, done, quiet
        self._first, self._started = done, time.monotonic()
        self._last_line = self._started
        self._lines = 0
        self._every_s = PROGRESS_EVERY_S
        self._bar: Any = None
        self._task: Any = None

    def __enter__(self) -> Progress:
        if not self.quiet and sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import Progress as Bar

            self._bar = Bar(console=Console(stderr=True), transient=True)
            self._bar.start()
            self._task = self._bar.add_task(self.command, total=self.total, completed=self.done)
        return self

    def advance(self, n: int = 1) -> None:
        self.update(self.done + n)

    def update(self, done: int, total: int | None = None) -> None:
        self.done = done
        if total is not None:
            self.total = total
        if self.quiet:
            return
        if self._bar is not None:
            self._bar.update(self._task, completed=done, total=self.total)
            return
        now = time.monotonic()
        if now - self._last_line >= self._every_s:
            self._line(now)

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.stop()
        elif self._lines and kind is None:
            self._line(time.monotonic())

    def _line(self, now: float) -> None:
        self._last_line, self._lines = now, self._lines + 1
        elapsed = now - self._started
        rate = (self.done - self._first) / elapsed if elapsed > 0 else 0.0
        line = {"event": "progress", "command": self.command, "done": self.done, "total": self.total,
                "rate": round(rate, 1), "level": "info",
                "timestamp": datetime.now(UTC).isoformat().replace("+00:00", "Z")}
        print(json.dumps(line), file=sys.stderr, flush=True)


def check_address_free(host: str, port: int) -> None:
    """Refuse a host:port another process listens on, before anything starts: the server
    would find out only after the store is opened, and report it in its own words."""
    import errno
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise usage(f"--host {host}: {exc.strerror}") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: TIME_WAIT is no owner
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise CliError(ErrorCode.ADDRESS_IN_USE,
                               f"{host}:{port} is in use by another process; stop it or give --port") from None
            raise CliError(ErrorCode.ADDRESS_IN_USE, f"cannot listen on {host}:{port}: {exc.strerror}") from None


def round_uuid_of(ref: str) -> UUID:
    """A round reference as every command takes it (`queries.round_ref`, the parser the HTTP
    routes and the console use too); a malformed one is a usage error."""
    try:
        return queries.round_ref(ref)
    except Refusal as refusal:
        raise usage(f"{refusal.code}: {refusal.message}") from None


def say_cut(command: str, listed: int, how: str, as_json: bool, **resume: int) -> None:
    """A list stopped at its limit says so, on standard error (stdout keeps only the rows,
    one JSON object per line with --json): a sentence naming how to see more, or with --json
    one JSON object, {"event": "list_cut", "command", "listed", "more": true, "next"} and
    the options that list the next rows (`resume`, e.g. "after": 1000)."""
    if as_json:
        line = {"event": "list_cut", "command": command, "listed": listed, "more": True, "next": how, **resume}
        print(json.dumps(line), file=sys.stderr)
    else:
        print(f"{listed} listed; there are more: {how}", file=sys.stderr)


def help_for(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace], int]:
    """The handler of a command group called without its action: its help, exit 2 (a usage error)."""
    def show(_args: argparse.Namespace) -> int:
        parser.print_help()
        return 2

    return show


Subparsers = argparse._SubParsersAction  # what `register(sub)` is given (ops/cli/__init__.py)
JSON_HELP = "JSON on stdout"


def add_command(sub: Subparsers[argparse.ArgumentParser], name: str, help: str,
                run: Callable[[argparse.Namespace], int] | None = None, *,
                description: str | None = None, epilog: str | None = None,
                wrap: bool = False) -> argparse.ArgumentParser:
    """A (sub)command's parser: its one-line help, description and examples (shown as written;
    `wrap`: the description refilled to the terminal instead) and the function it runs (none: a
    group of actions, whose run is its help)."""
    p = sub.add_parser(name, help=help, description=description, epilog=epilog,
                       formatter_class=argparse.HelpFormatter if wrap else argparse.RawDescriptionHelpFormatter)
    p.set_defaults(func=run or help_for(p))
    return p


def add_json_argument(p: argparse._ActionsContainer, help: str = JSON_HELP) -> None:
    p.add_argument("--json", action="store_true", help=help)


def operator_id(text: str) -> str:
    """An operator id as `--operator` takes it (domain/operators.py)."""
    if not is_operator_id(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not an operator id (letters, digits and _ . - only)")
    return text


def add_operator_argument(p: argparse.ArgumentParser, what: str = "figures") -> None:
    p.add_argument("--operator", type=operator_id, metavar="ID",
                   help=f"only this operator's players' {what} (a player is the pair operator, player id; "
                        f"bets whose feed names no operator are the operator {DEFAULT_OPERATOR_ID!r})")


def operator_scope(args: argparse.Namespace) -> OperatorScope:
    """The operators a read may show: `--operator`'s, or every operator."""
    return OperatorScope.of(getattr(args, "operator", None))


def add_db_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", metavar="URL", help="store URL (default: LEDGER_DB or sqlite:///./casino-ledger.db)")


def add_timezone_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--timezone", type=timezone, default=os.environ.get("LEDGER_TIMEZONE") or "UTC", metavar="ZONE",
                   help="the studio's time zone: days are gaming days there, by studio time; a round at a table "
                   "configured with a time zone of its own uses the zone in force when it was played (default: LEDGER_TIMEZONE or UTC)")


def gaming_day_zones(fallback: str) -> Zones:
    """A round at a configured table has the time zone of the configuration it opened under
    (kept by the views); `fallback` (--timezone) is every other round's."""
    return Zones.named(fallback)


def add_create_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--create", action="store_true",
                   help="make a new SQLite store when there is none at --db (without it, a missing file is an error)")


def existing_store(db: str | None, create: bool) -> str:
    """The store URL of a command that writes a store it is meant to find already made (`serve`,
    `consume`): a mistyped SQLite path would otherwise become an empty store answering ready.
    A missing file is store_missing unless `create`; PostgreSQL databases are never made here."""
    from ledger.store import db_url_from, env_for, safe_url

    url = db_url_from(db)
    path = env_for(url).get("SQLITE_DBNAME")
    if path and not create and not os.path.exists(path):
        raise CliError(ErrorCode.STORE_MISSING,
                       f"{safe_url(url)}: {path} does not exist; give --create to make a new store there")
    return url


@contextmanager
def open_views(db_url: str | None) -> Iterator[Reading]:
    """The views of the store, caught up (quietly), through the process's read service."""
    with ReadService.open(db_url) as service:
        stopped = service.catch_up().stopped
        if stopped:  # the answer comes from the views as they are: say which ones stand still
            print(f"ledger: views stopped: {stops_line(stopped)}", file=sys.stderr)
        with service.reading() as reading:
            yield reading


def catch_up_with_progress(projector: Projector, quiet: bool) -> CatchUp:
    start = min(projector.positions.values(), default=0)
    with Progress("project", quiet=quiet, done=start) as progress:
        return projector.catch_up(lambda position, head: progress.update(position, head))
