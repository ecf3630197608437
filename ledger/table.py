"""The Table aggregate: what spans every round at one table (its configuration).

One aggregate per table id (`table_id_for(table_id)`), made by its first
`configure_table`. Each accepted change is a new configuration version
(`Table.Configured`, version 1, 2, ...) carrying the whole configuration and
its content hash; a configuration identical to the current one records
nothing. A table never configured has no aggregate: its rounds play by the
rule set's defaults and record exactly what they always did.

Seats (domain/seating.py): tables whose rule set keeps seats across
rounds (`seats_span_rounds`, `blackjack/live-8d` v2) also keep their seating here. Before
a round takes a bet the ledger asks `check_bet`; when a round closes (settled or voided)
for the first time, `round_closed` records `Table.SeatingChanged` with the whole seating
after that round when it changed (a handful of seats: a snapshot is simpler to audit
than a diff). Such a table may have an aggregate with seats and no configuration
(`current` None): its rounds then play by the rule set's defaults, as before.

API (kept small):
- `Table.new(table_id)`; `configure(stamp, config)` checks then records;
- `current` -> the latest `TableConfig` (None before the first);
- `config_at(version)` -> the configuration of that version (history is kept
  in memory: a table is reconfigured rarely);
- `rules_for_round(ruleset_id, version, currency, round_no)` -> (config, effective
  rules) for open_round, refused with `table_mismatch` when the round names another
  rule set or currency than the table's configuration.

What may be configured is decided in domain/tableconfig.py (pure); the time zone
name is checked here (zoneinfo reads the system's zone database).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any
from uuid import UUID, uuid5
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from domain import registry
from domain.blackjack_rules import BlackjackRules
from domain.errors import InvariantBroken, refuse, require
from domain.model import Bet
from domain.refusals import RefusalCode
from domain.ruleset import RuleSet
from domain.seating import Seating, after_round, check_bet, seat_plays
from domain.tableconfig import TableSettings, check_settings, content_hash, effective_rules
from ledger.ids import ID_MEMO_MAX, NAMESPACE
from ledger.library.aggregate import LedgerAggregate, LedgerEvent, Stamp
from ledger.round import Round
from ledger.roundstate import DecisionPlay

CONFIG_VERSIONS_MAX = 100_000  # a limit on everything: no table is reconfigured this often


@lru_cache(maxsize=ID_MEMO_MAX)
def table_id_for(table_id: str) -> UUID:
    return uuid5(NAMESPACE, f"table/{table_id}")


@dataclass(frozen=True)
class TableConfig:
    """One configuration version of a table, as recorded."""

    table_id: str
    config_version: int
    game: str
    ruleset_id: str
    ruleset_version: int
    currency: str
    timezone: str  # IANA name: the table's gaming days
    settings: TableSettings = field(default_factory=TableSettings)
    config_hash: str = ""

    def content(self) -> dict[str, Any]:
        """What the hash covers: everything but the version number and the hash."""
        return {"table_id": self.table_id, "game": self.game, "ruleset_id": self.ruleset_id,
                "ruleset_version": self.ruleset_version, "currency": self.currency, "timezone": self.timezone,
                "settings": self.settings.as_dict()}

    def rules(self) -> RuleSet:
        """The rule set with this table's overrides (what a round at the table plays by)."""
        return effective_rules(registry.get_rule_set(self.ruleset_id, self.ruleset_version), self.settings)


def valid_timezone(timezone: str) -> bool:
    """An IANA zone name the system's zone database knows."""
    try:
        ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        return False
    return True


def check_timezone(table_id: str, timezone: str) -> None:
    if not valid_timezone(timezone):
        raise refuse(RefusalCode.BAD_TIMEZONE, table_id=table_id, timezone=timezone)


class Table(LedgerAggregate):
    EVENT_NAME_PREFIX = "Table."  # how a command's Result names this aggregate's events

    class Event(LedgerEvent["Table"]):
        def new_aggregate(self) -> Table:
            return Table(self.originator_id, self.timestamp)

    class Configured(Event):
        table_id: str
        config_version: int
        config_hash: str
        game: str
        ruleset_id: str
        ruleset_version: int
        currency: str
        timezone: str
        settings: dict[str, Any]  # domain.tableconfig.TableSettings.as_dict()

        def apply(self, t: Table) -> None:
            t.table_id = self.table_id
            t.history.append(TableConfig(
                self.table_id, self.config_version, self.game, self.ruleset_id, self.ruleset_version, self.currency,
                self.timezone, TableSettings.from_dict(self.settings), self.config_hash,
            ))

    class SeatingChanged(Event):
        table_id: str
        round_id: str
        round_no: int
        voided: bool
        seating: dict[str, Any]  # domain.seating.Seating.as_dict(): held, lost, last_round_no

        def apply(self, t: Table) -> None:
            t.table_id = self.table_id
            t.seating = Seating.from_dict(self.seating)

    def __init__(self, table_uuid: UUID, created_on: datetime) -> None:
        super().__init__(table_uuid, created_on)
        self.table_id = ""
        self.history: list[TableConfig] = []  # every configuration version, in order
        self.seating = Seating()  # seats that span rounds (live-8d v2)

    @classmethod
    def new(cls, table_id: str) -> Table:
        return cls(table_id_for(table_id), datetime.now(UTC))

    @property
    def current(self) -> TableConfig | None:
        return self.history[-1] if self.history else None

    def config_at(self, config_version: int) -> TableConfig:
        require(1 <= config_version <= len(self.history), f"table {self.table_id} has no configuration v{config_version}")
        return self.history[config_version - 1]

    def configure(self, stamp: Stamp, *, table_id: str, game: str, ruleset_id: str, ruleset_version: int,
                  currency: str, timezone: str, settings: TableSettings) -> TableConfig | None:
        """Check and record a new configuration version; the same content again records nothing (None)."""
        rules = registry.get_rule_set(ruleset_id, ruleset_version)
        if rules.game != game:
            raise refuse(
                RefusalCode.TABLE_MISMATCH, "configure", table_id=table_id, game=game, ruleset_id=ruleset_id,
                version=ruleset_version, ruleset_game=rules.game)
        check_timezone(table_id, timezone)
        check_settings(rules, settings, table_id)
        if len(self.history) >= CONFIG_VERSIONS_MAX:
            raise refuse(
                RefusalCode.TABLE_SETTING_FORBIDDEN, "versions", table_id=table_id, versions=len(self.history))
        draft = TableConfig(table_id, len(self.history) + 1, game, ruleset_id, ruleset_version, currency, timezone,
                            settings)
        digest = content_hash(draft.content())
        current = self.current
        if current is not None and current.config_hash == digest:
            return None
        self._record_event(
            Table.Configured, stamp, table_id=table_id, config_version=draft.config_version, config_hash=digest,
            game=game, ruleset_id=ruleset_id, ruleset_version=ruleset_version, currency=currency, timezone=timezone,
            settings=settings.as_dict(),
        )
        return self.current

    def config_for_round(self, *, ruleset_id: str, ruleset_version: int, currency: str, round_no: int) -> TableConfig:
        """The current configuration for a round opening now; refused if the round disagrees with it."""
        config = self.current
        if config is None:
            raise InvariantBroken(f"table {self.table_id} has no configuration")
        if (ruleset_id, ruleset_version, currency) != (config.ruleset_id, config.ruleset_version, config.currency):
            raise refuse(
                RefusalCode.TABLE_MISMATCH, table_id=self.table_id, round_no=round_no, ruleset_id=ruleset_id,
                version=ruleset_version, currency=currency, config_version=config.config_version,
                table_ruleset_id=config.ruleset_id, table_version=config.ruleset_version,
                table_currency=config.currency)
        return config

    # ------------------------------------------------------------------ seats (domain/seating.py)

    def check_bet(self, rules: BlackjackRules, bet: Bet, round_no: int) -> None:
        check_bet(rules, self.seating, bet, round_no)

    def round_closed(self, stamp: Stamp, rules: BlackjackRules, r: Round) -> None:
        """Move the seats after round `r` closed; nothing when it changes nothing."""
        decisions = [(p.hand, p.source) for p in r.plays if isinstance(p, DecisionPlay)]
        plays = seat_plays(rules, r.bets.values(), decisions)
        after = after_round(rules, self.seating, r.round_no, plays, voided=r.phase == "voided")
        if after == self.seating:
            return
        self._record_event(
            Table.SeatingChanged, stamp, table_id=r.table_id, round_id=str(r.id), round_no=r.round_no,
            voided=r.phase == "voided", seating=after.as_dict(),
        )
