"""The views' time texts, written by cheaper means than before (isoformat instead of
strftime; the last server timestamp's text remembered): the same text for every instant."""
from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from projections.folding import (
    day_bounds,
    iso,
    quarter_hour,
    studio_quarter_hour,
    studio_utc,
    studio_utc_text,
    utc_text,
)
from projections.rounds import _studio_text_of, studio_instant, studio_text

zones = st.one_of(st.just(UTC), st.integers(-14 * 60, 14 * 60).map(lambda m: timezone(timedelta(minutes=m))))
aware = st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=zones)


@given(aware)
def test_utc_text_is_the_strftime_text(moment: datetime) -> None:
    assert utc_text(moment) == moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@given(aware)
def test_quarter_hour_is_the_strftime_text(moment: datetime) -> None:
    start = moment.replace(minute=moment.minute - moment.minute % 15, second=0, microsecond=0)
    assert quarter_hour(moment) == start.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@given(st.lists(aware, min_size=1, max_size=6))
def test_iso_is_the_utc_isoformat_whatever_came_before(moments: list[datetime]) -> None:
    """iso remembers the last UTC timestamp's text: equal instants, and only they, share it."""
    for moment in moments + [m.astimezone(UTC) for m in moments] + moments[::-1]:
        assert iso(moment) == moment.astimezone(UTC).isoformat()


RECORDED = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
# Texts near the fast path's fixed-width UTC form: week dates, other separators, 3-digit
# fractions, years below 1000, other offsets, nonsense of the same length.
odd_texts = st.sampled_from([
    "2026-11-21T12:00:01.900000+00:00", "2026-W47-6T12:00:01.900000+00:00", "2026-11-21 12:00:01.900000+00:00",
    "0999-11-21T12:00:01.900000+00:00", "2026-11-21T12:00:01.900000+01:00", "2026-11-21T12:00:01.900+00:00",
    "2026-11-21T12:00:01,900000+00:00", "2026-13-21T12:00:01.900000+00:00", "2026-11-21T12:00:01.9000000+00:00",
    "2026-11-21T12:00:01.900000-00:00", "2026-11-21T12:00:01.90000Z+00:00", "", "not a time",
])


@given(st.one_of(aware.map(lambda m: m.isoformat()), aware.map(lambda m: m.astimezone(UTC).isoformat()),
                 odd_texts, st.none()))
def test_studio_utc_text_is_utc_text_of_studio_utc(text: str | None) -> None:
    assert studio_utc_text(text, RECORDED) == utc_text(studio_utc(text, RECORDED))


@given(st.one_of(aware.map(lambda m: m.isoformat()), aware.map(lambda m: m.astimezone(UTC).isoformat()),
                 odd_texts, st.none()))
def test_studio_quarter_hour_is_quarter_hour_of_studio_utc(text: str | None) -> None:
    assert studio_quarter_hour(text, RECORDED) == quarter_hour(studio_utc(text, RECORDED))


@given(st.one_of(aware.map(lambda m: m.isoformat()), aware.map(lambda m: m.astimezone(UTC).isoformat()), odd_texts))
def test_rounds_studio_text_is_studio_text_of_the_instant(text: str) -> None:
    try:
        expected = studio_text(studio_instant(text))
    except ValueError:  # not a time: the fold raises as before
        with pytest.raises(ValueError):
            _studio_text_of(text)
        return
    assert _studio_text_of(text) == expected


@given(st.dates(), st.dates(), zones, st.integers(0, 2))
def test_day_bounds_are_sortable_texts_or_open(first: date, last: date, zone: timezone, margin_days: int) -> None:
    low, high = day_bounds(first.isoformat(), last.isoformat(), zone, margin_days)
    for bound, day in ((low, first - timedelta(days=margin_days)), (high, last + timedelta(days=1 + margin_days))):
        if bound is not None:  # the start of that day in the zone, as utc_text writes it, years 1000-9999 only
            assert bound == utc_text(datetime.combine(day, datetime.min.time(), zone)) and bound[4] == "-"
        elif 1001 <= day.year <= 9998:
            raise AssertionError(f"{day} in {zone}: open bound for a writable day")
