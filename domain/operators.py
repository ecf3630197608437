"""Operators: the casinos whose players bet at the studio's tables (pure: no I/O).

One studio deals each table to the players of several operators; a player is the pair
(operator, player id): two operators' `p-17` are two people. This module is the one
catalogue of how that pair is named inside the ledger.

- `DEFAULT_OPERATOR_ID` ("default") is the operator of every bet whose feed names none:
  every feed, store and event written before operators existed. It is a fixed id, never
  a store setting, so that what a stored event means never depends on configuration: a
  store whose players all belong to one casino gives the default operator that casino's
  name, zone, currencies and jurisdictions with `configure_operator` (id "default").
- A player key is how the round, its postings and every event after the bet name a
  player: the player id itself for the default operator (exactly what was always
  stored), `OPERATOR~PLAYER` for any other. `~` is in no id the feed accepts
  (ledger/commands.py `Id`), so a key splits back into its pair without ambiguity,
  and the default operator's accounts stay `player:<id>` (domain/money.py).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

DEFAULT_OPERATOR_ID = "default"
KEY_SEPARATOR = "~"  # in no feed id: a player key splits back into (operator, player)
# An operator id: letters, digits and `_.-` (no `~`, `:` or `/`: it is part of player keys,
# accounts and paths).
OPERATOR_ID_PATTERN = r"^[A-Za-z0-9_.\-]{1,64}$"
_OPERATOR_ID = re.compile(OPERATOR_ID_PATTERN)


def is_operator_id(text: str) -> bool:
    return _OPERATOR_ID.match(text) is not None


def player_key(operator_id: str | None, player_id: str) -> str:
    """The player as the round and its postings name it (see the module doc)."""
    if operator_id is None or operator_id == DEFAULT_OPERATOR_ID:
        return player_id
    return f"{operator_id}{KEY_SEPARATOR}{player_id}"


def split_key(key: str) -> tuple[str, str]:
    """A player key -> (operator id, player id as the operator's feed names it)."""
    operator, sep, player = key.partition(KEY_SEPARATOR)
    return (operator, player) if sep else (DEFAULT_OPERATOR_ID, key)


def operator_of(key: str) -> str:
    """The operator of a player key."""
    return split_key(key)[0]


def player_of(key: str) -> str:
    """The player id of a player key, as its operator names it."""
    return split_key(key)[1]


@dataclass(frozen=True)
class OperatorScope:
    """Which operators a read may see: None is every operator (the studio's own back office,
    auditors). The seam a key scoped to operators narrows (issue 30, item 4): the read service
    and the queries take one, and `allows` decides per player key."""

    operators: frozenset[str] | None = None

    @staticmethod
    def of(operator_id: str | None) -> OperatorScope:
        """The scope of a read's `--operator ID` / `?operator=` (None: every operator)."""
        return OperatorScope(None if operator_id is None else frozenset({operator_id}))

    @property
    def everyone(self) -> bool:
        return self.operators is None

    def allows(self, operator_id: str) -> bool:
        return self.operators is None or operator_id in self.operators

    def allows_key(self, player_key_: str) -> bool:
        return self.operators is None or operator_of(player_key_) in self.operators

    def only(self) -> str | None:
        """The one operator this scope names, if it names exactly one."""
        if self.operators is not None and len(self.operators) == 1:
            return next(iter(self.operators))
        return None


EVERY_OPERATOR = OperatorScope()


@dataclass(frozen=True)
class OperatorConfig:
    """One configuration version of an operator, as recorded (ledger/operator.py)."""

    operator_id: str
    config_version: int
    name: str
    currencies: tuple[str, ...]
    timezone: str  # IANA name: the operator's gaming days
    jurisdictions: tuple[str, ...]
    config_hash: str = ""

    def content(self) -> dict[str, Any]:
        """What the hash covers: everything but the version number and the hash."""
        return {"operator_id": self.operator_id, "name": self.name, "currencies": list(self.currencies),
                "timezone": self.timezone, "jurisdictions": list(self.jurisdictions)}

    def as_dict(self) -> dict[str, Any]:
        return {**self.content(), "config_version": self.config_version, "config_hash": self.config_hash}
