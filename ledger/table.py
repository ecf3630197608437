"""The Table aggregate: what spans every round at one table (its configuration).

One aggregate per table id (`table_id_for(table_id)`), made by its first
`configure_table`. Each accepted change is a new configuration version
(`Table.Configured`, version 1, 2, ...) carrying the whole configuration and
its content hash; a configuration identical to the current one records
nothing. A table never configured has no aggregate: its rounds play by the
rule set's defaults and record exactly what they always did.

API (kept small; the `seats` work adds seat/box state here later):
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
from domain.errors import InvariantBroken, Refusal, require
from domain.refusals import RefusalCode
from domain.ruleset import RuleSet
from domain.tableconfig import TableSettings, check_settings, content_hash, effective_rules
from ledger.aggregate import LedgerAggregate, LedgerEvent, Stamp
from ledger.round import NAMESPACE

CONFIG_VERSIONS_MAX = 100_000  # a limit on everything: no table is reconfigured this often


@lru_cache(maxsize=65536)
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


def check_timezone(table_id: str, timezone: str) -> None:
    try:
        ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise Refusal(
            RefusalCode.BAD_TIMEZONE,
            f"table {table_id}: {timezone!r} is not an IANA time zone name like 'Europe/Berlin' or 'UTC'",
        ) from None


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

    def __init__(self, table_uuid: UUID, created_on: datetime) -> None:
        super().__init__(table_uuid, created_on)
        self.table_id = ""
        self.history: list[TableConfig] = []  # every configuration version, in order

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
            raise Refusal(RefusalCode.TABLE_MISMATCH,
                          f"table {table_id}: game {game} named with {ruleset_id} v{ruleset_version}, a {rules.game} rule set")
        check_timezone(table_id, timezone)
        check_settings(rules, settings, table_id)
        if len(self.history) >= CONFIG_VERSIONS_MAX:
            raise Refusal(RefusalCode.TABLE_SETTING_FORBIDDEN,
                          f"table {table_id} has {len(self.history)} configuration versions, the limit")
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
            raise Refusal(
                RefusalCode.TABLE_MISMATCH,
                f"round {self.table_id}#{round_no} opens under {ruleset_id} v{ruleset_version} in {currency}; table "
                f"{self.table_id} is configured (v{config.config_version}) for {config.ruleset_id} "
                f"v{config.ruleset_version} in {config.currency}",
            )
        return config
