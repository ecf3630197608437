"""The Netherlands' KSA control database (CDB, XSDs v1.11): what the ledger's rounds
become (docs/ksa.md).

A player's session at a table (`projections.dgoj.Session`: the same plays, the same gap
rule) is one `WOK_Game_Session`; each play (one player's part in one round) gives up to
three `WOK_Player_Account_Transaction`s, from the player's own posting legs in integer
minor units: `STAKE` (everything staked), `WINNING` (what settlements returned, stake back
included), `VOID_STAKE` (the refund of a voided round); each rule set is one `WOK_Game` of
type `CASINO`. So stakes - winnings - refunds over the transactions is the house's result,
as in the `ggr` view.

Every record is a *subject* (a game, a session, a transaction) with a *content*; the
register (`projections/ksa_register.py`) keeps the content last sent, and the seam's rule
(`regulator.placement`) says what to send: a new record, nothing, or a replacement
(`Replaced_Record_ID` naming the record it replaces); a transaction sent that no longer
exists (the `WINNING` of a round reversed and voided) is cancelled (`KSA_Cancellation`).
Identifiers are the XSD's `UID` pattern: UUIDv5 of the subject (stable across exports).
"""
from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

from domain.operators import DEFAULT_OPERATOR_ID, player_of
from projections.dgoj import Play, Session

VERSION: Final = "v1.11"
CURRENCY: Final = "EUR"  # the CDB's monetary amounts carry no currency: the Dutch market's
NAMESPACE: Final = uuid.UUID("6a1f3c2e-5b7d-4e0a-9c8b-1d2e3f405162")  # the ledger's UUIDv5 namespace for KSA ids
STRING_MEDIUM_MAX: Final = 256

GAME, SESSION, TRANSACTION, CANCELLATION = "wok_game", "wok_game_session", "wok_player_account_transaction", \
    "ksa_cancellation"
KINDS: Final = (GAME, TRANSACTION, SESSION, CANCELLATION)  # the order of a run's files of a kind
ELEMENT: Final = {GAME: "WOK_Game", SESSION: "WOK_Game_Session", TRANSACTION: "WOK_Player_Account_Transaction",
                  CANCELLATION: "KSA_Cancellation"}
GAME_NAMES: Final = {"blackjack": "Live Blackjack", "baccarat": "Live Baccarat", "teen-patti": "Live Teen Patti 20-20"}


class KsaError(ValueError):
    """Data the format cannot carry (the export stops, nothing of the batch registered)."""


def element(kind: str) -> str:
    return f"{ELEMENT[kind]}_{VERSION}"


def xsd_name(kind: str) -> str:
    return f"{kind}_{VERSION}.xsd"


def uid(*parts: str) -> str:
    """The XSD's UID (8-4-4-4-12 of [a-z0-9]): a UUIDv5 of the parts, stable."""
    return str(uuid.uuid5(NAMESPACE, "\x1f".join(parts)))


def record_id(operator_id: str, key: str, seq: int) -> str:
    """A record's Record_ID: the subject's `seq`-th record, unique across operators (the game
    subjects are every operator's: `game/RULESET`); the default operator's as it always was."""
    parts = ("record", key, str(seq))
    return uid(*parts) if operator_id == DEFAULT_OPERATOR_ID else uid(parts[0], operator_id, *parts[1:])


def utc(at: datetime) -> str:
    """dateTimeUTC: whole seconds, `Z` (the XSD's pattern has no fraction)."""
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def amount(minor: int) -> str:
    """monetaryAmount from integer minor units: `1` -> `0.01`, exact (never via a float)."""
    if type(minor) is not int:
        raise KsaError(f"amount {minor!r} is not an integer number of minor units")
    units, cents = divmod(abs(minor), 100)
    return f"{'-' if minor < 0 else ''}{units}.{cents:02d}"


def medium(text: str, what: str) -> str:
    if len(text) > STRING_MEDIUM_MAX:
        raise KsaError(f"{what} {text[:40]!r}... is longer than the CDB's {STRING_MEDIUM_MAX} characters")
    return text


@dataclass(frozen=True)
class Subject:
    """One thing the regulator holds a record of, and what a record of it says now.
    `fields`: the record's specific elements, in the XSD's order (a nested element is a
    tuple of (name, fields) pairs)."""

    kind: str
    key: str  # unique per operator: `game/RULESET`, `session/ID`, `tx/ROUND/PLAYER/TYPE`
    content: str  # what the register compares (canonical JSON)
    fields: tuple[tuple[str, object], ...]


def _content(**values: object) -> str:
    return json.dumps(values, sort_keys=True, separators=(",", ":"))


def game(play: Play) -> Subject:
    name = f"{GAME_NAMES.get(play.game, play.game)} ({play.ruleset_id})"
    at = utc(play.first_bet_at)
    return Subject(GAME, f"game/{play.ruleset_id}", _content(name=name, type="CASINO"), (
        ("Game_ID", game_id(play.ruleset_id)), ("Game_Type", "CASINO"),
        ("Game_Commercial_Name", medium(name, "game name")), ("Game_Datetime_Introduction", at),
        ("Game_Datetime_Active", at)))


def game_id(ruleset_id: str) -> str:
    return uid("game", ruleset_id)


def check_currency(plays: Iterable[Play]) -> None:
    """The CDB's amounts carry no currency: a play in another than EUR stops the export."""
    for play in plays:
        if play.currency != CURRENCY:
            raise KsaError(f"round {play.round_id}: currency {play.currency}; the CDB's amounts are {CURRENCY}")


def _movements(play: Play) -> Iterator[tuple[str, str, int, datetime]]:
    """(key, type, minor units, time) of a play's transactions: STAKE at the first bet;
    WINNING and VOID_STAKE, when not 0, at the round's first settlement or void (a later
    reversal changes the amount, never the time)."""
    end = play.closed_at or play.first_bet_at
    for type_, minor, at in (("STAKE", play.staked_minor, play.first_bet_at), ("WINNING", play.won_minor, end),
                             ("VOID_STAKE", play.refunded_minor, end)):
        if minor != 0 or type_ == "STAKE":
            yield f"tx/{play.round_id}/{play.player_id}/{type_}", type_, minor, at


def transactions(play: Play) -> Iterator[Subject]:
    """A play's money movements (`_movements`) as transaction subjects (its currency checked
    by the caller, for the whole session before any of its records: `check_currency`)."""
    for key, type_, minor, at in _movements(play):
        yield Subject(TRANSACTION, key, _content(player=play.player_id, type=type_, amount=minor, at=utc(at)), (
            ("Player_Profile_ID", medium(player_of(play.player_id), "player id")), ("Transaction_ID", uid(key)),
            ("Transaction_Datetime", utc(at)), ("Transaction_Amount", amount(minor)),
            ("Transaction_Type", type_), ("Transaction_Status", "SUCCESSFUL")))


@dataclass(frozen=True)
class Listing:
    """A game session's `Game_Transactions`: one `Game_Transaction` (its id, its player) per
    transaction of its plays, made again from the plays each time it is read, never held (a
    session lists every transaction of its player at the table, however long it sat)."""

    plays: tuple[Play, ...]
    player: str  # as its operator names the player
    count: int

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[tuple[str, object]]:
        for play in self.plays:
            for key, *_ in _movements(play):
                yield "Game_Transaction", (("Transaction_ID", uid(key)), ("Player_Profile_ID", self.player))


def session(s: Session) -> Subject:
    """The player's session as a game session: its rounds, those the player won (returned
    more than staked), its transactions (a `Listing`; the content keeps a digest of their keys)."""
    key = f"session/{s.session_id}"
    won = sum(1 for p in s.plays if p.won_minor > p.staked_minor)
    ruleset = s.plays[0].ruleset_id
    digest, count = hashlib.sha256(), 0  # a digest: sessions grow long
    for play in s.plays:
        for tx_key, *_ in _movements(play):
            digest.update((tx_key if count == 0 else "\n" + tx_key).encode())  # the keys joined by newlines
            count += 1
    content = _content(game=ruleset, start=utc(s.start), end=utc(s.end), rounds=len(s.plays), won=won,
                       transactions=digest.hexdigest())
    listing = Listing(s.plays, medium(player_of(s.player_id), "player id"), count)
    return Subject(SESSION, key, content, (
        ("Game_ID", game_id(ruleset)), ("Game_Session_ID", uid(key)),
        ("Game_Session_Start_Datetime", utc(s.start)), ("Game_Session_End_Datetime", utc(s.end)),
        ("Game_Session_Rounds", str(len(s.plays))), ("Game_Session_Rounds_Won", str(won)),
        ("Game_Transactions", listing)))


def withdrawn(play: Play) -> Iterator[str]:
    """The keys of the play's transactions that no longer exist (an amount now 0: the winnings
    of a round reversed and voided): if sent, they are cancelled."""
    for type_, minor in (("WINNING", play.won_minor), ("VOID_STAKE", play.refunded_minor)):
        if minor == 0:
            yield f"tx/{play.round_id}/{play.player_id}/{type_}"
