"""Intake's shortcuts give what the plain calls give: `studio_text` the `isoformat()` of a
command's time (the events' `studio_time`), `parse_all` what `parse` gives line by line."""
from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta, timezone

import pytest
from pydantic import TypeAdapter
from pydantic_core import TzInfo

from domain.errors import Refusal
from ledger.commands import parse_command
from ledger.intake import parse, parse_all, studio_text
from ops.sim.simulator import simulate

DATETIME = TypeAdapter(datetime)


def _parsed(text: str) -> datetime:
    return DATETIME.validate_json(f'"{text}"', strict=True)


def test_studio_text_is_isoformat_for_every_time_the_feed_parser_makes() -> None:
    rng = random.Random(29)
    for _ in range(20_000):
        offset = rng.randint(-1439, 1439)
        micro = rng.choice([0, 10, 1000, 100_000, rng.randint(0, 999_999)])
        text = (f"{rng.choice([1, 99, 999, 1000, 2026, 9999, rng.randint(1, 9999)]):04d}-{rng.randint(1, 12):02d}-"
                f"{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
                + (f".{micro:06d}" if micro or rng.random() < 0.5 else "")
                + rng.choice(["Z", "", f"{'+' if offset >= 0 else '-'}{abs(offset) // 60:02d}:{abs(offset) % 60:02d}"]))
        when = _parsed(text)
        assert studio_text(when) == when.isoformat(), text


@pytest.mark.parametrize("tz", [TzInfo(1), TzInfo(-1), TzInfo(30), TzInfo(86399), TzInfo(-3601), UTC,
                                timezone(timedelta(hours=5, minutes=45)), timezone(timedelta(seconds=-7)), None])
def test_studio_text_is_isoformat_for_any_other_time(tz: TzInfo | timezone | None) -> None:
    when = datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=tz)
    assert studio_text(when) == when.isoformat()


def test_every_command_of_a_feed_keeps_its_time_text() -> None:
    for line in simulate(3, 4, seed=5, fault_rate=20):
        cmd = parse_command(line)
        assert studio_text(cmd.studio_time) == cmd.studio_time.isoformat()


def test_parse_all_is_parse_line_by_line() -> None:
    lines: list[bytes | str] = list(simulate(2, 3, seed=3, fault_rate=30))[:60]
    lines += [b"{", "not json", b'{"type": "open_round"}', b"\xff\xfe", '{"command_id": "a\ud800"}', "[]", b""]
    lines.append(parse_command(lines[0]).model_dump_json())
    mixed = [*lines, parse_command(lines[1])]
    assert [_seen(p) for p in parse_all(mixed)] == [_seen(parse(raw)) for raw in mixed]


def _seen(parsed: object) -> object:
    """A command as itself; a refusal (an exception: no equality of its own) by code and message."""
    return (parsed.code, parsed.message) if isinstance(parsed, Refusal) else parsed
