"""The Operator aggregate: one casino whose players bet at the studio's tables (its configuration).

One aggregate per operator id (`operator_uuid_for(operator_id)`), made by its first
`configure_operator`. Like a table's (ledger/table.py), each accepted change is a new
configuration version (`Operator.Configured`, version 1, 2, ...) carrying the whole
configuration and its content hash; the same content again records nothing.

A bet naming an operator is accepted only when that operator is configured, and only in
one of its currencies (`check_bet`); the default operator (domain/operators.py) needs no
configuration: every feed written before operators existed plays for it, as it did.
"""
from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache
from uuid import UUID, uuid5

from domain.errors import refuse
from domain.operators import OperatorConfig
from domain.refusals import RefusalCode
from domain.tableconfig import content_hash
from ledger.ids import ID_MEMO_MAX, NAMESPACE
from ledger.library.aggregate import LedgerAggregate, LedgerEvent, Stamp
from ledger.table import CONFIG_VERSIONS_MAX, valid_timezone


@lru_cache(maxsize=ID_MEMO_MAX)
def operator_uuid_for(operator_id: str) -> UUID:
    return uuid5(NAMESPACE, f"operator/{operator_id}")


class Operator(LedgerAggregate):
    EVENT_NAME_PREFIX = "Operator."  # how a command's Result names this aggregate's events

    class Event(LedgerEvent["Operator"]):
        def new_aggregate(self) -> Operator:
            return Operator(self.originator_id, self.timestamp)

    class Configured(Event):
        operator_id: str
        config_version: int
        config_hash: str
        name: str
        currencies: list[str]
        timezone: str
        jurisdictions: list[str]

        def apply(self, o: Operator) -> None:
            o.operator_id = self.operator_id
            o.history.append(OperatorConfig(
                self.operator_id, self.config_version, self.name, tuple(self.currencies), self.timezone,
                tuple(self.jurisdictions), self.config_hash))

    def __init__(self, operator_uuid: UUID, created_on: datetime) -> None:
        super().__init__(operator_uuid, created_on)
        self.operator_id = ""
        self.history: list[OperatorConfig] = []

    @classmethod
    def new(cls, operator_id: str) -> Operator:
        return cls(operator_uuid_for(operator_id), datetime.now(UTC))

    @property
    def current(self) -> OperatorConfig | None:
        return self.history[-1] if self.history else None

    def configure(self, stamp: Stamp, *, operator_id: str, name: str, currencies: list[str], timezone: str,
                  jurisdictions: list[str]) -> OperatorConfig | None:
        """Check and record a new configuration version; the same content again records nothing (None)."""
        if not valid_timezone(timezone):
            raise refuse(RefusalCode.BAD_TIMEZONE, "operator", operator_id=operator_id, timezone=timezone)
        if len(self.history) >= CONFIG_VERSIONS_MAX:
            raise refuse(RefusalCode.TABLE_SETTING_FORBIDDEN, "versions", table_id=operator_id,
                         versions=len(self.history))
        draft = OperatorConfig(operator_id, len(self.history) + 1, name, tuple(sorted(set(currencies))), timezone,
                               tuple(sorted(set(jurisdictions))))
        digest = content_hash(draft.content())
        current = self.current
        if current is not None and current.config_hash == digest:
            return None
        self._record_event(
            Operator.Configured, stamp, operator_id=operator_id, config_version=draft.config_version,
            config_hash=digest, name=name, currencies=list(draft.currencies), timezone=timezone,
            jurisdictions=list(draft.jurisdictions))
        return self.current

    def check_bet(self, bet_id: str, currency: str) -> None:
        """A bet of this operator's player in `currency`: refused unless configured for it."""
        config = self.current
        if config is None:
            raise refuse(RefusalCode.UNKNOWN_OPERATOR, bet_id=bet_id, operator_id=self.operator_id)
        if currency not in config.currencies:
            raise refuse(RefusalCode.OPERATOR_MISMATCH, bet_id=bet_id, operator_id=config.operator_id,
                         currencies=", ".join(config.currencies), currency=currency)
