"""`--since` / `--until` arguments: a day or an instant, read as UTC when no offset is given."""
from __future__ import annotations

import argparse
from datetime import UTC, date, datetime

PERIOD_HELP = "YYYY-MM-DD or an ISO 8601 time (UTC unless an offset is given)"


def parse_instant(text: str) -> datetime:
    """`2026-11-21` -> midnight UTC that day; `2026-11-21T12:30` -> 12:30 UTC; offsets are kept."""
    try:
        if len(text) == 10:
            return datetime.combine(date.fromisoformat(text), datetime.min.time(), UTC)
        at = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a day (2026-11-21) or an ISO 8601 time") from None
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at


def add_period_arguments(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--since", type=parse_instant, metavar="TIME", help=f"{what} at or after TIME ({PERIOD_HELP})")
    p.add_argument("--until", type=parse_instant, metavar="TIME", help=f"{what} before TIME (exclusive)")
