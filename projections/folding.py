"""What a view's fold uses: the rows it reads and writes and where they are kept (below),
the `View` that names a fold and its tables, `Zones` and the text forms of the times, days
and fractions rows hold.

A view's fold is `fold(rows, event)`: it reads rows through
`rows.get(table, key)` (never to be changed), and writes through the page's own
rows: `rows.edit(table, key)` gives this page's copy of a row (its JSON lists
and dicts copied too), which the fold changes in place; `rows.put(table, row)`
adds a new row. So a row touched by many events of a page is copied once per
page, not once per event, and nothing else is built per change. `MemoryRows`
keeps rows in dicts (unit tests, no database); `CachedRows` is the runner's:
reads fall through a page overlay and a cache to the database; a folded page is
sealed (its rows become the rows to write, and the cache), written in one
transaction, and any failure drops the whole cache (`forget`), which is then
refilled from the database.
"""
from __future__ import annotations

import hashlib
import json
import operator
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from fractions import Fraction
from typing import Any, Protocol
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import orjson

from domain.errors import require
from domain.text import storable
from ledger.records import Postings, Record, RecordType, SettlementLine
from projections.sql import Db, Table, select_sql

# The cache keeps the rows folds touched lately, in two generations: when the young one
# holds more than CACHE_ROWS_YOUNG rows (checked as rows are read, and once a sealed page
# joined it) it becomes the old one and the old one is dropped (a row read again is moved
# back to the young one). So while a page is folded the cache holds the last sealed page's
# rows (as written: values, JSON as text) and the rows read since; rows of finished rounds
# are never touched again, so the cache stays flat in the number of rounds (keeping every
# row ever written, or turning the generations only at page ends, let the peak memory grow
# with the rounds: docs/benchmarks.md). A dropped row is read back from the database.
CACHE_ROWS_YOUNG = 1_000
# Keys of dropped rows, in a fixed-size bit set (two bits a key): while the cache was
# complete (fresh views), a miss on a key that is not in it needs no database read. A
# false positive only costs a read; the set never grows.
EVICTED_BITS = 1 << 23  # 1 MiB; a power of two (bits are picked by mask)
_MISSING = object()


class Rows(Protocol):
    def get(self, table: str, key: tuple[Any, ...]) -> dict[str, Any] | None:
        """The row, to read only (it may be the cache's, or this page's)."""

    def edit(self, table: str, key: tuple[Any, ...]) -> dict[str, Any] | None:
        """The row as this page's own copy, to change in place (None: no such row)."""

    def put(self, table: str, row: dict[str, Any]) -> None:
        """A new row (or a whole new version of one), now this page's own."""


def key_of(table: Table, row: dict[str, Any]) -> tuple[Any, ...]:
    if len(table.key) == 1:
        return (row[table.key[0]],)
    return tuple([row[k] for k in table.key])


def key_getter(table: Table) -> Callable[[dict[str, Any]], tuple[Any, ...]]:
    """A fast `key_of` for one table."""
    if len(table.key) == 1:
        column = table.key[0]
        return lambda row: (row[column],)
    return operator.itemgetter(*table.key)


def own_copier(table: Table) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """row -> a copy a fold may change in place: the dict, and its JSON values (lists and
    dicts, which folds extend or update; the values inside them are never changed in place)."""
    json_columns = table.json_columns
    if not json_columns:
        return dict.copy

    def own(row: dict[str, Any]) -> dict[str, Any]:
        mine = row.copy()
        for column in json_columns:
            value = mine[column]
            if value is not None:
                mine[column] = value.copy()
        return mine

    return own


# ------------------------------------------------------------------ helpers
def day_of(timestamp: datetime) -> str:
    """The UTC calendar day of a server timestamp, `YYYY-MM-DD`."""
    return timestamp.astimezone(UTC).date().isoformat()


def studio_utc(studio_time: str | None, recorded: datetime) -> datetime:
    """When an event happened at the studio, as a UTC instant: days are the studio's
    gaming days, not the ledger's. The recorded time stands in when the event has no
    studio time with an offset (the feed requires one; old or foreign records)."""
    if studio_time:
        try:
            moment = datetime.fromisoformat(studio_time)
        except ValueError:
            moment = None
        if moment is not None and moment.tzinfo is not None:
            return moment.astimezone(UTC)
    return recorded.astimezone(UTC)


def utc_text(moment: datetime) -> str:
    """A UTC instant as fixed-width text: sorts and compares as the instants do
    (`strftime("%Y-%m-%dT%H:%M:%S.%fZ")`, written by isoformat at half its cost)."""
    utc = moment.astimezone(UTC)
    if utc.year < 1000:  # strftime does not pad such a year
        return utc.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return utc.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def utc_form(studio_time: str | None) -> bool:
    """The studio time is written as isoformat writes a UTC instant (`YYYY-MM-DDTHH:MM:SS.ffffff+00:00`,
    the feed's usual form) and parses: its UTC texts can then be cut from it."""
    if (studio_time and len(studio_time) == 32 and studio_time[26:] == "+00:00" and studio_time[0] != "0"
            and studio_time[4:20:3] == "--T::." and studio_time[5:7].isdigit()):  # not a week date
        try:
            datetime.fromisoformat(studio_time)
        except ValueError:
            return False
        return True
    return False


def studio_utc_text(studio_time: str | None, recorded: datetime) -> str:
    """`utc_text(studio_utc(studio_time, recorded))`, the same text: for the usual studio
    time, its own text with `Z` for the offset (a third of the cost)."""
    if utc_form(studio_time):
        return studio_time[:26] + "Z"  # type: ignore[index]
    return utc_text(studio_utc(studio_time, recorded))


def studio_quarter_hour(studio_time: str | None, recorded: datetime) -> str:
    """`quarter_hour(studio_utc(studio_time, recorded))`, the same text: for the usual studio
    time, cut from its own text (a tenth of the cost: datetime.replace is slow)."""
    if utc_form(studio_time):
        minute = int(studio_time[14:16])  # type: ignore[index]
        return f"{studio_time[:14]}{minute - minute % 15:02d}:00.000000Z"  # type: ignore[index]
    return quarter_hour(studio_utc(studio_time, recorded))


def quarter_hour(moment: datetime) -> str:
    """The UTC quarter hour an instant falls in (utc_text): every zone in use today is a
    whole number of quarter hours from UTC, so a quarter hour lies in one day of any zone."""
    return utc_text(moment.replace(minute=moment.minute - moment.minute % 15, second=0, microsecond=0))


class Zones:
    """The time zone of gaming days: a round at a configured table uses the `timezone` of the
    configuration it opened under (Round.TableApplied; kept by the views as `timezone`),
    every other round `fallback` (the --timezone option / LEDGER_TIMEZONE, UTC by default)."""

    def __init__(self, fallback: tzinfo = UTC) -> None:
        self.fallback = fallback
        self._named: dict[str, tzinfo] = {}

    @classmethod
    def named(cls, fallback: str) -> Zones:
        """Zones whose fallback is the IANA zone `fallback` (--timezone, ?timezone=); ValueError
        naming it when there is no such zone."""
        try:
            return cls(ZoneInfo(fallback))
        except (ZoneInfoNotFoundError, ValueError, OSError):
            raise ValueError(f"{fallback!r} is not a time zone name like Europe/Malta or UTC") from None

    def of(self, timezone: str | None) -> tzinfo:
        """The zone named `timezone` (a round's table time zone), or the fallback for None."""
        if not timezone:
            return self.fallback
        zone = self._named.get(timezone)
        if zone is None:
            zone = self._named[timezone] = ZoneInfo(timezone)
        return zone


def as_zones(zone: tzinfo | Zones) -> Zones:
    """A single zone for every unconfigured table, or the zones as given."""
    return zone if isinstance(zone, Zones) else Zones(zone)


def gaming_day(utc: str, zone: tzinfo) -> str:
    """The calendar day in `zone` of a `utc_text` instant."""
    return datetime.fromisoformat(utc).astimezone(zone).date().isoformat()


def day_bounds(day_from: str | None, day_to: str | None, zone: tzinfo,
               margin_days: int = 0) -> tuple[str | None, str | None]:
    """[start of day_from, start of the day after day_to) in `zone`, `margin_days` wider on
    each side, as utc_text. None: open, and also where a bound falls outside the years
    1000-9999 (it overflows, or utc_text cannot write it to sort): the caller keeps the
    exact days itself (a year-1 `--from` once ended in a 500 on /v1/refunds)."""
    def start(day: str, days: int) -> str | None:
        try:
            moment = datetime.combine(date.fromisoformat(day) + timedelta(days=days), time(), zone).astimezone(UTC)
        except OverflowError:
            return None
        return utc_text(moment) if moment.year >= 1000 else None

    return (start(day_from, -margin_days) if day_from else None,
            start(day_to, 1 + margin_days) if day_to else None)


def iso(timestamp: datetime) -> str:
    """A server timestamp as ISO 8601 UTC text. The last one is remembered: the events of
    a ledger batch share their timestamp, and isoformat with an offset is not free."""
    global _last_iso
    if timestamp.tzinfo is not UTC:  # the library records UTC already: skip the conversion
        return timestamp.astimezone(UTC).isoformat()
    last = _last_iso  # one read: another thread may replace it meanwhile
    if timestamp == last[0]:
        return last[1]
    text = timestamp.isoformat()
    _last_iso = (timestamp, text)
    return text


_last_iso: tuple[datetime, str] = (datetime(1970, 1, 1, tzinfo=UTC), "1970-01-01T00:00:00+00:00")


def fraction_text(f: Fraction) -> str:
    """Exact fraction as TEXT `n/d` (always with a denominator, `0/1` for zero)."""
    return f"{f.numerator}/{f.denominator}"


def parse_fraction(text: str) -> Fraction:
    num, _, den = text.partition("/")
    return Fraction(int(num), int(den or 1))


def plus_fraction_text(text: str, f: Fraction) -> str:
    """`fraction_text(parse_fraction(text) + f)`: one Fraction built, none added (Fraction
    arithmetic was much of a settlement's cost in the views that sum remainders)."""
    num, _, den = text.partition("/")
    n, d = int(num), int(den or 1)
    return fraction_text(Fraction(n * f.denominator + f.numerator * d, d * f.denominator))


def kept_sum(lines: Iterable[SettlementLine]) -> Fraction:
    """The exact sum of the lines' rounding remainders (`remainder_num/remainder_den`), added
    up in integers and made a Fraction once (most lines have none; most that do share a
    denominator)."""
    num, den = 0, 1
    for line in lines:
        n = line.remainder_num
        if n:
            d = line.remainder_den
            if d == den:
                num += n
            else:
                num, den = num * d + n * den, den * d
    return Fraction(num, den) if num else _ZERO_FRACTION


_ZERO_FRACTION = Fraction(0)


def postings_delta(postings: Postings) -> dict[str, int]:
    """Net change per account; checks again (second path) that the legs are
    integers and sum to zero."""
    if len(postings) == 2:  # a stake, a stake move or a refund: one leg out, one in (most events)
        (first, amount), (second, other) = postings
        if type(amount) is int and type(other) is int and amount + other == 0 and first != second:
            return {first: amount, second: other}
    delta: dict[str, int] = {}
    for account, amount_minor in postings:
        delta[account] = delta.get(account, 0) + amount_minor
    total = sum(delta.values())
    if total != 0 or type(total) is not int:
        require(False, f"postings do not sum to zero in int minor units (sum {total!r}): {postings}")
    return delta


# ------------------------------------------------------------------ stores
class MemoryRows:
    """All rows in dicts, one page until `seal`: for unit tests of folds and for in-process checks."""

    def __init__(self, tables: Iterable[Table]) -> None:
        self.tables = {t.name: t for t in tables}
        self.data: dict[str, dict[tuple[Any, ...], dict[str, Any]]] = {name: {} for name in self.tables}
        self._own = {name: own_copier(t) for name, t in self.tables.items()}
        self._owned: set[tuple[str, tuple[Any, ...]]] = set()  # rows edited or put: ours to change

    def get(self, table: str, key: tuple[Any, ...]) -> dict[str, Any] | None:
        return self.data[table].get(key)

    def edit(self, table: str, key: tuple[Any, ...]) -> dict[str, Any] | None:
        row = self.data[table].get(key)
        if row is not None and (table, key) not in self._owned:
            row = self.data[table][key] = self._own[table](row)
            self._owned.add((table, key))
        return row

    def put(self, table: str, row: dict[str, Any]) -> None:
        key = key_of(self.tables[table], row)
        self.data[table][key] = row
        self._owned.add((table, key))

    def seal(self) -> None:
        """A page ends (as `CachedRows.seal`): its rows are no longer its own, a later edit copies them."""
        self._owned.clear()

    def rows(self, table: str) -> list[dict[str, Any]]:
        return [self.data[table][k] for k in sorted(self.data[table], key=_sort_key)]


def _sort_key(key: tuple[Any, ...]) -> tuple[tuple[int, Any], ...]:
    return tuple((0, "") if v is None else (1, v) for v in key)


class CachedRows:
    """Rows backed by the database with a write-back page overlay."""

    def __init__(self, db: Db, tables: Iterable[Table]) -> None:
        self.db = db
        self.tables = {t.name: t for t in tables}
        self.committed: dict[str, dict[tuple[Any, ...], Any]] = {n: {} for n in self.tables}  # young
        self.older: dict[str, dict[tuple[Any, ...], Any]] = {n: {} for n in self.tables}
        self._young_rows = 0
        require(EVICTED_BITS & (EVICTED_BITS - 1) == 0 and EVICTED_BITS >= 8, "EVICTED_BITS: a power of two")
        self._bit_mask = EVICTED_BITS - 1
        self._evicted = bytearray(EVICTED_BITS // 8)
        self._any_evicted = False
        # Called before any database read: the runner waits there for a write in flight.
        self.before_read: Callable[[], object] | None = None
        self.overlay: dict[str, dict[tuple[Any, ...], Any]] = {n: {} for n in self.tables}
        self.complete = False  # True: the cache holds every row (tables were empty); no reads needed
        self._select = {n: select_sql(t) for n, t in self.tables.items()}
        self._values = {n: _values_of(t) for n, t in self.tables.items()}
        self._key = {n: key_getter(t) for n, t in self.tables.items()}
        self._single_key = {n: t.key[0] if len(t.key) == 1 else "" for n, t in self.tables.items()}
        self._own = {n: own_copier(t) for n, t in self.tables.items()}
        # Per-table hash salt of the evicted set (the same key in two tables sets other bits).
        self._salt = {n: hash(n) for n in self.tables}
        self.sealed: list[tuple[Table, list[tuple[Any, ...]]]] = []
        self.selects = 0

    def get(self, table: str, key: tuple[Any, ...]) -> dict[str, Any] | None:
        # Most reads find the row this page wrote (9 in 10 on a catch-up): one lookup.
        row = self.overlay[table].get(key, _MISSING)
        if row is _MISSING:
            row = self.committed[table].get(key, _MISSING)
            if row is _MISSING:
                return self._miss(table, key)
        found: dict[str, Any] | None = row
        return found

    def _miss(self, table: str, key: tuple[Any, ...]) -> dict[str, Any] | None:
        """A row in neither the page nor the young generation: from the old one, or the database."""
        row = self.older[table].pop(key, _MISSING)
        if type(row) is tuple:  # a sealed page's row, kept as written
            row = self._row(table, row)
        elif row is _MISSING:
            # A fold asking for a row it is about to make (most misses on a fresh catch-up):
            # no call to `_maybe_evicted` before any row was dropped.
            if self.complete and not (self._any_evicted and self._maybe_evicted(table, key)):
                return None  # a new row: nothing to cache (it joins the cache when sealed)
            row = self._load(table, key)
        self.committed[table][key] = row
        self._young_rows += 1
        if self._young_rows > CACHE_ROWS_YOUNG:
            self._rotate()
        found: dict[str, Any] | None = row
        return found

    def _maybe_evicted(self, table: str, key: tuple[Any, ...]) -> bool:
        """Whether the key may be a dropped row (its caller checks `_any_evicted` first).
        Its two bits in the evicted set are both set (`_rotate` sets them the same way)."""
        h = hash(key) ^ self._salt[table]
        mask = self._bit_mask
        a, b = h & mask, (h >> 32) & mask
        bits = self._evicted
        return bool(bits[a >> 3] & (1 << (a & 7))) and bool(bits[b >> 3] & (1 << (b & 7)))

    def _rotate(self) -> None:
        """The young generation becomes the old one; the old one is dropped (its keys noted
        while the cache is complete, so that a later miss on them reads the database)."""
        if self.complete:
            bits, mask = self._evicted, self._bit_mask
            for name, old in self.older.items():
                salt = self._salt[name]
                for key, row in old.items():
                    if row is not None:  # `_maybe_evicted`'s bits, inline: this runs for every row dropped
                        h = hash(key) ^ salt
                        a, b = h & mask, (h >> 32) & mask
                        bits[a >> 3] |= 1 << (a & 7)
                        bits[b >> 3] |= 1 << (b & 7)
                        self._any_evicted = True
        self.older, self.committed = self.committed, {n: {} for n in self.tables}
        self._young_rows = 0

    def _load(self, table: str, key: tuple[Any, ...]) -> dict[str, Any] | None:
        self.selects += 1
        if self.before_read is not None:
            self.before_read()
        # Keys are stored as `storable` writes their text (projections/sql.py), so looked up so.
        found = self.db.query(self._select[table], tuple(storable(k) if type(k) is str else k for k in key))
        return self._row(table, found[0]) if found else None

    def _row(self, table: str, values: tuple[Any, ...]) -> dict[str, Any]:
        """A row from its values in column order, JSON as text (as stored and as sealed)."""
        spec = self.tables[table]
        row = dict(zip(spec.column_names, values))
        for col in spec.json_columns:
            row[col] = json.loads(row[col]) if row[col] is not None else None
        return row

    def edit(self, table: str, key: tuple[Any, ...]) -> dict[str, Any] | None:
        # Most edits find the row this page has already copied: one lookup, no copy.
        mine = self.overlay[table]
        row = mine.get(key)
        if row is None:
            row = self.committed[table].get(key, _MISSING)
            if row is _MISSING:
                row = self._miss(table, key)
            if row is None:
                return None
            row = mine[key] = self._own[table](row)  # the cache's row stays as it was written
        return row

    def put(self, table: str, row: dict[str, Any]) -> None:
        column = self._single_key[table]  # most tables have a one-column key: no call to build it
        self.overlay[table][(row[column],) if column else self._key[table](row)] = row

    def seal(self) -> int:
        """The page is folded: turn its rows into the rows to write (values
        in column order, JSON as text) and make them the cache, so the next
        page can be folded while this one is written. Returns the rows to write.

        The cache then runs ahead of the database: whoever writes the sealed
        page must `forget()` if that fails (the runner does, on any failure)."""
        sealed: list[tuple[Table, list[tuple[Any, ...]]]] = []
        put_keys: list[list[tuple[Any, ...]]] = []  # per sealed table: the keys of its rows, in order
        count = 0
        for name, changed in self.overlay.items():
            if changed:
                values = self._values[name]
                puts = [values(row) for row in changed.values()]
                put_keys.append(list(changed))
                sealed.append((self.tables[name], puts))
                count += len(puts)
                young, older = self.committed[name], self.older[name]
                if older:
                    for key in changed:
                        older.pop(key, None)
                before = len(young)
                young.update(changed)
                self._young_rows += len(young) - before
                changed.clear()
        if self._young_rows > CACHE_ROWS_YOUNG:
            # This page's rows become the old generation (the next page reads the rounds still in
            # flight from there); what is dropped was written by an earlier page, and not touched since.
            self._rotate()
            # ... kept as the values being written (JSON as text): a third of the memory of the
            # rows, and most are never read again (finished rounds); one read makes a row again.
            for (spec, puts), keys in zip(sealed, put_keys):
                self.older[spec.name].update(zip(keys, puts))
        self.sealed = sealed
        return count

    def flush(self) -> int:
        """Write the sealed page (inside the caller's transaction). Returns rows written."""
        written = 0
        for table, puts in self.sealed:
            self.db.upsert_many(table, puts)
            written += len(puts)
        self.sealed = []  # not kept while the next page is read and folded
        return written

    def rollback(self) -> None:
        for changed in self.overlay.values():
            changed.clear()

    def forget(self) -> None:
        """Drop everything cached (after a rollback or a concurrent writer)."""
        self.rollback()
        for cached in (*self.committed.values(), *self.older.values()):
            cached.clear()
        self._young_rows = 0
        if self._any_evicted:
            self._evicted = bytearray(len(self._evicted))
            self._any_evicted = False
        self.complete = False


_ESCAPED = b"\\"
_DEL = b"\x7f"  # json escapes it (\u007f), orjson does not


def _not_json(value: Any) -> Any:
    raise TypeError(f"{type(value).__name__} is not JSON serializable: {value!r}")


# json.dumps(value, separators=(",", ":")) builds an encoder per call; the
# C encoder behind it is built once here (same output: ASCII, no spaces).
_encode_chunks = json.encoder.c_make_encoder(  # type: ignore[attr-defined]
    None, _not_json, json.encoder.encode_basestring_ascii, None, ":", ",", False, False, True,
) if json.encoder.c_make_encoder is not None else None  # type: ignore[attr-defined]


def _dump(value: Any) -> str | None:
    """`json.dumps(value, separators=(",", ":"))`, the same text. orjson writes it faster
    (docs/benchmarks.md) whenever its bytes
    need no escape (ASCII, no backslash, no DEL); anything else (non-ASCII text, which
    json escapes; integers beyond 64 bits; non-str keys) goes to the json encoder.
    Views hold no floats (money is integers), where orjson's exponent form would differ."""
    if value is None:
        return None
    if value == []:
        return "[]"
    try:
        text = orjson.dumps(value)
    except orjson.JSONEncodeError:
        pass
    else:
        if text.isascii() and _ESCAPED not in text and _DEL not in text:
            return text.decode("ascii")
    if _encode_chunks is None:
        return json.dumps(value, separators=(",", ":"))
    return "".join(_encode_chunks(value, 0))


def _values_of(table: Table) -> Callable[[dict[str, Any]], tuple[Any, ...]]:
    """row dict -> its values in column order, JSON columns as text."""
    require(len(table.columns) >= 2, f"{table.name}: a view table has a key and a value")
    get = operator.itemgetter(*table.column_names)
    json_at = [i for i, (_, kind) in enumerate(table.columns) if kind == "json"]
    if not json_at:
        return get

    def values(row: dict[str, Any]) -> tuple[Any, ...]:
        out = list(get(row))
        for i in json_at:
            value = out[i]
            if value is None:
                continue
            # An empty list (most of recall's stake moves and refunds) without a call.
            out[i] = "[]" if type(value) is list and not value else _dump(value)
        return tuple(out)

    return values


# -------------------------------------------------------------------- views
@dataclass(frozen=True)
class View:
    """A projection: its tables, the events it folds, and its fold (it writes only through `rows`).
    `reads` names views whose tables the fold reads (they fold each event first)."""

    name: str
    version: int  # bump when the fold's meaning changes: the runner then rebuilds
    tables: tuple[Table, ...]
    handles: frozenset[RecordType]
    fold: Callable[[Rows, Record], None]  # called with the records in `handles` only
    reads: tuple[str, ...] = ()
    # Optional: the same fold over a page of events at once (same result as
    # folding them one by one). Only for a view no other view reads and that
    # reads no other view's rows: the runner folds it after the others.
    fold_page: Callable[[Rows, list[Record]], None] | None = None

    def fingerprint(self) -> str:
        text = repr((self.name, self.version, self.tables))  # not `handles`: its repr is not stable
        return hashlib.sha256(text.encode()).hexdigest()[:16]
