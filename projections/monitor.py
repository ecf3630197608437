"""View `monitor`: what the RTP and integrity monitor (`ledger monitor`) tests.

`proj_monitor`: one row per table, dealer, rule set, bet type, UTC quarter hour
of the settlement's studio time (`period`) and the time zone of the table
configuration the round opened under (`timezone`, '' at an unconfigured table):
the rows are summed into gaming days when read (`monitor_rows`), in that zone or
the asked one, exactly as `ggr` sums its rows; a day is when the round was
played, never when the ledger recorded it. Per row: settlement lines, rounds,
staked, returned, the rounding remainders (exact, TEXT `n/d`: returned plus
remainders is what the paytable pays exactly, so the test compares like with
like), the sum of squared stakes and the largest stake (the variance and the
tail bound of the test need them), the observed RTP and, for the bet types of
projections/monitor_math.py, the theoretical RTP and the standard deviation
of the return per unit staked.

A Banker bet's line carries no mode, so the view remembers each Banker bet's
mode from its `BetPlaced` and keys the line `banker:<mode>`.

A reversed settlement is taken out of the rows it was added to (its own period,
not the reversal's: the monitor's figures are statistics of what was dealt,
not bookings); `stake_max` is not lowered again (the tail bound only gets
more conservative).

`proj_monitor_ops`: per table, dealer, period and zone of the round's opening
(its studio time): rounds opened, rounds voided, rounds with a human error (a
pause or void whose cause is `human_error`, counted once per round). A round
opens before its table's configuration is applied (`TableApplied`, the next
event), so the opening is counted under '' and moved to the zone then.
`proj_monitor_deals` (blackjack, view version 2): per table, dealer, rule set,
period and zone (of the round's first settlement), dealer up-card class (`A`,
`2`..`9`, `T`) and dealer outcome (`bust`, `17`..`21`, `blackjack`, or `none`
when the dealer did not play out because no hand stood): the number of
settled rounds. Counted once per round at its first settlement and kept
through a reversal (the cards were dealt all the same). What decides
"played out" and why: projections/monitor_deal.py.
`proj_monitor_rounds` keeps per round what the folds above need later (a
blackjack round's cards until its first settlement).
"""
from __future__ import annotations

from datetime import UTC, tzinfo
from fractions import Fraction
from typing import Any, NamedTuple

from domain.blackjack_rules import BlackjackRules
from domain.gamemath import line_key
from domain.registry import get_rule_set
from ledger.records import (
    BetPlaced,
    CardDealt,
    DecisionTaken,
    Opened,
    Paused,
    Record,
    Settled,
    SettlementLine,
    SettlementReversed,
    TableApplied,
    Voided,
)
from projections.folding import (
    Rows,
    View,
    Zones,
    as_zones,
    fraction_text,
    gaming_day,
    parse_fraction,
    plus_fraction_text,
    studio_quarter_hour,
)
from projections.monitor_deal import deal_outcome, new_deal, on_card, on_decision
from projections.monitor_math import bet_math_texts, ratio_text
from projections.rounds import round_row
from projections.sql import Db, Table

HUMAN_ERROR = "human_error"

MONITOR = Table(
    "proj_monitor",
    key=("table_id", "dealer_id", "ruleset_id", "ruleset_version", "bet_type", "period", "timezone"),
    columns=(
        ("table_id", "text"), ("dealer_id", "text"), ("ruleset_id", "text"), ("ruleset_version", "int"),
        ("bet_type", "text"), ("period", "text"), ("timezone", "text"), ("currency", "text"), ("lines", "int"), ("rounds", "int"),
        ("staked_minor", "int"), ("returned_minor", "int"), ("rounding_kept", "text"),
        ("stake_sq_sum", "int"), ("stake_max", "int"), ("observed_rtp", "text"), ("theoretical_rtp", "text"),
        ("sd_per_unit", "text"),
    ),
)
OPS = Table(
    "proj_monitor_ops",
    key=("table_id", "dealer_id", "period", "timezone"),
    columns=(("table_id", "text"), ("dealer_id", "text"), ("period", "text"), ("timezone", "text"), ("rounds", "int"),
             ("voided", "int"), ("human_errors", "int")),
)
ROUNDS = Table(
    "proj_monitor_rounds",
    key=("round_id",),
    columns=(("round_id", "text"), ("modes", "json"), ("settled", "json"), ("period", "text"),
             ("human_error", "int"), ("deal", "json")),
)
DEALS = Table(
    "proj_monitor_deals",
    key=("table_id", "dealer_id", "ruleset_id", "ruleset_version", "period", "timezone", "up", "outcome"),
    columns=(("table_id", "text"), ("dealer_id", "text"), ("ruleset_id", "text"), ("ruleset_version", "int"),
             ("period", "text"), ("timezone", "text"), ("up", "text"), ("outcome", "text"), ("rounds", "int")),
)


class Sums(NamedTuple):
    """One bet type's lines in one settlement (or many, added up)."""

    lines: int
    staked: int
    returned: int
    kept: Fraction
    stake_sq: int
    stake_max: int


def bet_key(line: SettlementLine, modes: dict[str, str]) -> str:
    """The bet line a settlement line counts under (domain/gamemath.py names them)."""
    return line_key(line.bet_type, modes.get(line.bet_id))


def settlement_sums(results: tuple[SettlementLine, ...], modes: dict[str, str]) -> dict[str, Sums]:
    """A settlement's lines added up per bet type (Banker bets by mode). Added up in lists,
    a Fraction only for a line with a remainder (this runs for every settlement line)."""
    acc: dict[str, list[Any]] = {}
    for line in results:
        key = bet_key(line, modes) if modes else line.bet_type
        s = line.staked_minor
        total = acc.get(key)
        if total is None:
            acc[key] = total = [1, s, line.returned_minor, 0, s * s, s, 1]  # [3]/[6]: kept, in integers
        else:
            total[0] += 1
            total[1] += s
            total[2] += line.returned_minor
            total[4] += s * s
            if s > total[5]:
                total[5] = s
        n = line.remainder_num
        if n:
            d = line.remainder_den
            if d == total[6]:
                total[3] += n
            else:
                total[3], total[6] = total[3] * d + n * total[6], total[6] * d
    return {key: Sums(total[0], total[1], total[2], Fraction(total[3], total[6]) if total[3] else _ZERO,
                      total[4], total[5])
            for key, total in acc.items()}


_ZERO = Fraction(0)


def _round_state(rows: Rows, round_id: str) -> dict[str, Any]:
    return rows.get(ROUNDS.name, (round_id,)) or _NO_STATE


def _edit_round_state(rows: Rows, round_id: str) -> dict[str, Any]:
    """The page's own copy of the round's state (a new one if none)."""
    state = rows.edit(ROUNDS.name, (round_id,))
    if state is None:
        state = {"round_id": round_id, "modes": None, "settled": None, "period": None, "human_error": 0, "deal": None}
        rows.put(ROUNDS.name, state)
    return state


_NO_STATE: dict[str, Any] = {"modes": None, "settled": None, "period": None, "human_error": 0, "deal": None}


def fold(rows: Rows, ev: Record) -> None:
    if type(ev) is BetPlaced:  # the most frequent event here: no match statement for it
        mode = ev.mode
        if isinstance(mode, str):
            state = _edit_round_state(rows, ev.originator_id)
            if state["modes"] is None:
                state["modes"] = {}
            state["modes"][ev.bet_id] = mode
        return  # no mode (all but Banker bets): nothing to keep
    match ev:
        case CardDealt():
            if _round_state(rows, ev.originator_id)["deal"] is not None:  # blackjack, not yet settled
                on_card(_edit_round_state(rows, ev.originator_id)["deal"], ev.card, ev.target)
        case DecisionTaken():
            if _round_state(rows, ev.originator_id)["deal"] is not None:
                on_decision(_edit_round_state(rows, ev.originator_id)["deal"], ev.hand, ev.action)
        case Opened():
            _ops(rows, ev.table_id, ev.dealer_id, studio_quarter_hour(ev.studio_time, ev.timestamp), "", rounds=1)
            if ev.game == "blackjack":
                _edit_round_state(rows, ev.originator_id)["deal"] = new_deal()
        case TableApplied():
            _zone_applied(rows, ev)
        case Settled():
            _settled(rows, ev)
        case SettlementReversed():
            _reversed(rows, ev)
        case Voided() | Paused():
            _incident(rows, ev)
            if type(ev) is Voided and _round_state(rows, ev.originator_id)["deal"] is not None:
                _edit_round_state(rows, ev.originator_id)["deal"] = None  # never settled: its cards are not kept


def _ops(rows: Rows, table_id: str, dealer_id: str, period: str, timezone: str, *, rounds: int = 0,
         voided: int = 0, human_errors: int = 0) -> None:
    row = rows.edit(OPS.name, (table_id, dealer_id, period, timezone))
    if row is None:
        row = {"table_id": table_id, "dealer_id": dealer_id, "period": period, "timezone": timezone, "rounds": 0,
               "voided": 0, "human_errors": 0}
        rows.put(OPS.name, row)
    row["rounds"] += rounds
    row["voided"] += voided
    row["human_errors"] += human_errors


def _incident(rows: Rows, ev: Voided | Paused) -> None:
    info = round_row(rows, ev.originator_id)
    if info is None or info["table_id"] is None:  # tombstone void: no table, no dealer
        return
    voided = isinstance(ev, Voided)
    human = ev.cause == HUMAN_ERROR and not _round_state(rows, ev.originator_id)["human_error"]
    if not (voided or human):
        return
    _ops(rows, info["table_id"], info["dealer_id"], _opened_period(info, ev), info["timezone"] or "",
         voided=int(voided), human_errors=int(human))
    if human:
        _edit_round_state(rows, ev.originator_id)["human_error"] = 1


def _opened_period(info: dict[str, Any], ev: Record) -> str:
    """The quarter hour the round opened in, by studio time (the rounds view keeps it)."""
    return studio_quarter_hour(info["studio_time"], ev.timestamp)


def _zone_applied(rows: Rows, ev: TableApplied) -> None:
    """The round's opening, counted under no zone at `Opened`, moves to the zone of the
    configuration it opened under (the rounds view has just read it)."""
    info = round_row(rows, ev.originator_id)
    if info is None or info["table_id"] is None or not info["timezone"]:
        return
    period = _opened_period(info, ev)
    _ops(rows, info["table_id"], info["dealer_id"], period, "", rounds=-1)
    _ops(rows, info["table_id"], info["dealer_id"], period, info["timezone"], rounds=1)


def _settled(rows: Rows, ev: Settled) -> None:
    info = round_row(rows, ev.originator_id)
    if info is None:
        return
    state = _edit_round_state(rows, ev.originator_id)
    sums = settlement_sums(ev.results, state["modes"] or {})
    period = studio_quarter_hour(ev.studio_time, ev.timestamp)
    for key, s in sums.items():
        _add(rows, info, ev.ruleset_id, ev.ruleset_version, key, period, s, 1)
    if state["deal"] is not None:
        _count_deal(rows, info, ev, period, state["deal"])
        state["deal"] = None  # counted once: a resettlement after a reversal deals no new cards
    state["settled"] = {"ruleset_id": ev.ruleset_id, "ruleset_version": ev.ruleset_version,
                        "sums": {k: [*s[:3], fraction_text(s.kept), *s[4:]] for k, s in sums.items()}}
    state["period"] = period


def _count_deal(rows: Rows, info: dict[str, Any], ev: Settled, period: str, deal: dict[str, Any]) -> None:
    try:
        rules = get_rule_set(ev.ruleset_id, ev.ruleset_version)
    except Exception:  # a rule set this build does not know: no deal facts to count
        return
    if not isinstance(rules, BlackjackRules):
        return
    found = deal_outcome(deal, rules)
    if found is None:
        return
    key = (info["table_id"], info["dealer_id"], ev.ruleset_id, ev.ruleset_version, period, info["timezone"] or "",
           *found)
    row = rows.edit(DEALS.name, key)
    if row is None:
        row = dict(zip(DEALS.key, key), rounds=0)
        rows.put(DEALS.name, row)
    row["rounds"] += 1


def _reversed(rows: Rows, ev: SettlementReversed) -> None:
    info = round_row(rows, ev.originator_id)
    state = _round_state(rows, ev.originator_id)
    settled, period = state["settled"], state["period"]
    if info is None or settled is None:
        return
    for key, (lines, staked, returned, kept, sq, top) in settled["sums"].items():
        back = Sums(-lines, -staked, -returned, -parse_fraction(kept), -sq, top)
        _add(rows, info, settled["ruleset_id"], settled["ruleset_version"], key, period, back, -1)
    state = _edit_round_state(rows, ev.originator_id)
    state["settled"] = None
    state["period"] = None


def _add(rows: Rows, info: dict[str, Any], ruleset_id: str, version: int, bet_type: str, period: str, s: Sums,
         rounds: int) -> None:
    key = (info["table_id"], info["dealer_id"], ruleset_id, version, bet_type, period, info["timezone"] or "")
    row = rows.edit(MONITOR.name, key)
    if row is None:
        row = {"table_id": key[0], "dealer_id": key[1], "ruleset_id": ruleset_id, "ruleset_version": version,
               "bet_type": bet_type, "period": period, "timezone": key[6], **_NO_LINES}
        rows.put(MONITOR.name, row)
    # The kept remainders: the stored text is a reduced fraction (fraction_text), read
    # without a Fraction unless this settlement adds to it.
    kept_text = plus_fraction_text(row["rounding_kept"], s.kept) if s.kept else row["rounding_kept"]
    num, _, den = kept_text.partition("/")
    kept_num, kept_den = int(num), int(den or 1)
    staked = row["staked_minor"] = row["staked_minor"] + s.staked
    returned = row["returned_minor"] = row["returned_minor"] + s.returned
    row["currency"] = info["currency"]
    row["lines"] += s.lines
    row["rounds"] += rounds
    row["rounding_kept"] = kept_text
    row["stake_sq_sum"] += s.stake_sq
    row["stake_max"] = max(row["stake_max"], s.stake_max)
    # (returned + kept) / staked, exactly, in integers
    row["observed_rtp"] = ratio_text(returned * kept_den + kept_num, staked * kept_den) if staked else None
    row["theoretical_rtp"], row["sd_per_unit"] = bet_math_texts(ruleset_id, version, bet_type)


_NO_LINES: dict[str, Any] = {"lines": 0, "rounds": 0, "staked_minor": 0, "returned_minor": 0, "rounding_kept": "0/1",
             "stake_sq_sum": 0, "stake_max": 0}


def monitor_rows(db: Db, zone: tzinfo | Zones = UTC) -> list[dict[str, Any]]:
    """Per table, dealer, rule set, bet type and gaming day (`day`: in the zone of the table
    configuration each round opened under, else `zone`), ordered by day."""
    summed: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in _read(db, MONITOR, zone):
        key = (row["table_id"], row["dealer_id"], row["ruleset_id"], row["ruleset_version"], row["bet_type"],
               row["day"])
        total = summed.get(key)
        if total is None:
            summed[key] = row
            continue
        for column in ("lines", "rounds", "staked_minor", "returned_minor", "stake_sq_sum"):
            total[column] += row[column]
        total["stake_max"] = max(total["stake_max"], row["stake_max"])
        total["rounding_kept"] = plus_fraction_text(total["rounding_kept"], parse_fraction(row["rounding_kept"]))
    out = sorted(summed.values(), key=lambda r: (r["day"], r["table_id"], r["dealer_id"], r["bet_type"]))
    for row in out:  # (returned + kept) / staked of the whole day, as the fold writes it for a row
        kept = parse_fraction(row["rounding_kept"])
        staked = row["staked_minor"]
        row["observed_rtp"] = ratio_text(row["returned_minor"] * kept.denominator + kept.numerator,
                                         staked * kept.denominator) if staked else None
    return out


def ops_rows(db: Db, zone: tzinfo | Zones = UTC) -> list[dict[str, Any]]:
    """Per table, dealer and gaming day of the rounds' openings (zones as `monitor_rows`)."""
    summed = _summed(_read(db, OPS, zone), ("table_id", "dealer_id", "day"), ("rounds", "voided", "human_errors"))
    return [r for r in summed if r["rounds"] or r["voided"] or r["human_errors"]]  # not an opening moved away


def deal_rows(db: Db, zone: tzinfo | Zones = UTC) -> list[dict[str, Any]]:
    """Per table, dealer, rule set, gaming day, up card and outcome (zones as `monitor_rows`)."""
    return _summed(_read(db, DEALS, zone), ("table_id", "dealer_id", "ruleset_id", "ruleset_version", "day", "up",
                                            "outcome"), ("rounds",))


def in_days(rows: list[dict[str, Any]], first: str | None, last: str | None) -> list[dict[str, Any]]:
    """The rows of gaming days first..last (both included; None: open)."""
    return [r for r in rows if (first is None or r["day"] >= first) and (last is None or r["day"] <= last)]


def _read(db: Db, table: Table, zone: tzinfo | Zones = UTC) -> list[dict[str, Any]]:
    """The table's rows, each with its gaming `day` in place of its period and zone."""
    zones, days = as_zones(zone), dict[tuple[str, str], str]()
    cols = table.column_names
    out = []
    for found in db.query(f"SELECT {', '.join(cols)} FROM {table.name}"):
        row = dict(zip(cols, found))
        where = (row.pop("period"), row.pop("timezone"))
        day = days.get(where)
        if day is None:  # many rows share a quarter hour: each is turned into a day once
            day = days[where] = gaming_day(where[0], zones.of(where[1]))
        row["day"] = day
        out.append(row)
    return out


def _summed(rows: list[dict[str, Any]], key: tuple[str, ...], counts: tuple[str, ...]) -> list[dict[str, Any]]:
    """Rows of one key added up (their counts), in the key's order."""
    summed: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in rows:
        k = tuple(row[c] for c in key)
        total = summed.get(k)
        if total is None:
            summed[k] = row
        else:
            for column in counts:
                total[column] += row[column]
    return [summed[k] for k in sorted(summed, key=lambda k: (k[key.index("day")], *k))]


VIEW = View(
    name="monitor",
    version=3,  # 2: proj_monitor_deals (blackjack up cards and dealer outcomes); 3: studio quarter hours and zones
    tables=(MONITOR, OPS, ROUNDS, DEALS),
    handles=frozenset({BetPlaced, Opened, TableApplied, Settled, SettlementReversed, Voided, Paused, CardDealt,
                       DecisionTaken}),
    fold=fold,
    reads=("rounds",),
)
