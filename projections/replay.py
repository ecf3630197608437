"""Exact replay of one round for disputes: pure, no I/O.

`recompute(events_of_round)` feeds the recorded facts (bets, cards, decisions,
follows) to a FRESH pure domain model (`domain.registry.new_round`) under the
recorded rule-set id and version, never to the ledger's aggregate, and
compares everything the ledger recorded with what the rules give:
stake moves, refunds, postings, and each Settled result bet by bet.
Any difference is a `Finding`; nothing is corrected. Kinds: docs/audit.md.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from domain.cards import parse_card
from domain.errors import Refusal
from domain.model import Bet
from domain.money import format_minor, house_account, player_account, round_account
from domain.registry import get_rule_set, new_round
from projections.audit import Finding, Recorded
from projections.reader import RecordedEvent

ROUND_PREFIX = "Round."
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

    @property
    def agrees(self) -> bool:
        return self.recorded == self.recomputed

    def as_dict(self) -> dict[str, Any]:
        return {"settlement_no": self.settlement_no, "position": self.position, "bet_id": self.bet_id,
                "agrees": self.agrees, "recorded": self.recorded, "recomputed": self.recomputed}


class Replay(NamedTuple):
    steps: list[Step]
    results: list[BetCheck]
    findings: list[Finding]


@dataclass
class _State:
    """What the replay tracks besides the model: money put in, postings, settlements."""

    round_id: str = ""
    table_id: str = ""
    currency: str | None = None
    rules: Any = None
    model: Any = None
    stopped: str | None = None  # why the model can no longer follow the facts
    unknown_rules_at: int | None = None  # position of an Opened whose rule set the registry lacks
    put_in: dict[tuple[str, str], int] = field(default_factory=dict)
    settlements: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # no -> postings
    steps: list[Step] = field(default_factory=list)
    results: list[BetCheck] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    def find(self, kind: str, position: int, message: str) -> None:
        self.findings.append(Finding(kind, position, message))

    def money(self, amount_minor: int) -> str:
        return format_minor(amount_minor, self.currency)


def recompute(events_of_round: Iterable[Any], *, views: bool = True) -> Replay:
    """Replay one round's events (in order) on a fresh domain model; see the module doc.

    `views=False` is the bulk check of `ledger audit replay`: exactly the same
    checks, results and findings, but no timeline (`steps` is empty): no step
    text, no state snapshot after each event, no timestamp formatting."""
    events = [Recorded.of(e) if views else _light(e) for e in events_of_round]
    s = _State(round_id=events[0].originator_id if events else "")
    _check_sequence(s, events)
    for event in events:
        name = event.name.removeprefix(ROUND_PREFIX)
        check = _CHECKS.get(name)
        if check is None:
            s.find("unknown_event", event.position, f"event {event.name} is not in the Round vocabulary")
        else:
            _check_postings_balance(s, event)
            check(s, event)
        if views:
            text, source = _TEXTS[name](s, event) if check is not None else (event.name, None)
            view = s.model.view() if s.model is not None else None
            s.steps.append(Step(event.originator_version, event.position, name, event.fields.get("studio_time"),
                                event.timestamp, text, source, view))
    return Replay(s.steps, s.results, s.findings)


def _check_sequence(s: _State, events: list[Recorded]) -> None:
    if len(events) > EVENTS_PER_ROUND_MAX:
        s.find("too_many_events", events[-1].position, f"{len(events)} events; at most {EVENTS_PER_ROUND_MAX}")
    for expected, event in enumerate(events, 1):
        if event.originator_id != s.round_id:
            s.find("foreign_event", event.position, f"event of {event.originator_id} among {s.round_id}'s")
        if event.originator_version != expected:
            s.find("missing_event", event.position, f"event number {event.originator_version} where number "
                   f"{expected} was expected: the round's events are not complete")
            break


def _check_postings_balance(s: _State, event: Recorded) -> None:
    postings = event.fields.get("postings")
    if postings is not None and sum(p["amount_minor"] for p in postings) != 0:
        s.find("postings_unbalanced", event.position, f"postings sum to {sum(p['amount_minor'] for p in postings)}")


def _call(s: _State, event: Recorded, describe: Callable[[], str], call: Any) -> Any:
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


def _net(postings: Iterable[dict[str, Any]]) -> dict[str, int]:
    """Net amount per account, zeros dropped (dict equality ignores order; messages sort)."""
    net: dict[str, int] = {}
    for p in postings:
        _add(net, p["account"], p["amount_minor"])
    return {k: v for k, v in net.items() if v != 0}


def _compare_postings(s: _State, event: Recorded, expected: dict[str, int]) -> None:
    recorded = _net(event.fields.get("postings") or [])
    wanted = {k: v for k, v in expected.items() if v != 0}
    if recorded != wanted:
        s.find("postings_differ", event.position, f"postings net {dict(sorted(recorded.items()))}; the facts give "
               f"{dict(sorted(expected.items()))}")


# --------------------------------------------------------------------------- one check per event
# A check drives the model and records findings; it builds no text, so the bulk
# audit pays only for the comparison. The timeline's words are in the next section.


def _opened(s: _State, e: Recorded) -> None:
    f = e.fields
    s.table_id, s.currency = f["table_id"], f.get("currency")
    try:
        rules = get_rule_set(f["ruleset_id"], f["ruleset_version"])
    except Refusal as refusal:
        s.stopped, s.unknown_rules_at = "unknown rule set", e.position
        s.find("ruleset_unknown", e.position, refusal.message)
        return
    if _content_hash(rules) != f.get("ruleset_hash"):
        s.find("ruleset_hash_mismatch", e.position, f"{_rules_label(f)} hashes to {_content_hash(rules)} now; the "
               f"round recorded {f.get('ruleset_hash')}: the rule set changed after this round was played")
    s.rules = rules
    s.model = new_round(rules, round_in_shoe=f["round_in_shoe"])


def _bet_placed(s: _State, e: Recorded) -> None:
    f = e.fields
    bet = Bet(f["bet_id"], f["player_id"], f["spot"], f["bet_type"], f["stake_minor"], f.get("mode"), f.get("seat_no"))
    _call(s, e, lambda: f"bet {bet.bet_id}", lambda m: m.place_bet(bet))
    _put_in(s, bet.bet_id, bet.player_id, bet.stake_minor)
    _compare_postings(s, e, _stake_net(s, [(bet.player_id, bet.stake_minor)]))


def _betting_closed(s: _State, e: Recorded) -> None:
    _call(s, e, lambda: "close of betting", lambda m: m.close_betting())


def _card_dealt(s: _State, e: Recorded) -> None:
    f = e.fields
    card = parse_card(f["card"])
    _call(s, e, lambda: f"card {card}", lambda m: m.deal(card, f["target"]))


def _decision_taken(s: _State, e: Recorded) -> None:
    f = e.fields
    moves = _call(s, e, lambda: f"decision {f['action']} on {f['hand']}",
                  lambda m: m.decide(f["hand"], f["action"], f["source"], f.get("amount_minor")))
    _check_moves(s, e, moves)


def _follow_decided(s: _State, e: Recorded) -> None:
    f = e.fields
    moves = _call(s, e, lambda: f"follow of {f['bet_id']}", lambda m: m.follow(f["bet_id"], f["kind"], f["accept"]))
    _check_moves(s, e, moves)


def _no_check(s: _State, e: Recorded) -> None:
    """Paused / Resumed: nothing for the rules to recompute (their postings balance is checked for all)."""


def _voided(s: _State, e: Recorded) -> None:
    f = e.fields
    expected = [{"bet_id": b, "player_id": p, "amount_minor": a} for (b, p), a in s.put_in.items() if a > 0]
    if sorted(map(_key, f["refunds"])) != sorted(map(_key, expected)):
        s.find("refunds_differ", e.position, f"recorded refunds {f['refunds']}; every amount put in is {expected}")
    net: dict[str, int] = {}
    account = round_account(s.round_id)
    for r in expected:
        _add(net, player_account(r["player_id"]), r["amount_minor"])
        _add(net, account, -r["amount_minor"])
    _compare_postings(s, e, net)
    s.stopped = s.stopped or "voided"


def _settled(s: _State, e: Recorded) -> None:
    f = e.fields
    no = f["settlement_no"]
    if s.rules is not None and (f["ruleset_id"], f["ruleset_version"]) != s.rules.key:
        s.find("ruleset_mismatch", e.position, f"settled under {f['ruleset_id']} v{f['ruleset_version']} but "
               f"opened under {s.rules.id} v{s.rules.version}")
    recomputed = _recomputed_results(s, e)
    _compare_results(s, e, no, f["results"], recomputed)
    if recomputed is not None:
        _compare_postings(s, e, _settlement_net(s, recomputed))
    s.settlements[no] = f.get("postings") or []


def _settlement_reversed(s: _State, e: Recorded) -> None:
    f = e.fields
    original = s.settlements.get(f["settlement_no"])
    if original is None:
        s.find("reversal_unmatched", e.position, f"reverses settlement {f['settlement_no']}, which is not recorded")
    else:
        negated = [{"account": p["account"], "amount_minor": -p["amount_minor"]} for p in original]
        if _net(negated) != _net(f["postings"]):
            s.find("postings_differ", e.position, f"reversal postings are not the exact negation of settlement "
                   f"{f['settlement_no']}")


_CHECKS = {
    "Opened": _opened, "BetPlaced": _bet_placed, "BettingClosed": _betting_closed, "CardDealt": _card_dealt,
    "DecisionTaken": _decision_taken, "FollowDecided": _follow_decided, "Paused": _no_check,
    "Resumed": _no_check, "Voided": _voided, "Settled": _settled, "SettlementReversed": _settlement_reversed,
}


# --------------------------------------------------------------------------- the timeline's words
# Run after the event's check (so the state, e.g. the currency, is as of this event), only for
# the single-round `ledger replay`: (one line a dispute handler reads, who decided).


def _opened_text(s: _State, e: Recorded) -> tuple[str, str | None]:
    f = e.fields
    if s.unknown_rules_at == e.position:
        return f"opened under {_rules_label(f)} (unknown here)", None
    return (f"opened {f['table_id']}#{f['round_no']} ({f['game']}) under {_rules_label(f)}, shoe {f['shoe_id']} "
            f"round {f['round_in_shoe']} in the shoe, dealer {f['dealer_id']}, {f.get('currency')}"), None


def _bet_placed_text(s: _State, e: Recorded) -> tuple[str, str | None]:
    f = e.fields
    mode = f" ({f['mode']})" if f.get("mode") else ""
    return (f"bet {f['bet_id']} by {f['player_id']} at {f['spot']}: {f['bet_type']}{mode} "
            f"{s.money(f['stake_minor'])}"), None


def _card_dealt_text(s: _State, e: Recorded) -> tuple[str, str | None]:
    f = e.fields
    card = parse_card(f["card"])
    return f"card #{f['seq_no']} {card} ({card.name}) to {f['target']}", "dealer"


def _decision_taken_text(s: _State, e: Recorded) -> tuple[str, str | None]:
    f = e.fields
    extra = f" {s.money(f['amount_minor'])}" if f.get("amount_minor") else ""
    return f"{f['hand']}: {f['action']}{extra} (decided by {f['source']}){_moves_text(s, f)}", f["source"]


def _follow_decided_text(s: _State, e: Recorded) -> tuple[str, str | None]:
    f = e.fields
    verb = "follows" if f["accept"] else "declines to follow"
    return f"bet {f['bet_id']} {verb} the {f['kind']}{_moves_text(s, f)}", "player"


def _paused_text(s: _State, e: Recorded) -> tuple[str, str | None]:
    f = e.fields
    flag = f" [refused fact: {f['flag_code']}]" if f.get("flag_code") else ""
    return f"PAUSED: {f['cause']} by {f['by']}{flag}: {f.get('note', '')}", f["by"]


def _resumed_text(s: _State, e: Recorded) -> tuple[str, str | None]:
    return f"resumed by {e.fields['by']}: {e.fields.get('note', '')}", e.fields["by"]


def _voided_text(s: _State, e: Recorded) -> tuple[str, str | None]:
    f = e.fields
    total = sum(r["amount_minor"] for r in f["refunds"])
    return f"VOIDED: {f['cause']} by {f['by']}: {f.get('note', '')}; refunds {s.money(total)} " \
           f"on {len(f['refunds'])} line(s)", f["by"]


def _settled_text(s: _State, e: Recorded) -> tuple[str, str | None]:
    f = e.fields
    paid = sum(r["returned_minor"] for r in f["results"])
    return f"SETTLED (settlement {f['settlement_no']}): {len(f['results'])} line(s), returned {s.money(paid)}", None


def _settlement_reversed_text(s: _State, e: Recorded) -> tuple[str, str | None]:
    f = e.fields
    return f"SETTLEMENT {f['settlement_no']} REVERSED by {f['by']}: {f['reason']}", f["by"]


_TEXTS = {
    "Opened": _opened_text, "BetPlaced": _bet_placed_text, "BettingClosed": lambda s, e: ("betting closed", None),
    "CardDealt": _card_dealt_text, "DecisionTaken": _decision_taken_text, "FollowDecided": _follow_decided_text,
    "Paused": _paused_text, "Resumed": _resumed_text, "Voided": _voided_text, "Settled": _settled_text,
    "SettlementReversed": _settlement_reversed_text,
}


# --------------------------------------------------------------------------- helpers


def _light(item: Any) -> Any:
    """Bulk mode: no timestamp formatting (the steps are not shown). The reader's
    events already carry the same attributes (originator_id as text): used as they are."""
    if isinstance(item, (Recorded, RecordedEvent)):
        return item
    position, name, originator_id, version, timestamp, fields = item
    return Recorded(position, name, str(originator_id), version, timestamp, fields)


_HASHES: dict[int, tuple[Any, str]] = {}


def _content_hash(rules: Any) -> str:
    """Rule sets are frozen and few: hash each object once per process."""
    cached = _HASHES.get(id(rules))
    if cached is None or cached[0] is not rules:
        cached = _HASHES[id(rules)] = (rules, rules.content_hash())
    return cached[1]


def _rules_label(f: dict[str, Any]) -> str:
    return f"{f['ruleset_id']} v{f['ruleset_version']}"


def _key(d: dict[str, Any]) -> tuple:
    return tuple(sorted(d.items()))


def _put_in(s: _State, bet_id: str, player_id: str, amount_minor: int) -> None:
    s.put_in[(bet_id, player_id)] = s.put_in.get((bet_id, player_id), 0) + amount_minor


def _stake_net(s: _State, stakes: list[tuple[str, int]]) -> dict[str, int]:
    net: dict[str, int] = {}
    account = round_account(s.round_id)
    for player_id, amount in stakes:
        _add(net, player_account(player_id), -amount)
        _add(net, account, amount)
    return net


def _check_moves(s: _State, e: Recorded, moves: Any) -> None:
    recorded = e.fields.get("stake_moves") or []
    for m in recorded:
        _put_in(s, m["bet_id"], m["player_id"], m["amount_minor"])
    _compare_postings(s, e, _stake_net(s, [(m["player_id"], m["amount_minor"]) for m in recorded]))
    if moves is None:
        return
    replayed = [{"bet_id": m.bet_id, "player_id": m.player_id, "amount_minor": m.amount_minor, "reason": m.reason}
                for m in moves]
    if replayed != recorded:
        s.find("stake_moves_differ", e.position, f"recorded stake moves {recorded}; the rules give {replayed}")


def _moves_text(s: _State, f: dict[str, Any]) -> str:
    moves = f.get("stake_moves") or []
    return "".join(f"; {m['player_id']} adds {s.money(m['amount_minor'])} ({m['reason']})" for m in moves)


def _recomputed_results(s: _State, e: Recorded) -> list[dict[str, Any]] | None:
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


def _compare_results(s: _State, e: Recorded, no: int, recorded: list[dict[str, Any]],
                     recomputed: list[dict[str, Any]] | None) -> None:
    rec = {r["bet_id"]: {k: r.get(k) for k in RESULT_KEYS} for r in recorded}
    if recomputed is None:
        s.results += [BetCheck(no, e.position, b, r, None) for b, r in rec.items()]
        return
    new = {r["bet_id"]: {k: r.get(k) for k in RESULT_KEYS} for r in recomputed}
    for bet_id in list(rec) + [b for b in new if b not in rec]:
        check = BetCheck(no, e.position, bet_id, rec.get(bet_id), new.get(bet_id))
        s.results.append(check)
        _result_finding(s, e, check)


def _result_finding(s: _State, e: Recorded, c: BetCheck) -> None:
    if c.agrees:
        return
    if c.recorded is None:
        s.find("result_missing", e.position, f"bet {c.bet_id}: the rules settle it ({_money_text(s, c.recomputed)}) "
               "but the settlement has no line for it")
    elif c.recomputed is None:
        s.find("result_extra", e.position, f"bet {c.bet_id}: recorded ({_money_text(s, c.recorded)}) but the rules "
               "give no such settlement line")
    elif any(c.recorded[k] != c.recomputed[k] for k in ("player_id", "bet_type", *MONEY_KEYS)):
        keys = [k for k in ("player_id", "bet_type", *MONEY_KEYS) if c.recorded[k] != c.recomputed[k]]
        s.find("payout_differs", e.position, f"bet {c.bet_id}: recorded {_money_text(s, c.recorded)}; the rules give "
               f"{_money_text(s, c.recomputed)} ({', '.join(keys)} differ): {c.recomputed['explanation']}")
    else:
        s.find("explanation_differs", e.position, f"bet {c.bet_id}: same money, explanation was "
               f"{c.recorded['explanation']!r}, the rules now say {c.recomputed['explanation']!r}")


def _money_text(s: _State, r: dict[str, Any]) -> str:
    rem = f" + {r['remainder_num']}/{r['remainder_den']} kept" if r.get("remainder_num") else ""
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
