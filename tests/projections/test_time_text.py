"""The views' time texts, written by cheaper means than before (isoformat instead of
strftime; the last server timestamp's text remembered): the same text for every instant."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from projections.state import iso, quarter_hour, utc_text

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
