"""Spain DGOJ monitoring export (v3.3): player sessions of the live tables.

The feed knows no sessions, so they are defined from it (docs/dgoj.md): a
player's **plays** (their part in one round: first bet to the round's close)
at one table, consecutive plays joined while the gap between the close of one
and the player's first bet in the next is at most `ExportRules.session_gap`.
All times are the studio's (the feed's `studio_time`, in UTC), never the
ledger's recording time, so a feed ingested late gives the same sessions.

Money comes from the player's posting legs (docs/events.md), in integer minor
units: stakes and stake moves are `Participacion`; a void's refunds are
`ParticipacionDevolucion`; what settlements return (stake back and winnings,
pushes included) are `Premios`; a reversal takes back what its settlement
returned, so only the settlement that stands counts.

A round's close is its FIRST settlement or void (a later reversal and
resettlement changes the money, never the session's shape). A session is
`closed` when every round in it is settled or voided (only closed sessions
are exported; the others wait, counted as pending) and `complete` when, on
top, the studio's clock (the latest studio time stored) has passed its end by
more than the gap: the player cannot come back into it.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from domain.errors import require
from ledger.eventlog import EventLog
from ledger.records import (
    BetPlaced,
    DecisionTaken,
    FollowDecided,
    Opened,
    Paused,
    Record,
    RecordType,
    Resumed,
    Settled,
    SettlementReversed,
    Voided,
)
from projections.balances import PLAYER_PREFIX
from projections.rounds import studio_instant

GAME_TYPES = {"blackjack": "BLJ", "baccarat": "PUN"}  # TipoJuego of each game the ledger settles
TEEN_PATTI = "teen-patti"
# Teen Patti has no TipoJuego of its own in v3.3: a named choice, never a silent mapping.
TEEN_PATTI_CHOICES = ("omit", "COM", "AZA")
TEEN_PATTI_DEFAULT = "omit"
SESSION_GAP_DEFAULT = timedelta(minutes=20)
SESSION_GAP_MAX = timedelta(days=1)
PAGE_SIZE = 5000
KINDS: frozenset[RecordType] = frozenset(
    {Opened, BetPlaced, DecisionTaken, FollowDecided, Paused, Resumed, Voided, Settled, SettlementReversed})
_CLOSING = (Settled, Voided)


@dataclass(frozen=True)
class ExportRules:
    """The export's named choices (docs/dgoj.md)."""

    session_gap: timedelta = SESSION_GAP_DEFAULT
    teen_patti: str = TEEN_PATTI_DEFAULT  # omit | COM | AZA

    def __post_init__(self) -> None:
        require(timedelta(0) < self.session_gap <= SESSION_GAP_MAX,
                f"session gap {self.session_gap} outside (0, {SESSION_GAP_MAX}]")
        require(self.teen_patti in TEEN_PATTI_CHOICES, f"teen patti mapping {self.teen_patti!r} not in "
                                                       f"{TEEN_PATTI_CHOICES}")

    def game_type(self, game: str) -> str | None:
        """The TipoJuego of a game; None: left out of the export."""
        if game == TEEN_PATTI:
            return None if self.teen_patti == "omit" else self.teen_patti
        return GAME_TYPES.get(game)


@dataclass
class Play:
    """One player's part in one round."""

    round_id: str
    table_id: str
    round_no: int
    game: str
    ruleset_id: str
    currency: str
    player_id: str
    first_bet_at: datetime
    closed_at: datetime | None = None  # the round's first settlement or void
    status: str = "open"  # open | paused | settled | reversed | voided (the round's, now)
    staked_minor: int = 0
    refunded_minor: int = 0
    won_minor: int = 0

    @property
    def closed(self) -> bool:
        return self.status in ("settled", "voided")

    @property
    def end(self) -> datetime:
        return self.closed_at or self.first_bet_at


@dataclass
class _Round:
    opened: Opened
    status: str = "open"
    closed_at: datetime | None = None
    plays: dict[str, Play] = field(default_factory=dict)  # player id -> play


@dataclass(frozen=True)
class Session:
    """A player's plays at one table with no gap above the limit (module doc)."""

    player_id: str
    table_id: str
    game: str
    plays: tuple[Play, ...]
    complete: bool

    @property
    def session_id(self) -> str:
        """Stable: the table, the player and the session's first round (readable when it fits
        DGOJ's 200 characters, else a digest of the same)."""
        first = self.plays[0]
        text = f"{self.table_id}/{self.player_id}/{first.round_no}"
        return text if len(text) <= 200 else "sha256:" + hashlib.sha256(text.encode()).hexdigest()

    @property
    def start(self) -> datetime:
        return self.plays[0].first_bet_at

    @property
    def end(self) -> datetime:
        return max(p.end for p in self.plays)

    @property
    def closed(self) -> bool:
        return all(p.closed for p in self.plays)

    def totals(self) -> dict[str, tuple[int, int, int]]:
        """currency -> (staked, refunded, won) in minor units."""
        out: dict[str, tuple[int, int, int]] = {}
        for p in self.plays:
            s, r, w = out.get(p.currency, (0, 0, 0))
            out[p.currency] = (s + p.staked_minor, r + p.refunded_minor, w + p.won_minor)
        return out

    @property
    def ruleset_ids(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p.ruleset_id for p in self.plays))

    def content(self, game_type: str, *, with_complete: bool = True) -> str:
        """What an exported record says about this session, canonically: a record
        whose content changed since it was exported is rectified. `complete` is part of
        it because the record says it (`SesionCompleta`): a session sent as incomplete
        that then ends with no other change is rectified once, so the regulator's last
        record of it says `S`. `with_complete=False`: the content as registers wrote it
        before the flag was in it (`dgoj_register.place` compares old rows with it)."""
        content: dict[str, object] = {
            "player": self.player_id, "table": self.table_id, "type": game_type,
            "start": self.start.isoformat(), "end": self.end.isoformat(),
            "rounds": [p.round_id for p in self.plays], "totals": self.totals()}
        if with_complete:
            content["complete"] = self.complete
        return json.dumps(content, sort_keys=True)


# ------------------------------------------------------------------ reading the log
def _records(log: EventLog) -> Iterator[Record]:
    """The stored events the sessions need (cards and shoe events are not decoded)."""
    position = 1
    while True:
        page = log.page(position, PAGE_SIZE, KINDS)
        yield from page.records
        if page.read < PAGE_SIZE:
            return
        position = page.last + 1


def _player_legs(record: Record) -> Iterator[tuple[str, int]]:
    for account, amount_minor in getattr(record, "postings", ()):
        if account.startswith(PLAYER_PREFIX):
            yield account[len(PLAYER_PREFIX):], amount_minor


def collect_plays(records: Iterable[Record]) -> tuple[list[Play], datetime | None]:
    """Every play in the records, and the latest studio time seen (the studio's clock)."""
    rounds: dict[str, _Round] = {}
    latest: datetime | None = None
    for record in records:
        at = studio_instant(record.studio_time) if record.studio_time else None
        if at is not None and (latest is None or at > latest):
            latest = at
        if isinstance(record, Opened):
            rounds[record.originator_id] = _Round(record)
            continue
        rnd = rounds.get(record.originator_id)
        if rnd is None or at is None:  # a tombstone void: the round never opened, no money moved
            continue
        _apply(rnd, record, at)
    return [p for rnd in rounds.values() for p in rnd.plays.values()], latest


def _apply(rnd: _Round, record: Record, at: datetime) -> None:
    match record:
        case Paused():
            rnd.status = "paused"
        case Resumed():
            rnd.status = "open"
        case Settled() | Voided():
            rnd.status = "settled" if isinstance(record, Settled) else "voided"
            rnd.closed_at = rnd.closed_at or at
        case SettlementReversed():
            rnd.status = "reversed"
    for player_id, amount_minor in _player_legs(record):
        play = rnd.plays.get(player_id)
        if play is None:
            o = rnd.opened
            play = rnd.plays[player_id] = Play(o.originator_id, o.table_id, o.round_no, o.game, o.ruleset_id,
                                               o.currency, player_id, at)
        match record:
            case BetPlaced() | DecisionTaken() | FollowDecided():
                play.staked_minor -= amount_minor
            case Voided():
                play.refunded_minor += amount_minor
            case Settled() | SettlementReversed():
                play.won_minor += amount_minor
    for play in rnd.plays.values():
        play.status, play.closed_at = rnd.status, rnd.closed_at


# ------------------------------------------------------------------ sessions
def sessions_of(plays: Iterable[Play], rules: ExportRules, clock: datetime | None) -> list[Session]:
    """Plays grouped into sessions (module doc), ordered by start, table and player."""
    by_key: dict[tuple[str, str], list[Play]] = {}
    for play in plays:
        by_key.setdefault((play.player_id, play.table_id), []).append(play)
    out = []
    for (player_id, table_id), mine in by_key.items():
        mine.sort(key=lambda p: (p.first_bet_at, p.round_no))
        run: list[Play] = []
        for play in mine:
            if run and play.first_bet_at - max(p.end for p in run) > rules.session_gap:
                out.append(make_session(player_id, table_id, run, rules, clock))
                run = []
            run.append(play)
        out.append(make_session(player_id, table_id, run, rules, clock))
    out.sort(key=lambda s: (s.start, s.table_id, s.player_id))
    return out


def make_session(player_id: str, table_id: str, plays: list[Play], rules: ExportRules,
                 clock: datetime | None) -> Session:
    """A session of the plays (one player, one table, in order), complete or not by the studio's clock."""
    end = max(p.end for p in plays)
    closed = all(p.closed for p in plays)
    complete = closed and clock is not None and clock - end > rules.session_gap
    return Session(player_id, table_id, plays[0].game, tuple(plays), complete)


def read_sessions(log: EventLog, rules: ExportRules) -> list[Session]:
    """Every session in the store (one pass over its events)."""
    plays, clock = collect_plays(_records(log))
    return sessions_of(plays, rules, clock)
