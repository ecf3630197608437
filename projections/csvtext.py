"""CSV as every list gives it (`ledger round list --csv`, GET /v1/rounds as text/csv, the
console's downloads): a header line, then a line a row; money as a plain decimal amount
beside a currency column, never as text for people (`1,234.56 EUR`)."""
from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Iterator, Sequence
from itertools import chain
from typing import Any

from domain.text import escaped


def amount(minor: int | None, exponent: int = 2) -> str:
    """`-1250` -> `-12.50` (empty for None): a number a spreadsheet reads."""
    if minor is None:
        return ""
    sign, whole = ("-" if minor < 0 else ""), abs(minor)
    return f"{sign}{whole // 10**exponent}.{whole % 10**exponent:0{exponent}d}"


def csv_lines(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> Iterator[str]:
    """The header and each row as one CSV line (RFC 4180 quoting, CRLF); None is empty; a
    control or bidi character from a feed is written as an escape (domain/text.py), as on
    the pages, and a cell a spreadsheet would run as a formula (`=`, `+`, `-`, `@` first,
    not a number) gets a `'` before it."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    for row in chain([header], rows):
        writer.writerow([_cell(v) for v in row])
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if not isinstance(value, str):
        return value
    text = escaped(value)
    if text[:1] in ("=", "+", "-", "@") and _NUMBER.fullmatch(text) is None:
        return "'" + text
    return text


_NUMBER = re.compile(r"-?\d+(\.\d+)?")  # a negative amount stays a number
