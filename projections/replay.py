"""Exact replay of one round for disputes: pure, no I/O.

`recompute(events_of_round)` feeds the recorded facts (bets, cards, decisions,
follows) to a FRESH pure domain model (`domain.registry.new_round`) under the
recorded rule-set id and version, never to the ledger's aggregate, and
compares everything the ledger recorded with what the rules give:
stake moves, refunds, postings, and each Settled result bet by bet.
Any difference is a `Finding`; nothing is corrected. Kinds: docs/audit.md.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, NamedTuple

from domain.cards import parse_card
from domain.errors import InvariantBroken, Refusal
from domain.model import Bet, RoundModel, StakeMove
from domain.money import earlier_wording, format_minor, house_account, player_account, round_account
from domain.registry import get_rule_set, new_round
from domain.ruleset import RuleSet
from domain.tableconfig import TableSettings, effective_rules, settings_hash
from domain.text import escaped
from ledger.records import (
    BetPlaced,
    BettingClosed,
    CardDealt,
    DecisionTaken,
    FollowDecided,
    Interrupted,
    Opened,
    Paused,
    Posting,
    Record,
    Refund,
    Resumed,
    Settled,
    SettlementLine,
    SettlementReversed,
    TableApplied,
    TableConfigured,
    Voided,
    event_name,
    postings_of,
    short_name,
)
from projections.audit import Finding, iso_utc

EVENTS_PER_ROUND_MAX = 5000
MONEY_KEYS = ("outcome", "staked_minor", "returned_minor", "remainder_num", "remainder_den")
RESULT_KEYS = ("bet_id", "player_id", "bet_type", *MONEY_KEYS, "explanation")


@dataclass(frozen=True)
class Step:
    """One recorded event of the round, what it said, and the model's state after it."""

    n: int  # the event's number in the round (originator_version)
    position: int
    event: str  # "BetPlaced", "CardDealt", ...
    studio_time: str | None
    server_time: str
    text: str  # one line a dispute handler reads
    source: str | None  # who decided (player | timeout | system | dealer) or who paused / voided
    state: dict[str, Any] | None  # the fresh model's view() after this event (None before Opened)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class BetCheck:
    """One settlement line: what was recorded, what the rules give, and whether they agree."""

    settlement_no: int
    position: int
    bet_id: str
    recorded: dict[str, Any] | None
    recomputed: dict[str, Any] | None
    # the same line, its explanation recorded in the earlier wording (domain/money.py
    # `earlier_wording`): stores written then replay clean, and the money is still compared
    earlier_wording: bool = False

    @property
    def agrees(self) -> bool:
        return self.recorded == self.recomputed or self.earlier_wording

    def as_dict(self) -> dict[str, Any]:
        return {"settlement_no": self.settlement_no, "position": self.position, "bet_id": self.bet_id,
                "agrees": self.agrees, "recorded": self.recorded, "recomputed": self.recomputed}


class Replay(NamedTuple):
    steps: list[Step]
    results: list[BetCheck]
    findings: list[Finding]
    # What the cards said (the model's `outcome()`, domain/outcome.py) when the facts make a
    # complete round the model followed to the end; None otherwise and in the bulk check.
    outcome: dict[str, Any] | None = None


@dataclass
class _State:
    """What the replay tracks besides the model: money put in, postings, settlements."""

    round_id: str = ""
    table_id: str = ""
    currency: str | None = None
    rules: RuleSet | None = None
    model: RoundModel | None = None
    stopped: str | None = None  # why the model can no longer follow the facts
    closed_phase: str | None = None  # "reversed" / "voided": the round's phase, which the model does not know
    unknown_rules_at: int | None = None  # position of an Opened whose rule set the registry lacks
    table_settings_hash: str | None = None  # the overrides of a configured table (TableApplied)
    round_in_shoe: int = 1
    put_in: dict[tuple[str, str], int] = field(default_factory=dict)
    settlements: dict[int, tuple[Posting, ...]] = field(default_factory=dict)  # no -> postings
    steps: list[Step] = field(default_factory=list)
    results: list[BetCheck] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    def find(self, kind: str, position: int, message: str) -> None:
        self.findings.append(Finding(kind, position, message))

    def money(self, amount_minor: int | Fraction) -> str:
        return format_minor(amount_minor, self.currency)


def recompute(events_of_round: Iterable[Record], *, views: bool = True) -> Replay:
    """Replay one round's events (in order) on a fresh domain model; see the module doc.

    `views=False` is the bulk check of `ledger audit replay`: exactly the same
    checks, results and findings, but no timeline (`steps` is empty): no step
    text, no state snapshot after each event, no timestamp formatting."""
    events = list(events_of_round)
    s = _State(round_id=events[0].originator_id if events else "")
    _check_sequence(s, events)
    for event in events:
        check = _CHECKS.get(type(event))
        if check is None:
            s.find("unknown_event", event.position, f"event {event_name(event)} is not in the Round vocabulary")
        else:
            _check_postings_balance(s, event)
            check(s, event)
        if views:
            text, source = _TEXTS[type(event)](s, event) if check is not None else (event_name(event), None)
            view = _with_phase(s, s.model.view() if s.model is not None else None)
            s.steps.append(Step(event.originator_version, event.position, short_name(event), event.studio_time,
                                iso_utc(event.timestamp), text, source, view))
    return Replay(s.steps, s.results, s.findings, _outcome(s) if views else None)


def _with_phase(s: _State, view: dict[str, Any] | None) -> dict[str, Any] | None:
    """The model plays cards, not corrections: after a reversal or a void its view would still
    say e.g. "dealing" or "complete", so the round's own phase is put over it (a tombstone, which
    has no model, gets a state holding only its phase)."""
    if s.closed_phase is None:
        return view
    return {**(view or {}), "phase": s.closed_phase}


def _outcome(s: _State) -> dict[str, Any] | None:
    """The model's outcome when it followed every fact to a complete round (a void after the
    last card keeps it: the cards still say who won, though no settlement is in force)."""
    if s.model is None or s.stopped not in (None, "voided") or not s.model.is_complete():
        return None
    try:
        return s.model.outcome().as_dict()
    except Refusal:
        return None


def table_config_findings(events: Iterable[Record],
                          history: Callable[[str], Sequence[TableConfigured]]) -> list[Finding]:
    """A round's TableApplied against its table's own record of that configuration version
    (`history(table_id)`, e.g. EventLog.table_history): the version must exist and its hash
    and settings must be the ones the round recorded. Replay applies the round's recorded
    settings; this says whether they are the configuration the table really had."""
    found: list[Finding] = []
    table_id = None
    for e in events:
        if isinstance(e, Opened):
            table_id = e.table_id
        if not isinstance(e, TableApplied) or table_id is None:
            continue
        versions = {c.config_version: c for c in history(table_id)}
        config = versions.get(e.config_version)
        if config is None:
            found.append(Finding("table_config_mismatch", e.position,
                                 f"table {table_id} has no configuration v{e.config_version}"))
        elif config.config_hash != e.config_hash or config.settings != e.settings:
            what = "hash" if config.config_hash != e.config_hash else "settings"
            found.append(Finding("table_config_mismatch", e.position,
                                 f"the round's {what} of table {table_id} configuration v{e.config_version} "
                                 f"differs from the table's own record (position {config.position})"))
    return found


def _check_sequence(s: _State, events: list[Record]) -> None:
    if len(events) > EVENTS_PER_ROUND_MAX:
        s.find("too_many_events", events[-1].position, f"{len(events)} events; at most {EVENTS_PER_ROUND_MAX}")
    for expected, event in enumerate(events, 1):
        if event.originator_id != s.round_id:
            s.find("foreign_event", event.position, f"event of {event.originator_id} among {s.round_id}'s")
        if event.originator_version != expected:
            s.find("missing_event", event.position, f"event number {event.originator_version} where number "
                   f"{expected} was expected: the round's events are not complete")
            break


def _check_postings_balance(s: _State, event: Record) -> None:
    postings = postings_of(event)
    if not postings:
        return
    total = sum([p[1] for p in postings])  # Posting(account, amount_minor)
    if total != 0:
        s.find("postings_unbalanced", event.position, f"postings sum to {total}")


def _call(s: _State, event: Record, describe: Callable[[], str], call: Callable[[RoundModel], Any]) -> Any:
    """Drive the model; a refusal of a recorded fact is a finding and stops the model.
    `describe()` names the fact; it is only called for a refusal (most facts replay)."""
    if s.model is None or s.stopped:
        return None
    try:
        return call(s.model)
    except Refusal as refusal:
        what = describe()
        s.stopped = f"{what} refused at position {event.position}"
        s.find("refused", event.position, f"the rules refuse the recorded {what}: {refusal.code}: {refusal.message}")
        return None


def _add(net: dict[str, int], account: str, amount_minor: int) -> None:
    net[account] = net.get(account, 0) + amount_minor


def _net(postings: Iterable[Posting]) -> dict[str, int]:
    """Net amount per account, zeros dropped (dict equality ignores order; messages sort)."""
    net: dict[str, int] = {}
    get = net.get
    for account, amount_minor in postings:
        net[account] = get(account, 0) + amount_minor
    if 0 in net.values():
        return {k: v for k, v in net.items() if v != 0}
    return net


def _compare_postings(s: _State, event: Record, expected: dict[str, int]) -> None:
    recorded = _net(postings_of(event))
    wanted = {k: v for k, v in expected.items() if v != 0} if 0 in expected.values() else expected
    if recorded != wanted:
        s.find("postings_differ", event.position, f"postings net {dict(sorted(recorded.items()))}; the facts give "
               f"{dict(sorted(expected.items()))}")


# --------------------------------------------------------------------------- one check per event
# A check drives the model and records findings; it builds no text, so the bulk
# audit pays only for the comparison. The timeline's words are in the next section.


def _opened(s: _State, e: Opened) -> None:
    s.table_id, s.currency, s.round_in_shoe = e.table_id, e.currency, e.round_in_shoe
    try:
        rules = get_rule_set(e.ruleset_id, e.ruleset_version)
    except Refusal as refusal:
        s.stopped, s.unknown_rules_at = "unknown rule set", e.position
        s.find("ruleset_unknown", e.position, refusal.message)
        return
    if _content_hash(rules) != e.ruleset_hash:
        s.find("ruleset_hash_mismatch", e.position, f"{_rules_label(e)} hashes to {_content_hash(rules)} now; the "
               f"round recorded {e.ruleset_hash}: the rule set changed after this round was played")
    s.rules = rules
    s.model = new_round(rules, round_in_shoe=e.round_in_shoe)


def _table_applied(s: _State, e: TableApplied) -> None:
    """A configured table: the round plays by its rule set with the recorded overrides
    (exactly the configuration version it opened under, whatever the table says today)."""
    if s.rules is None:
        return
    if e.originator_version != 2:
        s.find("table_config_misplaced", e.position, "the table configuration must follow Opened directly")
    try:
        settings = TableSettings.from_dict(e.settings)
        s.rules = effective_rules(s.rules, settings)
    except (InvariantBroken, KeyError, TypeError, ValueError, AttributeError) as exc:  # a tampered store
        s.stopped = "table configuration unreadable"
        s.find("table_config_invalid", e.position, f"the recorded table settings cannot be applied: {exc}")
        return
    s.model = new_round(s.rules, round_in_shoe=s.round_in_shoe)
    s.table_settings_hash = settings_hash(settings)


def _bet_placed(s: _State, e: BetPlaced) -> None:
    bet = Bet(e.bet_id, e.player_id, e.spot, e.bet_type, e.stake_minor, e.mode, e.seat_no)
    _call(s, e, lambda: f"bet {bet.bet_id}", lambda m: m.place_bet(bet))
    _put_in(s, bet.bet_id, bet.player_id, bet.stake_minor)
    _compare_postings(s, e, _stake_net(s, [(bet.player_id, bet.stake_minor)]))


def _betting_closed(s: _State, e: BettingClosed) -> None:
    _call(s, e, lambda: "close of betting", lambda m: m.close_betting())


def _card_dealt(s: _State, e: CardDealt) -> None:
    card = parse_card(e.card)
    _call(s, e, lambda: f"card {card}", lambda m: m.deal(card, e.target))


def _decision_taken(s: _State, e: DecisionTaken) -> None:
    moves = _call(s, e, lambda: f"decision {e.action} on {e.hand}",
                  lambda m: m.decide(e.hand, e.action, e.source, e.amount_minor))
    _check_moves(s, e, moves)


def _follow_decided(s: _State, e: FollowDecided) -> None:
    moves = _call(s, e, lambda: f"follow of {e.bet_id}", lambda m: m.follow(e.bet_id, e.kind, e.accept))
    _check_moves(s, e, moves)


def _no_check(s: _State, e: Record) -> None:
    """Paused / Resumed: nothing for the rules to recompute (their postings balance is checked for all)."""


def _interrupted(s: _State, e: Interrupted) -> None:
    """A player-side interruption names one of the round's players; the events its policy
    action records (auto decisions, Paused, Voided) are checked on their own."""
    if e.player_id not in {p for _, p in s.put_in}:
        s.find("interruption_player_unknown", e.position, f"interruption ({e.cause}) names player {e.player_id}, "
               "who has no bet in the round")


def _voided(s: _State, e: Voided) -> None:
    expected = [Refund(b, p, a) for (b, p), a in s.put_in.items() if a > 0]
    if sorted(e.refunds) != sorted(expected):
        s.find("refunds_differ", e.position, f"recorded refunds {_dicts(e.refunds)}; every amount put in is "
               f"{_dicts(expected)}")
    net: dict[str, int] = {}
    account = round_account(s.round_id)
    for r in expected:
        _add(net, player_account(r.player_id), r.amount_minor)
        _add(net, account, -r.amount_minor)
    _compare_postings(s, e, net)
    s.stopped = s.stopped or "voided"
    s.closed_phase = "voided"


def _settled(s: _State, e: Settled) -> None:
    no = e.settlement_no
    if s.rules is not None and (e.ruleset_id, e.ruleset_version) != s.rules.key:
        s.find("ruleset_mismatch", e.position, f"settled under {e.ruleset_id} v{e.ruleset_version} but "
               f"opened under {s.rules.id} v{s.rules.version}")
    recomputed = _recomputed_results(s, e)
    _compare_results(s, e, no, [dict(zip(_LINE_FIELDS, r)) for r in e.results], recomputed)  # r._asdict()
    if recomputed is not None:
        _compare_postings(s, e, _settlement_net(s, recomputed))
    s.settlements[no] = e.postings
    s.closed_phase = None  # a resettlement after a reversal: settled again


def _settlement_reversed(s: _State, e: SettlementReversed) -> None:
    s.closed_phase = "reversed"
    original = s.settlements.get(e.settlement_no)
    if original is None:
        s.find("reversal_unmatched", e.position, f"reverses settlement {e.settlement_no}, which is not recorded")
    elif _net(Posting(p.account, -p.amount_minor) for p in original) != _net(e.postings):
        s.find("postings_differ", e.position, f"reversal postings are not the exact negation of settlement "
               f"{e.settlement_no}")


_LINE_FIELDS = SettlementLine._fields


# A check takes the record type it is registered for.
_CHECKS: dict[type, Callable[[_State, Any], None]] = {
    Opened: _opened, TableApplied: _table_applied, BetPlaced: _bet_placed, BettingClosed: _betting_closed, CardDealt: _card_dealt,
    DecisionTaken: _decision_taken, FollowDecided: _follow_decided, Paused: _no_check,
    Interrupted: _interrupted, Resumed: _no_check, Voided: _voided, Settled: _settled, SettlementReversed: _settlement_reversed,
}


# --------------------------------------------------------------------------- the timeline's words
# Run after the event's check (so the state, e.g. the currency, is as of this event), only for
# the single-round `ledger replay`: (one line a dispute handler reads, who decided).


def _opened_text(s: _State, e: Opened) -> tuple[str, str | None]:
    if s.unknown_rules_at == e.position:
        return f"opened under {_rules_label(e)} (unknown here)", None
    return (f"opened {e.table_id}#{e.round_no} ({e.game}) under {_rules_label(e)}, shoe {e.shoe_id} "
            f"round {e.round_in_shoe} in the shoe, dealer {e.dealer_id}, {e.currency}"), None


def _bet_placed_text(s: _State, e: BetPlaced) -> tuple[str, str | None]:
    mode = f" ({e.mode})" if e.mode else ""
    return f"bet {e.bet_id} by {e.player_id} at {e.spot}: {e.bet_type}{mode} {s.money(e.stake_minor)}", None


def _card_dealt_text(s: _State, e: CardDealt) -> tuple[str, str | None]:
    card = parse_card(e.card)
    return f"card #{e.seq_no} {card} ({card.name}) to {e.target}", "dealer"


def _decision_taken_text(s: _State, e: DecisionTaken) -> tuple[str, str | None]:
    extra = f" {s.money(e.amount_minor)}" if e.amount_minor else ""
    return f"{e.hand}: {e.action}{extra} (decided by {e.source}){_moves_text(s, e.stake_moves)}", e.source


def _follow_decided_text(s: _State, e: FollowDecided) -> tuple[str, str | None]:
    verb = "follows" if e.accept else "declines to follow"
    return f"bet {e.bet_id} {verb} the {e.kind}{_moves_text(s, e.stake_moves)}", "player"


def _paused_text(s: _State, e: Paused) -> tuple[str, str | None]:
    flag = f" [refused fact: {e.flag_code}]" if e.flag_code else ""
    return f"PAUSED: {e.cause} by {e.by}{flag}: {escaped(e.note or '')}", e.by


def _interrupted_text(s: _State, e: Interrupted) -> tuple[str, str | None]:
    what = {"complete": "the round goes on; the no-action rule plays any of the player's hands waiting for a "
                        "decision", "pause": "the round pauses", "void": "the round is voided"}.get(e.action, e.action)
    return f"INTERRUPTED: {e.cause} of player {e.player_id}, reported by {e.by} ({what}): {escaped(e.note or '')}", e.by


def _resumed_text(s: _State, e: Resumed) -> tuple[str, str | None]:
    return f"resumed by {e.by}: {escaped(e.note or '')}", e.by


def _voided_text(s: _State, e: Voided) -> tuple[str, str | None]:
    total = sum(r.amount_minor for r in e.refunds)
    return f"VOIDED: {e.cause} by {e.by}: {escaped(e.note or '')}; refunds {s.money(total)} " \
           f"on {len(e.refunds)} line(s)", e.by


def _settled_text(s: _State, e: Settled) -> tuple[str, str | None]:
    paid = sum(r.returned_minor for r in e.results)
    return f"SETTLED (settlement {e.settlement_no}): {len(e.results)} line(s), returned {s.money(paid)}", None


def _settlement_reversed_text(s: _State, e: SettlementReversed) -> tuple[str, str | None]:
    return f"SETTLEMENT {e.settlement_no} REVERSED by {e.by}: {escaped(e.reason)}", e.by


def _table_applied_text(s: _State, e: TableApplied) -> tuple[str, str | None]:
    shown = ", ".join(f"{k}={v}" for k, v in sorted(e.settings.items())) or "the rule set's defaults"
    return f"at table configuration v{e.config_version} ({e.config_hash[:12]}): {shown}", None


def _betting_closed_text(s: _State, e: BettingClosed) -> tuple[str, str | None]:
    return "betting closed", None


_TEXTS: dict[type, Callable[[_State, Any], tuple[str, str | None]]] = {
    Opened: _opened_text, TableApplied: _table_applied_text, BetPlaced: _bet_placed_text, BettingClosed: _betting_closed_text,
    CardDealt: _card_dealt_text, DecisionTaken: _decision_taken_text, FollowDecided: _follow_decided_text,
    Paused: _paused_text, Interrupted: _interrupted_text, Resumed: _resumed_text, Voided: _voided_text, Settled: _settled_text,
    SettlementReversed: _settlement_reversed_text,
}


# --------------------------------------------------------------------------- helpers


_HASHES: dict[int, tuple[RuleSet, str]] = {}


def _content_hash(rules: RuleSet) -> str:
    """Rule sets are frozen and few: hash each object once per process."""
    cached = _HASHES.get(id(rules))
    if cached is None or cached[0] is not rules:
        cached = _HASHES[id(rules)] = (rules, rules.content_hash())
    return cached[1]


def _rules_label(e: Opened) -> str:
    return f"{e.ruleset_id} v{e.ruleset_version}"


def _dicts(lines: Iterable[Refund | StakeMove]) -> list[dict[str, Any]]:
    """Lines as the stored dicts (how findings quote them)."""
    return [line._asdict() for line in lines]


def _put_in(s: _State, bet_id: str, player_id: str, amount_minor: int) -> None:
    s.put_in[(bet_id, player_id)] = s.put_in.get((bet_id, player_id), 0) + amount_minor


def _stake_net(s: _State, stakes: list[tuple[str, int]]) -> dict[str, int]:
    net: dict[str, int] = {}
    if not stakes:
        return net
    account = round_account(s.round_id)
    get = net.get
    for player_id, amount in stakes:
        player = player_account(player_id)
        net[player] = get(player, 0) - amount
        net[account] = get(account, 0) + amount
    return net


def _check_moves(s: _State, e: DecisionTaken | FollowDecided, moves: list[Any] | None) -> None:
    for m in e.stake_moves:
        _put_in(s, m.bet_id, m.player_id, m.amount_minor)
    _compare_postings(s, e, _stake_net(s, [(m.player_id, m.amount_minor) for m in e.stake_moves]))
    if moves is None:
        return
    recorded = _dicts(e.stake_moves)
    replayed = [{"bet_id": m.bet_id, "player_id": m.player_id, "amount_minor": m.amount_minor, "reason": m.reason}
                for m in moves]
    if replayed != recorded:
        s.find("stake_moves_differ", e.position, f"recorded stake moves {recorded}; the rules give {replayed}")


def _moves_text(s: _State, moves: tuple[StakeMove, ...]) -> str:
    return "".join(f"; {m.player_id} adds {s.money(m.amount_minor)} ({m.reason})" for m in moves)


def _recomputed_results(s: _State, e: Settled) -> list[dict[str, Any]] | None:
    if s.model is None or s.stopped:
        s.find("not_recomputable", e.position, f"the settlement cannot be recomputed: {s.stopped or 'no Opened event'}")
        return None
    if not s.model.is_complete():
        s.find("settled_incomplete", e.position, "settled, but the rules still expect cards or decisions")
        return None
    try:
        return [r.as_dict() for r in s.model.settle()]
    except Refusal as refusal:
        s.find("refused", e.position, f"the rules refuse to settle: {refusal.code}: {refusal.message}")
        return None


def _compare_results(s: _State, e: Settled, no: int, recorded: list[dict[str, Any]],
                     recomputed: list[dict[str, Any]] | None) -> None:
    rec = {r["bet_id"]: {k: r.get(k) for k in RESULT_KEYS} for r in recorded}
    if recomputed is None:
        s.results += [BetCheck(no, e.position, b, r, None) for b, r in rec.items()]
        return
    new = {r["bet_id"]: {k: r.get(k) for k in RESULT_KEYS} for r in recomputed}
    game = s.rules.game if s.rules is not None else ""
    for bet_id in list(rec) + [b for b in new if b not in rec]:
        check = BetCheck(no, e.position, bet_id, rec.get(bet_id), new.get(bet_id),
                         _in_earlier_wording(rec.get(bet_id), new.get(bet_id), game))
        s.results.append(check)
        _result_finding(s, e, check)


def _in_earlier_wording(rec: dict[str, Any] | None, new: dict[str, Any] | None, game: str) -> bool:
    """Whether `rec` is `new` but for its explanation, recorded in the earlier wording."""
    if rec is None or new is None or rec == new:
        return False
    return (rec["explanation"] == earlier_wording(new["explanation"], game)
            and all(rec[k] == new[k] for k in RESULT_KEYS if k != "explanation"))


def _result_finding(s: _State, e: Settled, c: BetCheck) -> None:
    rec, new = c.recorded, c.recomputed
    if c.agrees:
        return
    if rec is None and new is not None:
        s.find("result_missing", e.position, f"bet {c.bet_id}: the rules settle it ({_money_text(s, new)}) "
               "but the settlement has no line for it")
    elif new is None and rec is not None:
        s.find("result_extra", e.position, f"bet {c.bet_id}: recorded ({_money_text(s, rec)}) but the rules "
               "give no such settlement line")
    elif rec is not None and new is not None:
        keys = [k for k in ("player_id", "bet_type", *MONEY_KEYS) if rec[k] != new[k]]
        if keys:
            s.find("payout_differs", e.position, f"bet {c.bet_id}: recorded {_money_text(s, rec)}; the rules give "
                   f"{_money_text(s, new)} ({', '.join(keys)} differ): {new['explanation']}")
        else:
            s.find("explanation_differs", e.position, f"bet {c.bet_id}: same money, explanation was "
                   f"{rec['explanation']!r}, the rules now say {new['explanation']!r}")


def _money_text(s: _State, r: dict[str, Any]) -> str:  # a result line as a dict
    rem = f" + {s.money(Fraction(r['remainder_num'], r['remainder_den']))} kept by rounding" \
        if r.get("remainder_num") else ""
    return f"{r['outcome']}, staked {s.money(r['staked_minor'])}, returned {s.money(r['returned_minor'])}{rem}"


def _settlement_net(s: _State, results: list[dict[str, Any]]) -> dict[str, int]:
    """Round -> player for what is returned; round <-> house for staked - returned (docs/events.md)."""
    net: dict[str, int] = {}
    account, house = round_account(s.round_id), house_account(s.table_id)
    for r in results:
        _add(net, account, -r["staked_minor"])
        _add(net, player_account(r["player_id"]), r["returned_minor"])
        _add(net, house, r["staked_minor"] - r["returned_minor"])
    return net


def describe_step(step: Step) -> str:
    studio = f" studio {step.studio_time}" if step.studio_time else ""
    return f"#{step.n:<3} pos {step.position:<8} server {step.server_time}{studio}  {step.text}"
