"""What a table may configure on top of its rule set, and the rules a round at it plays by.

The seeds declare limits per table ("the table minimum and maximum declared for
the table", "up to 4 stakes per box, declared per table"). A table configuration
names a published rule set and overrides some of its table fields; everything
else (paytables, every spec Decision) stays the rule set's. The round's
effective rules are the rule set with the overrides applied
(`dataclasses.replace` on the frozen rule set), so the game engine reads the
same fields as ever and needs no change.

`TableSettings` is the overrides only (what a round records); `check_settings`
refuses what the rule set does not allow; `effective_rules` applies them.
Pure: no I/O (the time zone name is checked in ledger/table.py).

Configurable, per game:
- every game: `limits` (min/max per bet type the rule set offers);
- blackjack: `stake_divisible_by_min`, `spots_count` (1..the rule set's),
  `stakes_per_box_max` (1..the rule set's), `boxes_per_player_max`
  (1..the rule set's, and at most the table's seats/boxes);
- baccarat: `difference_max_minor`, the Player/Banker difference limit (the
  engine applies the Player and Banker maximum to the difference, so this sets
  both maxima; only where the rule set has `main_limit_on_difference`).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from domain.errors import Refusal, refuse, require
from domain.money import AMOUNT_MAX_MINOR, format_minor
from domain.refusals import RefusalCode
from domain.ruleset import BetLimit, RuleSet

BLACKJACK_COUNTS = ("spots_count", "stakes_per_box_max", "boxes_per_player_max")
SETTINGS_BY_GAME: dict[str, tuple[str, ...]] = {
    "blackjack": ("limits", "stake_divisible_by_min", *BLACKJACK_COUNTS),
    "baccarat": ("limits", "difference_max_minor"),
    "teen-patti": ("limits",),
}
DIFFERENCE_BETS = ("player", "banker")  # baccarat: the bets whose maximum caps the difference


@dataclass(frozen=True)
class TableSettings:
    """A table's overrides of its rule set; None (or no limit) = the rule set's value."""

    limits: tuple[tuple[str, BetLimit], ...] = ()
    stake_divisible_by_min: bool | None = None
    spots_count: int | None = None
    stakes_per_box_max: int | None = None
    boxes_per_player_max: int | None = None
    difference_max_minor: int | None = None

    def given(self) -> tuple[str, ...]:
        """Names of the settings this table sets."""
        return tuple(f.name for f in dataclasses.fields(self) if getattr(self, f.name) not in (None, ()))

    def as_dict(self) -> dict[str, Any]:
        """Stored form: only what is set; limits as {bet_type: {min_minor, max_minor}}."""
        out: dict[str, Any] = {}
        for name in self.given():
            value = getattr(self, name)
            if name == "limits":
                value = {t: {"min_minor": lim.min_minor, "max_minor": lim.max_minor} for t, lim in value}
            out[name] = value
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TableSettings:
        """The stored form back (what `as_dict` wrote); shapes are checked by the feed schema first."""
        limits = tuple(
            (str(t), BetLimit(int(v["min_minor"]), int(v["max_minor"])))
            for t, v in sorted((data.get("limits") or {}).items())
        )
        return cls(limits=limits, **{k: data.get(k) for k in (
            "stake_divisible_by_min", "spots_count", "stakes_per_box_max", "boxes_per_player_max",
            "difference_max_minor")})


def describe_settings(settings: Mapping[str, Any]) -> str:
    """`main 2.00..1,000.00; spots_count 5` from the stored form (the rule set's value for the rest)."""
    parts = [f"{t} {format_minor(v['min_minor'])}..{format_minor(v['max_minor'])}"
             for t, v in sorted(settings.get("limits", {}).items())]
    parts += [f"{k} {v}" for k, v in sorted(settings.items()) if k != "limits"]
    return "; ".join(parts) or "the rule set's defaults"


def settings_hash(settings: TableSettings) -> str:
    return content_hash(settings.as_dict())


def content_hash(content: Mapping[str, Any]) -> str:
    """SHA-256 of canonical JSON (sorted keys, no spaces), as rule sets are hashed."""
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_settings(rules: RuleSet, settings: TableSettings, table_id: str) -> None:
    """Refuse a setting the rule set does not allow (see the module doc)."""
    allowed = SETTINGS_BY_GAME.get(rules.game, ("limits",))
    for name in settings.given():
        if name not in allowed:
            raise _setting(rules, table_id, name, getattr(settings, name),
                           f"{rules.game} tables configure only {', '.join(allowed)}")
    _check_counts(rules, settings, table_id)
    _check_difference(rules, settings, table_id)
    effective = effective_rules(rules, settings)
    seen: set[str] = set()
    for bet_type, limit in settings.limits:
        require(bet_type not in seen, f"limit for {bet_type} given twice")
        seen.add(bet_type)
        _check_limit(rules, effective, table_id, bet_type, limit)
    if getattr(effective, "stake_divisible_by_min", False):  # a changed minimum must still divide the maximum
        for bet_type, limit in effective.limits:
            _check_limit(rules, effective, table_id, bet_type, limit)


def _check_limit(rules: RuleSet, effective: RuleSet, table_id: str, bet_type: str, limit: BetLimit) -> None:
    offered = [t for t, _ in rules.limits]
    reason = None
    if bet_type not in offered:
        reason = f"the rule set offers no {bet_type!r} bet; offered: {', '.join(offered)}"
    elif not 0 < limit.min_minor <= limit.max_minor <= AMOUNT_MAX_MINOR:
        reason = f"a limit needs 0 < minimum <= maximum <= {format_minor(AMOUNT_MAX_MINOR)}"
    elif getattr(effective, "stake_divisible_by_min", False) and limit.max_minor % limit.min_minor:
        reason = (f"every stake must be a multiple of the minimum {format_minor(limit.min_minor)}; "
                  f"the maximum {format_minor(limit.max_minor)} is not")
    if reason is not None:
        raise refuse(
            RefusalCode.TABLE_LIMIT_FORBIDDEN, table_id=table_id, bet_type=bet_type, min=format_minor(limit.min_minor),
            max=format_minor(limit.max_minor), ruleset_id=rules.id, version=rules.version, reason=reason)


def _check_counts(rules: RuleSet, settings: TableSettings, table_id: str) -> None:
    """Blackjack counts: at least 1, at most the rule set's (the seeds fix the most a table may declare)."""
    for name in BLACKJACK_COUNTS:
        value = getattr(settings, name)
        if value is None:
            continue
        most = getattr(rules, name)
        if name == "boxes_per_player_max":
            most = min(most, settings.spots_count or _count(rules, "spots_count"))
        if not 1 <= value <= most:
            raise _setting(rules, table_id, name, value, f"1..{most}")


def _count(rules: RuleSet, name: str) -> int:
    """A blackjack count field of a rule set typed as the base class (the game was checked first)."""
    value = getattr(rules, name)
    require(isinstance(value, int), f"{rules.id} has no count {name}")
    return int(value)


def _check_difference(rules: RuleSet, settings: TableSettings, table_id: str) -> None:
    value = settings.difference_max_minor
    if value is None:
        return
    if not getattr(rules, "main_limit_on_difference", False):
        raise _setting(rules, table_id, "difference_max_minor", value, "the rule set has no Player/Banker difference limit")
    limits = dict(settings.limits)
    for bet_type in DIFFERENCE_BETS:
        minimum = limits[bet_type].min_minor if bet_type in limits else rules.limit_for(bet_type).min_minor
        if bet_type in limits and limits[bet_type].max_minor != value:
            raise _setting(rules, table_id, "difference_max_minor", value,
                           f"the {bet_type} maximum is the difference limit; give one of them, or the same amount")
        if not minimum <= value <= AMOUNT_MAX_MINOR:
            raise _setting(rules, table_id, "difference_max_minor", value,
                           f"{format_minor(minimum)} (the {bet_type} minimum)..{format_minor(AMOUNT_MAX_MINOR)}")


def _setting(rules: RuleSet, table_id: str, name: str, value: object, reason: str) -> Refusal:
    return refuse(
        RefusalCode.TABLE_SETTING_FORBIDDEN, table_id=table_id, setting=name, value=value, ruleset_id=rules.id,
        version=rules.version, reason=reason)


def effective_rules(rules: RuleSet, settings: TableSettings) -> RuleSet:
    """The rule set with the table's overrides applied (the same type, same id and version:
    the round still records the published rule set; the table's hash records the overrides)."""
    if not settings.given():
        return rules
    overrides: dict[str, Any] = {}
    by_type = dict(rules.limits)
    by_type.update(settings.limits)
    if settings.difference_max_minor is not None:
        for bet_type in DIFFERENCE_BETS:
            by_type[bet_type] = BetLimit(by_type[bet_type].min_minor, settings.difference_max_minor)
    if by_type != dict(rules.limits):
        overrides["limits"] = tuple((t, by_type[t]) for t, _ in rules.limits)
    for name in ("stake_divisible_by_min", *BLACKJACK_COUNTS):
        value = getattr(settings, name)
        if value is not None:
            overrides[name] = value
    if settings.spots_count is not None and settings.boxes_per_player_max is None:
        # fewer seats than the rule set's boxes per player: a player can play at most every seat
        overrides["boxes_per_player_max"] = min(_count(rules, "boxes_per_player_max"), settings.spots_count)
    effective = dataclasses.replace(rules, **overrides)
    effective.__dict__.pop("_content_hash", None)  # replace copies no cache, but never trust a copied one
    return effective


# ---------------------------------------------------------------- the round file's `table` object
TABLE_FILE_FIELDS = ("table_id", "currency", "timezone", "limits", "stake_divisible_by_min", "spots_count",
                     "stakes_per_box_max", "boxes_per_player_max", "difference_max_minor")
_COUNT_FIELDS = ("spots_count", "stakes_per_box_max", "boxes_per_player_max", "difference_max_minor")


def settings_from_file(raw: object) -> tuple[str, TableSettings]:
    """(table id, overrides) from a round file's `table` object (docs/rounds.md): the
    settings of configure_table, by the same names; a wrong shape is `bad_round_file`."""
    if not isinstance(raw, dict):
        raise refuse(RefusalCode.BAD_ROUND_FILE, "table-not-object", table=raw)
    unknown = sorted(set(raw) - set(TABLE_FILE_FIELDS))
    if unknown:
        raise refuse(
            RefusalCode.BAD_ROUND_FILE, "table-fields", unknown=unknown, allowed=', '.join(TABLE_FILE_FIELDS))
    table_id = raw.get("table_id", "table")
    for name in ("table_id", "currency", "timezone"):
        if name in raw and not isinstance(raw[name], str):
            raise refuse(RefusalCode.BAD_ROUND_FILE, "table-string", name=name, value=raw[name])
    for name in _COUNT_FIELDS:
        if raw.get(name) is not None and not _is_int(raw[name]):
            raise refuse(RefusalCode.BAD_ROUND_FILE, "table-int", name=name, value=raw[name])
    divisible = raw.get("stake_divisible_by_min")
    if divisible is not None and not isinstance(divisible, bool):
        raise refuse(RefusalCode.BAD_ROUND_FILE, "table-divisible", value=divisible)
    limits_raw = raw.get("limits") or {}
    if not isinstance(limits_raw, dict):
        raise refuse(RefusalCode.BAD_ROUND_FILE, "table-limits")
    limits = []
    for bet_type, value in sorted(limits_raw.items()):
        if not (isinstance(value, dict) and set(value) == {"min_minor", "max_minor"}
                and _is_int(value["min_minor"]) and _is_int(value["max_minor"])):
            raise refuse(RefusalCode.BAD_ROUND_FILE, "table-limit", bet_type=bet_type, value=value)
        if not 0 < value["min_minor"] <= value["max_minor"] <= AMOUNT_MAX_MINOR:
            raise refuse(
                RefusalCode.TABLE_LIMIT_FORBIDDEN, "out-of-range", table_id=table_id, bet_type=bet_type,
                min=value['min_minor'], max=value['max_minor'], most=AMOUNT_MAX_MINOR)
        limits.append((bet_type, BetLimit(value["min_minor"], value["max_minor"])))
    settings = TableSettings(
        limits=tuple(limits), stake_divisible_by_min=divisible,
        **{name: raw.get(name) for name in _COUNT_FIELDS},
    )
    return table_id, settings


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)

