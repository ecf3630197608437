"""Option types shared by the commands: a bad value is a usage error (exit 2) naming
the option, raised by argparse before anything is opened."""
from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import date
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ops.errors import usage


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
        ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError):
        raise argparse.ArgumentTypeError(f"{text!r} is not a time zone name like Europe/Malta or UTC") from None
    return text


def check_day_range(day_from: str | None, day_to: str | None) -> None:
    if day_from and day_to and day_from > day_to:
        raise usage(f"--from {day_from} is after --to {day_to}")
