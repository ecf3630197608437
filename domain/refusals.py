"""The refusal-code catalogue: every stable code a command can be refused with.

`RefusalCode` is a `StrEnum`, so a member equals its string: stored rejection
rows and results keep the codes they always had. Each member carries its
meaning and its message templates (the shape of the message, `{field}` for
what varies): `template`, and named variants where one code is refused in
more than one situation. Every message is made here, by `message()`, so the
text a rejection row stores is the template's. `SECTIONS` says where each code
is raised and what it means there; docs/refusals.md is generated from both:

    python -m domain.refusals --markdown > docs/refusals.md

A code (or a variant) is added here first, then raised as
`refuse(RefusalCode.X, "variant", field=value, ...)` (domain/errors.py);
tests/unit/domain/test_refusals_catalogue.py checks the source and the doc agree,
tests/unit/domain/test_refusal_messages.py that every message comes from a template.
"""
from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType


class RefusalCode(StrEnum):
    """A stable snake_case refusal code, with its meaning and message templates."""

    meaning: str
    template: str
    templates: Mapping[str, str]  # "" is `template`; other keys name a variant

    def __new__(cls, code: str, meaning: str, template: str, variants: Mapping[str, str] | None = None) -> RefusalCode:
        member = str.__new__(cls, code)
        member._value_ = code
        member.meaning = meaning
        member.template = template
        member.templates = MappingProxyType({"": template, **(variants or {})})
        return member

    def message(self, variant: str = "", /, **fields: object) -> str:
        """The message of this code's template (or its `variant`) with `fields` filled in."""
        return self.templates[variant].format(**fields)

    # shared by the games (domain/money.py, cards.py, ruleset.py, registry.py, errorpolicy.py)
    BAD_AMOUNT = (
        "bad_amount",
        "an amount is not a positive integer number of minor units at most AMOUNT_MAX_MINOR",
        "{what} must be positive, got {amount_minor}",
        {
            "not-int": "{what} must be an integer number of minor units, got {amount_minor!r}",
            "too-large": "{what} {amount_minor} exceeds the maximum {maximum}",
        },
    )
    BAD_CURRENCY = (
        "bad_currency",
        "a currency that is not a three-letter upper-case ISO 4217 code",
        "currency must be a three-letter ISO 4217 code like 'EUR', got {currency!r}",
    )
    BAD_CARD = (
        "bad_card",
        "a card that is not rank A,2-9,T (or 10),J,Q,K followed by suit S,H,D,C",
        "{text!r} is not a card: use rank A,2-9,T (or 10),J,Q,K then suit S,H,D,C, e.g. 'AS' or '10D'",
        {
            "not-text": "a card must be a string like 'AS' or '10D', got {text!r}",
        },
    )
    IMPOSSIBLE_CARD = (
        "impossible_card",
        "more copies of a card than the shoe holds",
        "{card} ({card_name}) cannot be dealt: a {decks}-deck shoe holds {decks} and all {seen} have already been "
        "dealt",
    )
    UNKNOWN_RULE_SET = (
        "unknown_rule_set",
        "a rule set id and version that the registry does not know",
        "no rule set {ruleset_id!r} version {version}; known: {known}",
        {
            "id": "no rule set {ruleset_id!r}",
        },
    )
    BAD_CAUSE = (
        "bad_cause",
        "an interruption cause that is not one of domain/errorpolicy.py's CAUSES",
        "unknown interruption cause {cause!r}; known causes: {causes}",
    )
    BET_NOT_OFFERED = (
        "bet_not_offered",
        "the rule set does not offer this bet type (or not now)",
        "bet type {bet_type!r} is not offered under {ruleset_id} v{version}",
        {
            "after-round": "{bet_name} is not offered after round {last_round} of the shoe; this is round "
                "{round_in_shoe}",
            "behind": "bet {bet_id}: bet behind is not offered under {ruleset_id}",
            "bet-type": "bet {bet_id}: bet type {bet_type!r} is not offered under {ruleset_id} v{version}",
            "offered": "bet {bet_id}: bet type {bet_type!r} is not offered under {ruleset_id} v{version}; offered: "
                "{offered}",
        },
    )
    STAKE_BELOW_MINIMUM = (
        "stake_below_minimum",
        "a stake below the table minimum of its bet type",
        "{what}: stake {stake} is below the table minimum {minimum} for {bet_type}",
    )
    STAKE_ABOVE_MAXIMUM = (
        "stake_above_maximum",
        "a stake, or the stakes it adds up to, above the table maximum",
        "{what}: stake {stake} is above the table maximum {maximum} for {bet_type}",
        {
            "total": "{what}: stakes on {bet_name} would total {total}, above the table maximum {maximum}",
            "box-total": "bet {bet_id}: stakes on {spot} would total {total}, above the box maximum {maximum}",
        },
    )
    # betting, shared by the games
    BETTING_CLOSED = (
        "betting_closed",
        "a bet, or close_betting, after betting closed",
        "bet {bet_id}: betting is closed for this round",
        {
            "close": "betting is already closed for this round",
        },
    )
    TOO_MANY_BETS = (
        "too_many_bets",
        "a bet past the round's (or the seat's) bet limit",
        "bet {bet_id}: a round takes at most {bets_max} bets",
        {
            "behind": "bet {bet_id}: {seat} already has {count} bets behind, the maximum under {ruleset_id}",
        },
    )
    DUPLICATE_BET_ID = (
        "duplicate_bet_id",
        "a bet id already placed in this round",
        "bet {bet_id} is already placed in round {round}",
        {
            "blackjack": "bet {bet_id} was already placed in this round",
            "table-game": "bet id {bet_id} was already placed in this round",
        },
    )
    DUPLICATE_BET = (
        "duplicate_bet",
        "the player already has a bet of this kind on this spot (a new bet id, the same bet twice)",
        "bet {bet_id}: player {player_id} already has a main bet on {spot}",
        {
            "behind": "bet {bet_id}: player {player_id} already bets behind {seat}",
            "pair": "bet {bet_id}: player {player_id} already has a Pair bet on {spot}",
        },
    )
    BAD_SPOT = (
        "bad_spot",
        "a spot other than the game's one spot `table`",
        "bet {bet_id}: {game} bets lie on spot {table_spot!r}, not {spot!r}",
    )
    CARD_NOT_EXPECTED = (
        "card_not_expected",
        "a card when the rules expect none",
        "card {card} to {target}: no card is expected now ({why})",
        {
            "table-game": "{card} ({card_name}) was not expected: {state}",
            "round-file": "card {card} arrived but no card is expected now",
        },
    )
    WRONG_TARGET = (
        "wrong_target",
        "a card to another hand or target than the one the rules deal to next",
        "card {card} dealt to {target}, but the next card must go to {expected}",
        {
            "baccarat": "{card} ({card_name}) was dealt to {target!r}; the rules say the next card goes to "
                "{expected!r}",
            "teen-patti": "{card} ({card_name}) was dealt to {target!r}; the deal order A1, B1, A2, B2, A3, B3 says "
                "the next card goes to {expected!r}",
        },
    )
    ROUND_NOT_COMPLETE = (
        "round_not_complete",
        "settle() before the round is complete",
        "cannot settle: the round is still in phase {phase} ({awaiting})",
        {
            "coup": "the coup is not complete; it cannot be settled yet",
            "outcome": "no outcome yet: the round is still in phase {phase} ({awaiting})",
            "hands": "both hands need three cards before the round can be settled",
            "hands-outcome": "both hands need three cards before the round has an outcome",
        },
    )
    # blackjack (domain/blackjack_bets.py, blackjack_round.py)
    UNKNOWN_SPOT = (
        "unknown_spot",
        "a spot that is not a seat, box or behind position of this table",
        "bet {bet_id}: {spot} does not exist; {ruleset_id} has {spot_kind}s 1..{spots_count}",
        {
            "spot-kind": "bet {bet_id}: {ruleset_id} has {spot_kind}s, not {kind}s ({spot})",
            "not-a-spot": "bet {bet_id}: spot {spot!r} is not a spot of {ruleset_id}; use {spot_kind}:1..{spots_count}",
            "not-a-spot-or-behind": "bet {bet_id}: spot {spot!r} is not a spot of {ruleset_id}; use "
                "{spot_kind}:1..{spots_count} or behind:1..{spots_count}",
        },
    )
    STAKE_NOT_DIVISIBLE = (
        "stake_not_divisible",
        "a stake that is not a multiple of the table minimum where the rules ask for one",
        "{what}: stake {stake} is not divisible by the table minimum {minimum}",
    )
    SEAT_TAKEN = (
        "seat_taken",
        "a main bet on a seat or box that holds another player's main bet and takes one stake",
        "bet {bet_id}: {spot} is taken by player {player_id}",
        {
            "seat-no": "bet {bet_id}: seat {seat_no} is player {player_id}'s this round; the box-holder rule reads "
                "one player per seat",
        },
    )
    BOX_FULL = (
        "box_full",
        "a main bet on a box that already holds the most stakes a box takes",
        "bet {bet_id}: {spot} already holds {stakes} stakes, the maximum per box under {ruleset_id}",
    )
    PLAYER_ALREADY_SEATED = (
        "player_already_seated",
        "a second seat for a player who may take one",
        "bet {bet_id}: player {player_id} already sits at {seat}; a player takes at most one seat",
        {
            "seat-no": "bet {bet_id}: player {player_id} sits at seat {own_seat_no} this round, not seat {seat_no}",
            "held": "bet {bet_id}: player {player_id} already sits at {seat} (since round {since_round_no}); a player "
                "takes at most one seat",
        },
    )
    SEAT_HELD = (
        "seat_held",
        "a main bet on a seat another player holds from an earlier round (seats that span rounds)",
        "bet {bet_id}: {spot} is held by player {holder} (seated since round {round_no}); it is free once they lose it",
    )
    SEAT_LOST = (
        "seat_lost",
        "a main bet on the seat its player lost by taking no action, before the wait after the loss ended",
        "bet {bet_id}: player {player_id} lost {spot} after taking no action in round {lost_round_no}; they may take "
        "it again from round {free_round_no} (another free seat or a bet behind now)",
    )
    TOO_MANY_BOXES = (
        "too_many_boxes",
        "a player's box past the most boxes one player plays",
        "bet {bet_id}: player {player_id} already plays {count} boxes ({boxes}), the maximum under {ruleset_id}",
    )
    SEATED_PLAYER_BEHIND = (
        "seated_player_behind",
        "a seated player bets behind, or a player betting behind takes a seat",
        "bet {bet_id}: player {player_id} is seated and cannot also bet behind",
        {
            "takes-seat": "bet {bet_id}: player {player_id} bets behind this round and cannot also take a seat",
            "holds": "bet {bet_id}: player {player_id} holds {seat} (since round {since_round_no}) and cannot also "
                "bet behind",
        },
    )
    BEHIND_WITHOUT_SEAT = (
        "behind_without_seat",
        "a bet behind a seat with no main bet yet",
        "bet {bet_id}: nobody has a main bet on {seat} yet; a bet behind follows a seated player's main bet",
    )
    SIDE_BET_WITHOUT_MAIN = (
        "side_bet_without_main",
        "a side bet before the same player's main bet on that spot",
        "bet {bet_id}: the Pair side bet on {spot} needs player {player_id}'s main bet there first",
    )
    BETTING_OPEN = (
        "betting_open",
        "a card or a decision before betting closed",
        "card {card} to {target}: betting is still open; close betting first",
        {
            "decision": "{hand} {action}: betting is still open; no decisions yet",
        },
    )
    UNKNOWN_HAND = (
        "unknown_hand",
        "a decision on a hand that does not exist in this round",
        "{action} on {hand}: no such hand in this round (hands: {hands})",
        {
            "decider": "no hand {hand} in this round",
        },
    )
    DECISION_NOT_LEGAL = (
        "decision_not_legal",
        "a decision the rules do not allow for that hand now",
        "{action} on {hand} is not legal now (legal now: {legal})",
    )
    BAD_DECISION_SOURCE = (
        "bad_decision_source",
        "a decision source other than player, timeout, system, dealer",
        "{hand} {action}: source must be one of {sources}, got {source!r}",
    )
    AMOUNT_NOT_ALLOWED = (
        "amount_not_allowed",
        "an amount given with a decision that takes none",
        "{action} on {hand}: an amount is only chosen for casino-tour insurance",
    )
    BAD_INSURANCE_AMOUNT = (
        "bad_insurance_amount",
        "an insurance amount the rule set does not allow",
        "insurance on {hand}: costs exactly half the main bet ({half}), got {amount}",
        {
            "between": "insurance on {hand}: amount {amount} must be between half the table minimum ({low}) and half "
                "the stake ({high})",
        },
    )
    NO_FOLLOW_OFFER = (
        "no_follow_offer",
        "follow() for a bet with no open offer of that kind",
        "bet {bet_id} has no open {kind} follow offer (open offers: {offers})",
    )
    NOT_BOX_HOLDER = (
        "not_box_holder",
        "a decision on a seat or box by a player other than the one who decides for it (seat player, box holder)",
        "{hand}: only {who} {holder} decides; {player_id} may only follow a split or double",
    )
    # baccarat and teen patti (domain/baccarat.py, teenpatti.py, tablebets.py)
    BAD_ROUND_IN_SHOE = (
        "bad_round_in_shoe",
        "a round of the shoe (or round number) that is not an integer in the game's range",
        "round of the shoe must be an integer 1..{most}, got {round_in_shoe!r}",
        {
            "round-number": "round number must be an integer 1..{most}, got {round_in_shoe!r}",
        },
    )
    BAD_MODE = (
        "bad_mode",
        "a bet mode other than traditional, no_commission or none",
        "bet {bet_id}: mode must be one of {modes}, got {mode!r}",
    )
    MODE_REQUIRED = (
        "mode_required",
        "a Banker bet without a mode where the rule set has no default mode",
        "bet {bet_id}: a Banker bet needs a mode: {modes}",
    )
    DIFFERENCE_ABOVE_MAXIMUM = (
        "difference_above_maximum",
        "the difference between a player's Player and Banker stakes above the table maximum",
        "{what}: {side} stakes would exceed {other} stakes by {difference}; the table maximum {maximum} applies to "
        "the difference between Player and Banker",
    )
    NO_DECISIONS = (
        "no_decisions",
        "a decision in a game without player decisions",
        "{game} has no player decisions; {action!r} on {hand!r} is refused",
        {
            "decider": "{game} has no player decisions; nobody decides {hand!r}",
        },
    )
    NO_FOLLOW_OFFERS = (
        "no_follow_offers",
        "follow() in a game without follow offers",
        "{game} has no follow offers; bet {bet_id} cannot follow {kind!r}",
    )
    # ledger (ledger/)
    BAD_COMMAND = (
        "bad_command",
        "a line that is not valid JSON or does not match the command schema",
        "{problems}",
        {
            "store": "the store cannot hold this command: {error}",
            "json": "not valid JSON: {error}",
        },
    )
    TEXT_INVALID = (
        "text_invalid",
        "a string holding a control character (free text: other than tab and line feed), a bidirectional "
        "formatting character, a line or paragraph separator, or a lone surrogate (domain/text.py)",
        "{field}: {char} at character {position} is not allowed (control and bidirectional characters are refused)",
    )
    COMMAND_ID_CONFLICT = (
        "command_id_conflict",
        "a command id already used in the store for a different payload",
        "command id {command_id} was already used for a different command ({status}); a retry must repeat the same "
        "payload",
    )
    CONCURRENCY_CONFLICT = (
        "concurrency_conflict",
        "another writer changed the round between load and save (status `conflict`); retry the command",
        "another writer changed this round first; nothing was recorded, retry the command",
    )
    ROUND_NOT_OPEN = (
        "round_not_open",
        "a command for a round that was never opened",
        "round {table_id}#{round_no} has not been opened; send open_round first",
        {
            "aggregate": "round {round} has not been opened",
        },
    )
    ROUND_EXISTS = (
        "round_exists",
        "open_round for a round that is already open",
        "round {round} is already open",
    )
    ROUND_VOIDED = (
        "round_voided",
        "a command for a voided round",
        "round {round} is voided",
        {
            "tombstone": "round {round} was voided before it opened",
        },
    )
    ROUND_SETTLED = (
        "round_settled",
        "a command that would change a settled round",
        "round {round} is settled; correct it with reverse_settlement",
    )
    ROUND_PAUSED = (
        "round_paused",
        "a command other than resume or void while the round is paused",
        "round {round} is paused ({cause}); resume or void it first",
    )
    ROUND_NOT_PAUSED = (
        "round_not_paused",
        "resume for a round that is not paused",
        "round {table_id}#{round_no} is not paused; nothing to resume",
    )
    PLAYER_REQUIRED = (
        "player_required",
        "a pause for a player-side cause (player_connection_lost, player_no_action) that names no player",
        "a {cause} pause of round {round} must name the player (player_id) it concerns: only that player's hands are "
        "completed",
    )
    PLAYER_NOT_IN_ROUND = (
        "player_not_in_round",
        "a player-side pause naming a player who has no bet in the round",
        "player {player_id} has no bet in round {round}; a {cause} pause concerns one of the round's players",
    )
    ROUND_NOT_SETTLED = (
        "round_not_settled",
        "reverse_settlement for a round with no current settlement",
        "round {table_id}#{round_no} has no settlement to reverse (it is {phase})",
    )
    CARD_OUT_OF_SEQUENCE = (
        "card_out_of_sequence",
        "a card whose seq_no is not the next position in the round",
        "card {card} has seq_no {seq_no}; the next card of round {round} is number {expected}",
    )
    SHOE_RETIRED = (
        "shoe_retired",
        "open_round on a shoe retired after a void",
        "shoe {shoe_id} at table {table_id} was retired after round {round} was voided ({cause}); open the round on a "
        "new shoe",
    )
    SHOE_GAME_MISMATCH = (
        "shoe_game_mismatch",
        "open_round on a shoe that deals another game",
        "shoe {shoe_id} deals {shoe_game}; round {round_no} is {game}",
    )
    SHOE_EXHAUSTED = (
        "shoe_exhausted",
        "open_round on a shoe that dealt the most rounds a shoe deals",
        "shoe {shoe_id} has dealt {rounds} rounds, the limit is {rounds_max}",
    )
    # command line (domain/roundfile.py, ops/cli/commands/, projections/audit_store.py)
    BAD_ROUND_FILE = (
        "bad_round_file",
        "a round file (`ledger settle`) that is not valid JSON or not shaped as docs/rounds.md says",
        "a step must be a card string or an object, got {step!r}",
        {
            "unknown-step": "unknown step {step!r}: expected 'card', 'decide' or 'follow'",
            "bet-not-object": "a bet must be an object, got {bet!r}",
            "bet-fields": "bet has unknown fields {unknown}; allowed: {allowed}",
            "not-object": "the round file must be a JSON object",
            "too-many-steps": "{steps} steps; at most {steps_max}",
            "bet": "bet {bet_id!r}: {error}",
            "table-not-object": "'table' must be an object, got {table!r}",
            "table-fields": "'table' has unknown fields {unknown}; allowed: {allowed}",
            "table-divisible": "table stake_divisible_by_min must be true or false, got {value!r}",
            "table-limits": "table limits must be an object: {{bet_type: {{min_minor, max_minor}}}}",
            "table-string": "table {name} must be a string, got {value!r}",
            "table-int": "table {name} must be an integer, got {value!r}",
            "table-limit": "table limit {bet_type!r} must be {{\"min_minor\": int, \"max_minor\": int}}, got {value!r}",
            "json": "not valid JSON: {error}",
        },
    )
    BAD_ROUND_REF = (
        "bad_round_ref",
        "a round reference that is neither a round UUID nor TABLE#ROUND_NO",
        "{ref!r}: use a round UUID or TABLE#ROUND_NO like bacc-1#12",
    )
    TABLE_NOT_ALLOWED = (
        "table_not_allowed",
        "a command posted to the live service with an API key scoped to other tables; nothing recorded, not logged",
        "this API key may write tables {tables} only, not {table_id}; nothing was recorded",
    )
    OPERATOR_NOT_ALLOWED = (
        "operator_not_allowed",
        "a command posted to the live service with an API key scoped to other operators (a bet, a player's "
        "decision or pause, an operator's configuration); nothing recorded, not logged",
        "this API key may write operators {operators} only, not {operator_id}; nothing was recorded",
    )
    # table configuration (domain/tableconfig.py, ledger/table.py)
    TABLE_LIMIT_FORBIDDEN = (
        "table_limit_forbidden",
        "a table limit the rule set does not allow: a bet type it does not offer, minimum above maximum, an amount "
        "outside 1..AMOUNT_MAX_MINOR, a maximum that is not a multiple of a minimum every stake must divide by",
        "table {table_id}: the {bet_type} limit {min}..{max} is not allowed under {ruleset_id} v{version}: {reason}",
        {
            "out-of-range": "table {table_id}: the {bet_type} limit {min}..{max} needs 0 < minimum <= maximum <= "
                "{most}",
            "min-above-max": "table {table_id}: the {bet_type} limit has its minimum above its maximum",
        },
    )
    TABLE_SETTING_FORBIDDEN = (
        "table_setting_forbidden",
        "a table setting the rule set does not allow: a setting of another game, or a count outside what the rule set "
        "permits (seats/boxes, stakes per box, boxes per player, the Player/Banker difference limit)",
        "table {table_id}: {setting}={value} is not allowed under {ruleset_id} v{version}: {reason}",
        {
            "versions": "table {table_id} has {versions} configuration versions, the limit",
        },
    )
    TABLE_MISMATCH = (
        "table_mismatch",
        "a command that disagrees with the table's configuration: configure_table naming a rule set of another game, "
        "or open_round at a configured table under another rule set or currency",
        "round {table_id}#{round_no} opens under {ruleset_id} v{version} in {currency}; table {table_id} is "
        "configured (v{config_version}) for {table_ruleset_id} v{table_version} in {table_currency}",
        {
            "configure": "table {table_id}: game {game} named with {ruleset_id} v{version}, a {ruleset_game} rule set",
        },
    )
    BAD_TIMEZONE = (
        "bad_timezone",
        "a table timezone that is not an IANA time zone name",
        "table {table_id}: {timezone!r} is not an IANA time zone name like 'Europe/Berlin' or 'UTC'",
        {
            "operator": "operator {operator_id}: {timezone!r} is not an IANA time zone name like 'Europe/Madrid' "
                        "or 'UTC'",
        },
    )
    # operators (domain/operators.py, ledger/operator.py)
    UNKNOWN_OPERATOR = (
        "unknown_operator",
        "a bet naming an operator no configure_operator has configured (the default operator needs none)",
        "bet {bet_id} names operator {operator_id}, which is not configured; configure_operator first",
    )
    OPERATOR_MISMATCH = (
        "operator_mismatch",
        "a bet in a currency its operator is not configured for",
        "bet {bet_id}: operator {operator_id} plays in {currencies}, not {currency}",
    )


@dataclass(frozen=True, slots=True)
class Use:
    """How one part of the code raises a code: when (empty: the code's meaning), and a real message if one helps."""

    code: RefusalCode
    when: str = ""
    example: str = ""


@dataclass(frozen=True, slots=True)
class Section:
    title: str
    intro: str
    uses: tuple[Use, ...]


C = RefusalCode  # short, for the tables below

SHARED = Section("Shared codes", """\
Modules: domain/money.py, cards.py, ruleset.py, registry.py, errorpolicy.py. Every game
raises these with the meaning below; a game's section says when it differs.""", (
    Use(C.BAD_AMOUNT, example="bet b stake must be positive, got 0"),
    Use(C.BAD_CURRENCY, example="currency must be a three-letter ISO 4217 code like 'EUR', got 'eur'"),
    Use(C.BAD_CARD, example="'1S' is not a card: use rank A,2-9,T (or 10),J,Q,K then suit S,H,D,C, e.g. 'AS' or '10D'"),
    Use(C.IMPOSSIBLE_CARD, "(domain/cards.py) more copies of a card in the round than the shoe holds"),
    Use(C.UNKNOWN_RULE_SET, example="no rule set 'blackjack/vegas' version 1; known: ..."),
    Use(C.BAD_CAUSE, example="unknown interruption cause 'power_cut'; known causes: player_connection_lost, ..."),
    Use(C.BET_NOT_OFFERED, "(domain/ruleset.py) a bet type the rule set has no limits for"),
    Use(C.STAKE_BELOW_MINIMUM, example="bet b1 (Tie): stake 0.99 is below the table minimum 1.00 for tie"),
    Use(C.STAKE_ABOVE_MAXIMUM, "(domain/ruleset.py) a single stake above the table maximum of its bet type"),
))

BLACKJACK = Section("Blackjack", """\
Module: domain/blackjack.py (rule sets in domain/blackjack_rules.py). Shared codes
keep their meaning; the list below says when blackjack raises them.""", (
    Use(C.DUPLICATE_BET_ID, example="bet b1 was already placed in this round"),
    Use(C.DUPLICATE_BET, "the player already has that bet (main, behind on that seat, Pair) on that spot",
        "bet b7: player p1 already has a main bet on box:2"),
    Use(C.TOO_MANY_BETS, "more than 500 bets in a round, or more bets behind one seat than `behind_bets_per_seat_max`",
        "bet x3: seat:1 already has 50 bets behind, the maximum under blackjack/live-8d"),
    Use(C.BAD_AMOUNT, "stake not a positive integer number of minor units", "bet b stake must be positive, got 0"),
    Use(C.UNKNOWN_SPOT, "spot not `seat:1..7` / `box:1..7` / `behind:1..7` of this table",
        "bet b: seat:8 does not exist; blackjack/live-8d has seats 1..7"),
    Use(C.BET_NOT_OFFERED, "bet type other than `main`/`pair`, a Pair bet where `pair_side_bet` is off, a bet behind "
        "where `bet_behind` is off", "bet b: bet behind is not offered under blackjack/casino-tour"),
    Use(C.STAKE_BELOW_MINIMUM, "stake below the limit for `main`, `behind` or `pair`",
        "bet b (main on seat:1): stake 0.50 is below the table minimum 1.00 for main"),
    Use(C.STAKE_ABOVE_MAXIMUM, "stake above the limit for `main`, `behind` or `pair`; spielbank also when all stakes on "
        "a box together pass the box maximum (`max_applies_to_box_total`)",
        "bet b3: stakes on box:1 would total 5,000.05, above the box maximum 5,000.00"),
    Use(C.STAKE_NOT_DIVISIBLE, "spielbank (`stake_divisible_by_min`): stake not a multiple of the table minimum",
        "bet b (main on box:1): stake 10.01 is not divisible by the table minimum 5.00"),
    Use(C.SEAT_TAKEN, "the seat/box already has another player's main bet and takes one stake (`stakes_per_box_max=1`); "
        "spielbank v2 (`seat_no_per_player`): or the bet's `seat_no` is another player's this round",
        "bet b2: seat:1 is taken by player p1"),
    Use(C.BOX_FULL, "spielbank: the box already holds `stakes_per_box_max` (4) stakes",
        "bet b5: box:1 already holds 4 stakes, the maximum per box under blackjack/spielbank"),
    Use(C.PLAYER_ALREADY_SEATED, "live-8d: the player already has a seat (`boxes_per_player_max=1`); live-8d v2 "
        "(domain/seating.py, `seats_span_rounds`): or holds another seat from an earlier round; spielbank v2 "
        "(`seat_no_per_player`): or gave another `seat_no` this round",
        "bet b2: player p1 already sits at seat:1; a player takes at most one seat"),
    Use(C.SEAT_HELD, "live-8d v2 (domain/seating.py): the seat is held by another player from an earlier round",
        "bet b7: seat:3 is held by player p1 (seated since round 12); it is free once they lose it"),
    Use(C.SEAT_LOST, "live-8d v2 (domain/seating.py, `seat_lost_wait_rounds`): the player lost this seat by taking "
        "no action, and the wait after the loss has not ended",
        "bet b9: player p1 lost seat:3 after taking no action in round 12; they may take it again from round 14 "
        "(another free seat or a bet behind now)"),
    Use(C.TOO_MANY_BOXES, "the player already plays `boxes_per_player_max` boxes (spielbank 2)",
        "bet c2: player p1 already plays 2 boxes (box:1, box:2), the maximum under blackjack/spielbank"),
    Use(C.SEATED_PLAYER_BEHIND, "live-8d: a seated player bets behind, or a player betting behind takes a seat; "
        "live-8d v2: or a player holding a seat from an earlier round bets behind",
        "bet b2: player p1 is seated and cannot also bet behind"),
    Use(C.BEHIND_WITHOUT_SEAT, "a bet behind a seat with no main bet yet (the seat's main bet comes first)",
        "bet b: nobody has a main bet on seat:1 yet; a bet behind follows a seated player's main bet"),
    Use(C.SIDE_BET_WITHOUT_MAIN, "a Pair bet before that player's main bet on the same spot (`pair_requires_main`)",
        "bet b: the Pair side bet on seat:1 needs player p's main bet there first"),
    Use(C.BETTING_CLOSED, example="bet b2: betting is closed for this round"),
    Use(C.BETTING_OPEN, example="card AS to seat:1: betting is still open; close betting first"),
    Use(C.WRONG_TARGET, "a card to another hand/dealer than the next one the rules expect",
        "card AS dealt to dealer, but the next card must go to seat:1"),
    Use(C.CARD_NOT_EXPECTED, "a card when none is expected (a decision is awaited, the dealer stands on 17+, the "
        "round is complete)", "card 2C to dealer: no card is expected now (the round is complete)"),
    Use(C.IMPOSSIBLE_CARD, "(domain/cards.py) more copies of a card in the round than the shoe holds"),
    Use(C.UNKNOWN_HAND, example="hit on seat:4: no such hand in this round (hands: seat:1)"),
    Use(C.DECISION_NOT_LEGAL, "the action is not legal for that hand now; the message lists what is",
        "split on seat:1 is not legal now (legal now: seat:1: hit, stand, double, surrender, auto)"),
    Use(C.BAD_DECISION_SOURCE, example="seat:1 hit: source must be one of player, timeout, system, dealer, got 'robot'"),
    Use(C.AMOUNT_NOT_ALLOWED, "an amount given with a decision other than insurance",
        "hit on seat:1: an amount is only chosen for casino-tour insurance"),
    Use(C.BAD_INSURANCE_AMOUNT, "live-8d/spielbank: amount other than exactly half the main bet (rounded down); "
        "casino-tour: outside [half the table minimum, half the stake]",
        "insurance on box:1: amount 5.01 must be between half the table minimum (0.50) and half the stake (5.00)"),
    Use(C.NO_FOLLOW_OFFER, "follow() for a bet with no open offer of that kind (never made, answered, or closed by "
        "the next card/decision)", "bet bb has no open split follow offer (open offers: none)"),
    Use(C.NOT_BOX_HOLDER, "a `decide` naming a `player_id` other than the player who decides for the hand: the "
        "seat's player (live-8d), the box holder (spielbank seed 002, holder rule `own_seat_then_next_lower`); "
        "`check_decider`, called by the ledger",
        "box:1: only the box holder p1 decides; p2 may only follow a split or double"),
    Use(C.ROUND_NOT_COMPLETE, example="cannot settle: the round is still in phase play (awaiting a card to seat:1)"),
))

BACCARAT = Section("Baccarat", """\
Module: domain/baccarat.py (`baccarat/live-8d`). Shared codes keep their meaning.""", (
    Use(C.BAD_ROUND_IN_SHOE, "new_round with a round of the shoe outside 1..104 (8 decks × 52 / 4 cards) or not an int",
        "round of the shoe must be an integer 1..104, got 0"),
    Use(C.BETTING_CLOSED, example="bet b2: betting is closed for this round"),
    Use(C.TOO_MANY_BETS, "more than `bets_per_round_max` (1000) bets in the round", "bet b9: a round takes at most 1000 bets"),
    Use(C.DUPLICATE_BET_ID, example="bet id b1 was already placed in this round"),
    Use(C.BAD_SPOT, example="bet b1: baccarat bets lie on spot 'table', not 'seat:1'"),
    Use(C.BET_NOT_OFFERED, "an unknown bet type, or a side bet after its max round of the shoe (`max_round_by_bet`: "
        "pairs 60, the others marked 50)", "Perfect Pair is not offered after round 50 of the shoe; this is round 51"),
    Use(C.BAD_MODE, "Bet.mode other than `traditional` / `no_commission` / none",
        "bet b1: mode must be one of traditional, no_commission, got 'ez'"),
    Use(C.MODE_REQUIRED, "a Banker bet without a mode when `banker_mode_default` is None (v1 defaults to traditional, "
        "so v1 never raises it)", "bet b1: a Banker bet needs a mode: traditional or no_commission"),
    Use(C.BAD_AMOUNT, "stake not a positive int ≤ AMOUNT_MAX_MINOR", "bet b1 stake must be positive, got 0"),
    Use(C.STAKE_BELOW_MINIMUM, "a single stake below the table minimum of its bet type (Player/Banker too)",
        "bet b1 (Tie): stake 0.99 is below the table minimum 1.00 for tie"),
    Use(C.STAKE_ABOVE_MAXIMUM, "a side bet: the player's stakes on that bet type in the round would pass its maximum",
        "bet c (Tie): stakes on Tie would total 2,000.01, above the table maximum 2,000.00"),
    Use(C.DIFFERENCE_ABOVE_MAXIMUM, "Player/Banker (`main_limit_on_difference`): |player's Player stakes − Banker "
        "stakes| would pass the table maximum of the larger side",
        "bet p2 (Player): Player stakes would exceed Banker stakes by 10,001.00; the table maximum 10,000.00 applies "
        "to the difference between Player and Banker"),
    Use(C.CARD_NOT_EXPECTED, "a card while betting is open or after the coup is complete",
        "AS (ace of spades) was not expected: the coup is complete"),
    Use(C.WRONG_TARGET, "a card to another target than the rules' next one (`burn`, `player`, `banker`)",
        "AS (ace of spades) was dealt to 'banker'; the rules say the next card goes to 'player'"),
    Use(C.IMPOSSIBLE_CARD, "(domain/cards.py) a ninth copy of a card in the round"),
    Use(C.NO_DECISIONS, example="baccarat has no player decisions; 'hit' on 'player' is refused"),
    Use(C.NO_FOLLOW_OFFERS, example="baccarat has no follow offers; bet b1 cannot follow 'split'"),
    Use(C.ROUND_NOT_COMPLETE, "settle() before the coup is complete", "the coup is not complete; it cannot be settled yet"),
))

TEEN_PATTI = Section("Teen Patti", """\
Module: domain/teenpatti.py (`teen-patti/20-20`). Shared codes keep their meaning.""", (
    Use(C.BAD_ROUND_IN_SHOE, "new_round with a round number outside 1..10^9 or not an int (recorded only; the deck is "
        "fresh every round)", "round number must be an integer 1..1000000000, got 0"),
    Use(C.BETTING_CLOSED, example="bet b2: betting is closed for this round"),
    Use(C.TOO_MANY_BETS, "more than `bets_per_round_max` bets in the round", "bet b9: a round takes at most 1000 bets"),
    Use(C.DUPLICATE_BET_ID, example="bet id b1 was already placed in this round"),
    Use(C.BAD_SPOT, example="bet b1: Teen Patti bets lie on spot 'table', not 'box:1'"),
    Use(C.BET_NOT_OFFERED, "a bet type other than player_a, player_b, tie, pair_plus_a, pair_plus_b, six_card_bonus",
        "bet b1: bet type 'player' is not offered under teen-patti/20-20 v1; offered: ..."),
    Use(C.BAD_AMOUNT, "stake not a positive int ≤ AMOUNT_MAX_MINOR", "bet b1 stake must be positive, got 0"),
    Use(C.STAKE_BELOW_MINIMUM, "a single stake below the table minimum of its bet type"),
    Use(C.STAKE_ABOVE_MAXIMUM, "the player's stakes on that bet type in the round would pass its maximum"),
    Use(C.CARD_NOT_EXPECTED, "a card while betting is open or after both hands have three cards",
        "2C (two of clubs) was not expected: both hands are complete"),
    Use(C.WRONG_TARGET, "a card out of the deal order A1, B1, A2, B2, A3, B3",
        "AS (ace of spades) was dealt to 'B'; the deal order A1, B1, A2, B2, A3, B3 says the next card goes to 'A'"),
    Use(C.IMPOSSIBLE_CARD, "(domain/cards.py, one deck) a card already dealt in this round",
        "AS (ace of spades) cannot be dealt: a 1-deck shoe holds 1 and all 1 have already been dealt"),
    Use(C.NO_DECISIONS, example="Teen Patti 20-20 has no player decisions; 'hit' on 'A' is refused"),
    Use(C.NO_FOLLOW_OFFERS, example="Teen Patti 20-20 has no follow offers; bet b1 cannot follow 'split'"),
    Use(C.ROUND_NOT_COMPLETE, "settle() before both hands have three cards",
        "both hands need three cards before the round can be settled"),
))

LEDGER = Section("Ledger", """\
Module: ledger/ (round.py, shoe.py, app.py, store.py). A refused command changes no
aggregate (except the human-error consequence below) and is appended to
`ledger_rejections`. Game codes from domain/ pass through unchanged.""", (
    Use(C.BAD_COMMAND, "the line is not valid JSON or does not match the command schema; the message names the field",
        "place_bet.stake_minor: Input should be a valid integer"),
    Use(C.TEXT_INVALID, "any string of a command (an id, a note, a reason, a key of `limits`) holding a character "
        "no store or screen takes as it is; the message names the field and the character, escaped",
        "void.note: U+0000 (NUL) at character 2 is not allowed (control and bidirectional characters are refused)"),
    Use(C.COMMAND_ID_CONFLICT, "a command id already used anywhere in the store for a different payload",
        "command id T1/1/4 was already used for a different command (accepted); a retry must repeat the same payload"),
    Use(C.ROUND_NOT_OPEN, example="round T1#9 has not been opened; send open_round first"),
    Use(C.ROUND_EXISTS, example="round T1#1 is already open"),
    Use(C.ROUND_VOIDED, "any command for a voided round, including a tombstone (void before open)",
        "round T1#1 is voided"),
    Use(C.ROUND_SETTLED, "a bet, card, decision, pause or void for a settled round (use reverse_settlement)",
        "round T1#1 is settled; correct it with reverse_settlement"),
    Use(C.ROUND_PAUSED, "a command other than resume/void while paused (a flagged pause also takes the correct card)",
        "round T1#1 is paused (system_error); resume or void it first"),
    Use(C.ROUND_NOT_PAUSED, "resume when the round is not paused", "round T1#1 is not paused; nothing to resume"),
    Use(C.PLAYER_REQUIRED, "pause with a player-side cause and no `player_id` (the cause concerns one player; "
        "a `complete` policy plays only that player's hands)",
        "a player_connection_lost pause of round T1#1 must name the player (player_id) it concerns: only that "
        "player's hands are completed"),
    Use(C.PLAYER_NOT_IN_ROUND, "pause with a player-side cause naming a player with no bet in the round",
        "player p9 has no bet in round T1#1; a player_connection_lost pause concerns one of the round's players"),
    Use(C.ROUND_NOT_SETTLED, "reverse_settlement when there is no current settlement",
        "round T1#1 has no settlement to reverse (it is dealing)"),
    Use(C.DUPLICATE_BET_ID, "a bet id already placed in this round (checked before the game's own rules)",
        "bet b1 is already placed in round T1#1"),
    Use(C.CARD_OUT_OF_SEQUENCE, "a card whose seq_no is not the next position in the round (a lost or repeated "
        "message, not a dealer error)", "card KS has seq_no 4; the next card of round T1#1 is number 3"),
    Use(C.IMPOSSIBLE_CARD, "(ledger/round.py, across rounds) the shoe's recorded cards plus the round's own already "
        "hold every copy; a human error, see docs/feed.md",
        "KS (king of spades) cannot be dealt: a 8-deck shoe holds 8 and all 8 have already been dealt"),
    Use(C.UNKNOWN_RULE_SET, "open_round with a rule set id and version the registry does not know"),
    Use(C.SHOE_RETIRED, "open_round on a shoe retired after a void under a replace-the-shoe policy (live blackjack)",
        "shoe S1 at table bj-1 was retired after round bj-1#4 was voided (host_interruption); open the round on a new shoe"),
    Use(C.SHOE_GAME_MISMATCH, "open_round on a shoe id that deals another game", "shoe S1 deals baccarat; round 2 is teen-patti"),
    Use(C.SHOE_EXHAUSTED, "more than 10,000 rounds on one shoe", "shoe S1 has dealt 10000 rounds, the limit is 10000"),
    Use(C.CONCURRENCY_CONFLICT, "(status `conflict`, not `refused`; nothing recorded, not logged) another writer "
        "changed the round between load and save; retry the command"),
))

COMMAND_LINE = Section("Command line: settle, replay, audit", """\
Modules: domain/roundfile.py and ops/cli/commands/settle.py (`ledger settle`, docs/rounds.md),
projections/audit_store.py and ops/cli/commands/replay.py (`ledger replay`). Game codes from
domain/ pass through unchanged.""", (
    Use(C.BAD_ROUND_FILE, "the round file is not valid JSON, not an object, has more steps than STEPS_MAX, or a bet "
        "or step of the wrong shape", "bet has unknown fields ['colour']; allowed: ..."),
    Use(C.CARD_NOT_EXPECTED, "(domain/roundfile.py) a card step without `to` when the round expects no card",
        "card 2C arrived but no card is expected now"),
    Use(C.BAD_ROUND_REF, "`ledger replay` got neither a round UUID nor TABLE#ROUND_NO",
        "'bacc-1-12': use a round UUID or TABLE#ROUND_NO like bacc-1#12"),
))

SERVICE = Section("Live service", """\
Module: ops/service/app.py (`ledger serve`, POST /v1/commands). Answered per command in
the results array, beside the ledger's own codes; the command never reaches the ledger.""", (
    Use(C.TABLE_NOT_ALLOWED, "a studio key made with `ledger keys add --tables T1,T2` posts a command of another table",
        "this API key may write tables T1, T2 only, not bacc-1; nothing was recorded"),
    Use(C.TABLE_NOT_ALLOWED, "a studio key made with `--tables` posts a command that names no table "
        "(`configure_operator`)", "this API key may write tables T1 only, not configure_operator (it names no "
        "table); nothing was recorded"),
    Use(C.OPERATOR_NOT_ALLOWED, "a studio key made with `ledger keys add --operator OP1` posts a bet of another "
        "operator's player (a feed naming none: the default operator), or configures another operator",
        "this API key may write operators OP1 only, not OP2; nothing was recorded"),
))

TABLES = Section("Tables", """\
Modules: domain/tableconfig.py (what a table may configure) and ledger/table.py (the Table
aggregate, `configure_table`); open_round at a configured table (ledger/app.py); the `table`
object of a round file (domain/roundfile.py). See docs/feed.md and docs/events.md.""", (
    Use(C.TABLE_LIMIT_FORBIDDEN, example="table bj-2: the main limit 500..1,000.00 is not allowed under "
        "blackjack/spielbank v1: every stake must be a multiple of the minimum 5.00; the maximum is not"),
    Use(C.TABLE_SETTING_FORBIDDEN, example="table bj-1: stakes_per_box_max=2 is not allowed under "
        "blackjack/live-8d v1: at most 1"),
    Use(C.TABLE_MISMATCH, example="round bj-1#7 opens under blackjack/spielbank v1 in EUR; table bj-1 is configured "
        "(v2) for blackjack/live-8d v1 in EUR"),
    Use(C.BAD_TIMEZONE, example="table bj-1: 'Mars/Olympus' is not an IANA time zone name like 'Europe/Berlin' or 'UTC'"),
))

OPERATORS = Section("Operators", """\
Modules: domain/operators.py (the default operator, player keys) and ledger/operator.py (the
Operator aggregate, `configure_operator`); place_bet naming an operator (ledger/handlers.py).
See docs/operators.md.""", (
    Use(C.UNKNOWN_OPERATOR, example="bet b-9 names operator OP7, which is not configured; configure_operator first"),
    Use(C.OPERATOR_MISMATCH, example="bet b-9: operator OP2 plays in EUR, not GBP"),
    Use(C.BAD_TIMEZONE, "configure_operator with a zone that is not an IANA time zone name",
        "operator OP2: 'Mars/Olympus' is not an IANA time zone name like 'Europe/Madrid' or 'UTC'"),
))

SECTIONS = (SHARED, BLACKJACK, BACCARAT, TEEN_PATTI, LEDGER, COMMAND_LINE, SERVICE, TABLES, OPERATORS)


def markdown() -> str:
    """docs/refusals.md: one section per module, then every code with its meaning and template."""
    lines = [
        "# Refusal codes",
        "",
        "<!-- Generated from domain/refusals.py by `python -m domain.refusals --markdown > docs/refusals.md`;",
        "     edit the catalogue there, not this file (tests/unit/domain/test_refusals_catalogue.py checks). -->",
        "",
        "Stable snake_case codes raised as `refuse(RefusalCode.X, variant, **fields)`, the message made from",
        "the code's template (or a named variant of it); one section per module, then every code with its",
        "meaning and message templates.",
    ]
    for section in SECTIONS:
        lines += ["", f"## {section.title}", "", section.intro, ""]
        lines += [_use_line(use) for use in section.uses]
    lines += ["", "## Every code", "", "| code | meaning | message templates |", "|---|---|---|"]
    lines += [f"| `{c}` | {c.meaning} | {_templates_cell(c)} |" for c in sorted(RefusalCode)]
    return "\n".join(lines) + "\n"


def _templates_cell(code: RefusalCode) -> str:
    """The template, then each variant by name, one per line of the cell."""
    return "<br>".join(f"{name}: `{t}`" if name else f"`{t}`" for name, t in code.templates.items())


def _use_line(use: Use) -> str:
    parts = [f"`{use.code}`", use.when or use.code.meaning] + ([f'"{use.example}"'] if use.example else [])
    return "- " + " — ".join(parts)


def main(argv: list[str]) -> int:
    if argv != ["--markdown"]:
        print("usage: python -m domain.refusals --markdown > docs/refusals.md", file=sys.stderr)
        return 2
    print(markdown(), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
