"""The studio feed: one strict pydantic discriminated union of commands.

Parsed from raw JSON bytes with `parse_command(raw)`; `extra="forbid"`,
strict types (a string is never coerced into a number), frozen. This module
is the wire format only; inside the service, commands become plain calls.
"""
from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, TypeGuard, final

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter
from pydantic_core import PydanticCustomError

from domain.errorpolicy import CAUSES
from domain.model import DECISION_SOURCES
from domain.operators import OPERATOR_ID_PATTERN
from domain.refusals import RefusalCode
from domain.text import FREE_TEXT_ALLOWED, char_name, hostile_at


def clean_free_text(text: str) -> str:
    """Free text keeps tabs and line feeds, nothing else a store or a screen cannot take as
    it is (domain/text.py): refused as `text_invalid`, never stored and escaped later."""
    at = hostile_at(text, FREE_TEXT_ALLOWED)
    if at is not None:
        raise PydanticCustomError(str(RefusalCode.TEXT_INVALID), "{char} at character {position} is not allowed",
                                  {"char": char_name(text[at]), "position": at + 1})
    return text


# An id's pattern already refuses every hostile character; the ledger names such a refusal
# `text_invalid` (ledger/app.py), so an id and a note holding a NUL are refused alike.
Id = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_.:\-/#@]+$")]
Note = Annotated[str, Field(max_length=2000), AfterValidator(clean_free_text)]
Cause = Literal[CAUSES]  # type: ignore[valid-type]
Source = Literal[DECISION_SOURCES]  # type: ignore[valid-type]
MinorAmount = Annotated[int, Field(gt=0, le=10**15)]


class _Command(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    command_id: Id  # idempotency key: same id + same payload = same result, nothing recorded twice
    table_id: Id
    round_no: Annotated[int, Field(ge=1, le=10**12)]
    studio_time: datetime  # the studio's clock, ISO 8601 with offset; the store keeps its own time too


class _TableCommand(BaseModel):
    """A command about a table as a whole (no round)."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    command_id: Id
    table_id: Id
    studio_time: datetime


class Limit(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    min_minor: MinorAmount
    max_minor: MinorAmount


@final  # the union is closed: the ledger dispatches on `type(cmd) is ...`
class ConfigureTable(_TableCommand):
    """A table's configuration (ledger/table.py): each change is a new configuration version.
    Every optional setting left out is the rule set's value (domain/tableconfig.py says
    which settings each game may configure and within what bounds)."""

    type: Literal["configure_table"]
    game: Literal["blackjack", "baccarat", "teen-patti"]
    ruleset_id: Id
    ruleset_version: Annotated[int, Field(ge=1, le=10**6)]
    currency: Annotated[str, Field(pattern=r"^[A-Z]{3}$")]
    timezone: Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_+\-/]+$")] = "UTC"
    limits: Annotated[dict[Id, Limit], Field(max_length=64)] | None = None  # bet type -> min/max
    stake_divisible_by_min: bool | None = None
    spots_count: Annotated[int, Field(ge=1, le=16)] | None = None
    stakes_per_box_max: Annotated[int, Field(ge=1, le=16)] | None = None
    boxes_per_player_max: Annotated[int, Field(ge=1, le=16)] | None = None
    difference_max_minor: MinorAmount | None = None  # baccarat: the Player/Banker difference limit


OperatorId = Annotated[str, Field(min_length=1, max_length=64, pattern=OPERATOR_ID_PATTERN)]
Currency = Annotated[str, Field(pattern=r"^[A-Z]{3}$")]
Zone = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_+\-/]+$")]


@final
class ConfigureOperator(BaseModel):
    """An operator's configuration (ledger/operator.py): each change is a new configuration
    version. The default operator (domain/operators.py) plays without one; configuring it
    names it, its currencies, zone and jurisdictions."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    type: Literal["configure_operator"]
    command_id: Id
    operator_id: OperatorId
    studio_time: datetime
    name: Annotated[str, Field(min_length=1, max_length=200), AfterValidator(clean_free_text)]
    currencies: Annotated[list[Currency], Field(min_length=1, max_length=32)]
    timezone: Zone = "UTC"  # the operator's gaming days
    jurisdictions: Annotated[list[Annotated[str, Field(pattern=r"^[A-Z]{2}(-[A-Z0-9]{1,3})?$")]],
                             Field(max_length=32)] = []  # ISO 3166: ES, GB, CA-ON


@final
class OpenRound(_Command):
    type: Literal["open_round"]
    ruleset_id: Id
    ruleset_version: Annotated[int, Field(ge=1)]
    currency: Annotated[str, Field(pattern=r"^[A-Z]{3}$")]
    shoe_id: Id
    dealer_id: Id


@final
class PlaceBet(_Command):
    type: Literal["place_bet"]
    bet_id: Id
    player_id: Id
    spot: Id  # seat:3 | box:2 | behind:3 | table
    bet_type: Id  # a paytable line of the rule set: main, pair, player, banker, tie, ...
    stake_minor: MinorAmount
    mode: Literal["traditional", "no_commission"] | None = None  # baccarat Banker mode
    seat_no: Annotated[int, Field(ge=1, le=16)] | None = None  # spielbank: the player's own seat
    operator_id: OperatorId | None = None  # absent: the default operator (domain/operators.py)


@final
class CloseBetting(_Command):
    type: Literal["close_betting"]


@final
class DealCard(_Command):
    type: Literal["deal_card"]
    card: Annotated[str, Field(min_length=2, max_length=3)]  # AS, TD, 10D, kh
    target: Id  # dealer | seat:3 | seat:3.2 (split hand) | box:2 | player | banker | A | B | burn
    seq_no: Annotated[int, Field(ge=1, le=1000)]  # 1-based position of this card in the round


@final
class Decide(_Command):
    type: Literal["decide"]
    hand: Id
    action: Id  # hit | stand | double | split | insurance | no_insurance | even_money | surrender | auto
    source: Source
    amount_minor: MinorAmount | None = None  # only where the rule set lets the player choose (casino-tour insurance)
    # who decides (blackjack): checked against the seat's player / the box holder (`not_box_holder`);
    # absent = the studio vouches that the right player decided (feeds before this field), nothing checked
    player_id: Id | None = None
    operator_id: OperatorId | None = None  # the operator of `player_id` (absent: the default operator)


@final
class Follow(_Command):
    type: Literal["follow"]
    bet_id: Id
    kind: Literal["split", "double", "insurance"]  # insurance: spielbank v2, another player's own stake on a box
    accept: bool


@final
class Pause(_Command):
    type: Literal["pause"]
    cause: Cause
    by: Id
    note: Note = ""
    # required for player-side causes (player_connection_lost, player_no_action): the player
    # the interruption concerns (recorded as Round.Interrupted); a "complete" policy plays only
    # that player's hands. Absent for the other causes.
    player_id: Id | None = None
    operator_id: OperatorId | None = None  # the operator of `player_id` (absent: the default operator)


@final
class Resume(_Command):
    type: Literal["resume"]
    by: Id
    note: Note = ""


@final
class Void(_Command):
    type: Literal["void"]
    cause: Cause
    by: Id
    note: Note = ""


@final
class ReverseSettlement(_Command):
    type: Literal["reverse_settlement"]
    by: Id
    reason: Note
    then: Literal["void", "resettle"] = "void"
    cause: Cause = "human_error"


Command = Annotated[
    OpenRound | PlaceBet | CloseBetting | DealCard | Decide | Follow | Pause | Resume | Void | ReverseSettlement
    | ConfigureTable | ConfigureOperator,
    Field(discriminator="type"),
]
# Only keys go to pydantic's process-wide JSON string cache: ids are new on every line, so
# caching values would fill it with command ids that never come again, and parse no faster.
COMMAND_ADAPTER: TypeAdapter[Command] = TypeAdapter(Command, config=ConfigDict(cache_strings="keys"))


COMMAND_CLASSES = (OpenRound, PlaceBet, CloseBetting, DealCard, Decide, Follow, Pause, Resume, Void, ReverseSettlement,
                   ConfigureTable, ConfigureOperator)
# Commands about no round (configuration): no round text, no round number in a rejection row.
CONFIG_COMMANDS = (ConfigureTable, ConfigureOperator)
RoundCommand = OpenRound | PlaceBet | CloseBetting | DealCard | Decide | Follow | Pause | Resume | Void | ReverseSettlement
# The same as a set, for `type(x) in COMMAND_TYPES` where most values are commands: a failed
# `isinstance(command, Refusal)` looks `__class__` up on the pydantic model first (~0.1 µs).
COMMAND_TYPES = frozenset(COMMAND_CLASSES)


def is_command(value: object) -> TypeGuard[Command]:
    """An already parsed command (callers may hand the ledger models instead of JSON)."""
    return isinstance(value, COMMAND_CLASSES)


def parse_command(raw: bytes | str) -> Command:
    """Parse one command from raw JSON; raises pydantic.ValidationError on bad input."""
    return COMMAND_ADAPTER.validate_json(raw)


def command_json_schema() -> dict[str, Any]:
    return COMMAND_ADAPTER.json_schema()


def hostile_text(value: object, path: tuple[str, ...] = ()) -> tuple[str, str, int] | None:
    """The first string of a parsed command (a key or a value, at any depth) that holds a
    character refused where text enters (domain/text.py): (its field, the string, the index
    of that character). Free text (`note`, `reason`) may hold tabs and line feeds."""
    if isinstance(value, str):
        allowed = FREE_TEXT_ALLOWED if path and path[-1] in FREE_TEXT_FIELDS else ""
        at = hostile_at(value, allowed)
        return None if at is None else (".".join(path) or "command", value, at)
    children: list[tuple[object, object]] = (list(value.items()) if isinstance(value, dict)
                                             else list(enumerate(value)) if isinstance(value, list) else [])
    for key, child in children:
        name = str(key)
        if isinstance(key, str) and (at := hostile_at(key)) is not None:
            return ".".join((*path, "(a key)")), key, at
        found = hostile_text(child, (*path, name))
        if found is not None:
            return found
    return None


FREE_TEXT_FIELDS = frozenset({"note", "reason"})  # the fields typed `Note` above
