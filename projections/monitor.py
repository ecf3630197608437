"""View `monitor`: what the RTP and integrity monitor (`ledger monitor`) tests.

`proj_monitor`: one row per table, dealer, rule set, bet type and gaming day
(the UTC day of the settlement, as in `ggr`): settlement lines, rounds,
staked, returned, the rounding remainders (exact, TEXT `n/d`: returned plus
remainders is what the paytable pays exactly, so the test compares like with
like), the sum of squared stakes and the largest stake (the variance and the
tail bound of the test need them), the observed RTP and, for the bet types of
projections/monitor_math.py, the theoretical RTP and the standard deviation
of the return per unit staked.

A Banker bet's line carries no mode, so the view remembers each Banker bet's
mode from its `BetPlaced` and keys the line `banker:<mode>`.

A reversed settlement is taken out of the rows it was added to (its own day,
not the reversal's: the monitor's figures are statistics of what was dealt,
not bookings); `stake_max` is not lowered again (the tail bound only gets
more conservative).

`proj_monitor_ops`: per table, dealer and day of the round's opening: rounds
opened, rounds voided, rounds with a human error (a pause or void whose cause
is `human_error`, counted once per round).
`proj_monitor_deals` (blackjack, view version 2): per table, dealer, rule set,
gaming day (of the round's first settlement), dealer up-card class (`A`,
`2`..`9`, `T`) and dealer outcome (`bust`, `17`..`21`, `blackjack`, or `none`
when the dealer did not play out because no hand stood): the number of
settled rounds. Counted once per round at its first settlement and kept
through a reversal (the cards were dealt all the same). What decides
"played out" and why: projections/monitor_deal.py.
`proj_monitor_rounds` keeps per round what the folds above need later (a
blackjack round's cards until its first settlement).
"""
from __future__ import annotations

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
    Voided,
)
from projections.monitor_deal import deal_outcome, new_deal, on_card, on_decision
from projections.monitor_math import bet_math_texts, ratio_text
from projections.rounds import round_row
from projections.sql import Db, Table
from projections.state import Rows, View, day_of, fraction_text, parse_fraction, plus_fraction_text

HUMAN_ERROR = "human_error"

MONITOR = Table(
    "proj_monitor",
    key=("table_id", "dealer_id", "ruleset_id", "ruleset_version", "bet_type", "day"),
    columns=(
        ("table_id", "text"), ("dealer_id", "text"), ("ruleset_id", "text"), ("ruleset_version", "int"),
        ("bet_type", "text"), ("day", "text"), ("currency", "text"), ("lines", "int"), ("rounds", "int"),
        ("staked_minor", "int"), ("returned_minor", "int"), ("rounding_kept", "text"),
        ("stake_sq_sum", "int"), ("stake_max", "int"), ("observed_rtp", "text"), ("theoretical_rtp", "text"),
        ("sd_per_unit", "text"),
    ),
)
OPS = Table(
    "proj_monitor_ops",
    key=("table_id", "dealer_id", "day"),
    columns=(("table_id", "text"), ("dealer_id", "text"), ("day", "text"), ("rounds", "int"),
             ("voided", "int"), ("human_errors", "int")),
)
ROUNDS = Table(
    "proj_monitor_rounds",
    key=("round_id",),
    columns=(("round_id", "text"), ("modes", "json"), ("settled", "json"), ("day", "text"),
             ("human_error", "int"), ("deal", "json")),
)
DEALS = Table(
    "proj_monitor_deals",
    key=("table_id", "dealer_id", "ruleset_id", "ruleset_version", "day", "up", "outcome"),
    columns=(("table_id", "text"), ("dealer_id", "text"), ("ruleset_id", "text"), ("ruleset_version", "int"),
             ("day", "text"), ("up", "text"), ("outcome", "text"), ("rounds", "int")),
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
        state = {"round_id": round_id, "modes": None, "settled": None, "day": None, "human_error": 0, "deal": None}
        rows.put(ROUNDS.name, state)
    return state


_NO_STATE: dict[str, Any] = {"modes": None, "settled": None, "day": None, "human_error": 0, "deal": None}


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
            _ops(rows, ev.table_id, ev.dealer_id, day_of(ev.timestamp), rounds=1)
            if ev.game == "blackjack":
                _edit_round_state(rows, ev.originator_id)["deal"] = new_deal()
        case Settled():
            _settled(rows, ev)
        case SettlementReversed():
            _reversed(rows, ev)
        case Voided() | Paused():
            _incident(rows, ev)
            if type(ev) is Voided and _round_state(rows, ev.originator_id)["deal"] is not None:
                _edit_round_state(rows, ev.originator_id)["deal"] = None  # never settled: its cards are not kept


def _ops(rows: Rows, table_id: str, dealer_id: str, day: str, *, rounds: int = 0, voided: int = 0,
         human_errors: int = 0) -> None:
    row = rows.edit(OPS.name, (table_id, dealer_id, day))
    if row is None:
        row = {"table_id": table_id, "dealer_id": dealer_id, "day": day, "rounds": 0, "voided": 0, "human_errors": 0}
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
    _ops(rows, info["table_id"], info["dealer_id"], info["opened_at"][:10], voided=int(voided), human_errors=int(human))
    if human:
        _edit_round_state(rows, ev.originator_id)["human_error"] = 1


def _settled(rows: Rows, ev: Settled) -> None:
    info = round_row(rows, ev.originator_id)
    if info is None:
        return
    state = _edit_round_state(rows, ev.originator_id)
    sums = settlement_sums(ev.results, state["modes"] or {})
    day = day_of(ev.timestamp)
    for key, s in sums.items():
        _add(rows, info, ev.ruleset_id, ev.ruleset_version, key, day, s, 1)
    if state["deal"] is not None:
        _count_deal(rows, info, ev, day, state["deal"])
        state["deal"] = None  # counted once: a resettlement after a reversal deals no new cards
    state["settled"] = {"ruleset_id": ev.ruleset_id, "ruleset_version": ev.ruleset_version,
                        "sums": {k: [*s[:3], fraction_text(s.kept), *s[4:]] for k, s in sums.items()}}
    state["day"] = day


def _count_deal(rows: Rows, info: dict[str, Any], ev: Settled, day: str, deal: dict[str, Any]) -> None:
    try:
        rules = get_rule_set(ev.ruleset_id, ev.ruleset_version)
    except Exception:  # a rule set this build does not know: no deal facts to count
        return
    if not isinstance(rules, BlackjackRules):
        return
    found = deal_outcome(deal, rules)
    if found is None:
        return
    key = (info["table_id"], info["dealer_id"], ev.ruleset_id, ev.ruleset_version, day, *found)
    row = rows.edit(DEALS.name, key)
    if row is None:
        row = dict(zip(DEALS.key, key), rounds=0)
        rows.put(DEALS.name, row)
    row["rounds"] += 1


def _reversed(rows: Rows, ev: SettlementReversed) -> None:
    info = round_row(rows, ev.originator_id)
    state = _round_state(rows, ev.originator_id)
    settled, day = state["settled"], state["day"]
    if info is None or settled is None:
        return
    for key, (lines, staked, returned, kept, sq, top) in settled["sums"].items():
        back = Sums(-lines, -staked, -returned, -parse_fraction(kept), -sq, top)
        _add(rows, info, settled["ruleset_id"], settled["ruleset_version"], key, day, back, -1)
    state = _edit_round_state(rows, ev.originator_id)
    state["settled"] = None
    state["day"] = None


def _add(rows: Rows, info: dict[str, Any], ruleset_id: str, version: int, bet_type: str, day: str, s: Sums,
         rounds: int) -> None:
    key = (info["table_id"], info["dealer_id"], ruleset_id, version, bet_type, day)
    row = rows.edit(MONITOR.name, key)
    if row is None:
        row = {"table_id": key[0], "dealer_id": key[1], "ruleset_id": ruleset_id, "ruleset_version": version,
               "bet_type": bet_type, "day": day, **_NO_LINES}
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


def monitor_rows(db: Db) -> list[dict[str, Any]]:
    cols = MONITOR.column_names
    found = db.query(f"SELECT {', '.join(cols)} FROM {MONITOR.name} ORDER BY day, table_id, dealer_id, bet_type")
    return [dict(zip(cols, r)) for r in found]


def ops_rows(db: Db) -> list[dict[str, Any]]:
    cols = OPS.column_names
    found = db.query(f"SELECT {', '.join(cols)} FROM {OPS.name} ORDER BY day, table_id, dealer_id")
    return [dict(zip(cols, r)) for r in found]


def deal_rows(db: Db) -> list[dict[str, Any]]:
    cols = DEALS.column_names
    found = db.query(f"SELECT {', '.join(cols)} FROM {DEALS.name} ORDER BY day, table_id, dealer_id, up, outcome")
    return [dict(zip(cols, r)) for r in found]


VIEW = View(
    name="monitor",
    version=2,  # 2: proj_monitor_deals (blackjack up cards and dealer outcomes)
    tables=(MONITOR, OPS, ROUNDS, DEALS),
    handles=frozenset({BetPlaced, Opened, Settled, SettlementReversed, Voided, Paused, CardDealt, DecisionTaken}),
    fold=fold,
    reads=("rounds",),
)
