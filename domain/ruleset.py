"""Rule sets as versioned data, with a stable content hash.

Every rule set is a frozen dataclass: paytables, table limits and every
spec **Decision** are named fields. A changed rule set is a new version; old
versions stay in the registry forever (see domain/registry.py), so a round
opened under v1 replays under v1. `content_hash()` is the SHA-256 of the
rule set's canonical JSON, recorded on every round when it opens.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

from domain.errorpolicy import ErrorPolicy
from domain.errors import refuse, require
from domain.money import AMOUNT_MAX_MINOR, Odds, format_minor
from domain.refusals import RefusalCode


@dataclass(frozen=True, slots=True)
class BetLimit:
    """Table limits for one bet type, in minor units, inclusive."""

    min_minor: int
    max_minor: int

    def __post_init__(self) -> None:
        require(0 < self.min_minor <= self.max_minor <= AMOUNT_MAX_MINOR, f"bad limit {self}")


@dataclass(frozen=True)
class RuleSet:
    """Fields common to every rule set; each game's module subclasses this."""

    id: str  # e.g. "blackjack/live-8d"
    version: int
    game: str  # "blackjack" | "baccarat" | "teen-patti"
    title: str
    seed: str  # file name of the original rule document in shared/seeds
    decks: int
    limits: tuple[tuple[str, BetLimit], ...]  # (bet_type, limit)
    error_policy: ErrorPolicy

    # Fields added after rule sets were first recorded, with the value that means "as
    # before": left out of `canonical()` while they hold it, so a version recorded before
    # the field existed keeps its content hash (stored rounds carry it; replay checks it).
    ADDED_FIELDS: ClassVar[dict[str, Any]] = {}

    @property
    def key(self) -> tuple[str, int]:
        return (self.id, self.version)

    def limit_for(self, bet_type: str) -> BetLimit:
        for name, limit in self.limits:
            if name == bet_type:
                return limit
        raise refuse(RefusalCode.BET_NOT_OFFERED, bet_type=bet_type, ruleset_id=self.id, version=self.version)

    def check_stake(self, bet_type: str, stake_minor: int, what: str) -> None:
        """Refuse a stake outside the table limits for `bet_type`."""
        limit = self.limit_for(bet_type)
        if stake_minor < limit.min_minor:
            raise refuse(
                RefusalCode.STAKE_BELOW_MINIMUM, what=what, stake=format_minor(stake_minor),
                minimum=format_minor(limit.min_minor), bet_type=bet_type)
        if stake_minor > limit.max_minor:
            raise refuse(
                RefusalCode.STAKE_ABOVE_MAXIMUM, what=what, stake=format_minor(stake_minor),
                maximum=format_minor(limit.max_minor), bet_type=bet_type)

    def canonical(self) -> dict[str, Any]:
        data: dict[str, Any] = _plain(self)
        for name, as_before in self.ADDED_FIELDS.items():
            if data.get(name) == as_before:
                del data[name]
        return data

    def content_hash(self) -> str:
        # A rule set is immutable, so its hash is computed once per instance
        # (every round records it; recomputing it dominated settlement time).
        cached = self.__dict__.get("_content_hash")
        if cached is None:
            data = json.dumps(self.canonical(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
            cached = hashlib.sha256(data.encode("utf-8")).hexdigest()
            object.__setattr__(self, "_content_hash", cached)
        return cached


def _plain(value: Any) -> Any:
    """Dataclasses, odds and fractions as plain JSON types, for hashing and display."""
    if isinstance(value, Odds):
        return str(value)
    if isinstance(value, Fraction):
        return f"{value.numerator}/{value.denominator}"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    require(value is None or isinstance(value, (str, int, bool)), f"not plain: {value!r}")
    return value


def limits(**by_type: tuple[int, int]) -> tuple[tuple[str, BetLimit], ...]:
    """`limits(main=(100, 500_000))` -> the `limits` field."""
    return tuple((name, BetLimit(lo, hi)) for name, (lo, hi) in by_type.items())
