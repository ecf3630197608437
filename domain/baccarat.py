"""Baccarat `baccarat/live-8d` (seed 001, Bengali): the pure round model.

A coup is dealt P, B, P, B, then third cards by the drawing rules
(`player_draws`, `banker_draws`). A new shoe (round 1 of the shoe) starts
with the burn: the revealed card's value says how many more cards are burned.
Settlement goes through `resolve_bet()`, a pure function of the rule set, the
bet type, the Banker mode and a `Coup` summary; domain/gamemath.py enumerates the
exact game math through the same function, so the RTP check tests the very
code that settles real bets.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from domain.cards import CARDS_PER_DECK, Card, CardCounter
from domain.errorpolicy import policy
from domain.errors import InvariantBroken, refuse, require
from domain.model import Bet, BetResult
from domain.money import Odds, check_stake_minor, format_minor, returns_text, win
from domain.outcome import HandOutcome, RoundOutcome
from domain.refusals import RefusalCode
from domain.ruleset import RuleSet, limits
from domain.tablebets import NoPlayerChoices, check_table_bet

GAME = "baccarat"
SPOT = "table"
MODES = ("traditional", "no_commission")
BET_TYPES = (
    "player", "banker", "tie", "player_pair", "banker_pair", "either_pair", "perfect_pair",
    "player_natural", "banker_natural", "player_bonus", "banker_bonus",
    "lucky_six", "lucky_six_2", "lucky_six_3",
)
BET_NAMES = {
    "player": "Player", "banker": "Banker", "tie": "Tie", "player_pair": "Player Pair",
    "banker_pair": "Banker Pair", "either_pair": "Either Pair", "perfect_pair": "Perfect Pair",
    "player_natural": "Player Natural", "banker_natural": "Banker Natural",
    "player_bonus": "Player Bonus", "banker_bonus": "Banker Bonus", "lucky_six": "Lucky Six",
    "lucky_six_2": "2-card Lucky Six", "lucky_six_3": "3-card Lucky Six",
}
MAIN_BETS = ("player", "banker")  # their table limit applies to the Player/Banker difference
NATURAL_TOTAL_MIN = 8
PLAYER_STANDS_FROM = 6
LUCKY_TOTAL = 6
BURN_TEN_VALUE = 10  # a 10/J/Q/K revealed at the burn burns 10 more cards
CARDS_PER_ROUND_MIN = 4


@dataclass(frozen=True)
class BaccaratRules(RuleSet):
    """Everything the seed and the spec Decisions fix, as named data."""

    # Paytable line -> odds. Lines: player, banker_traditional, banker_no_commission,
    # banker_no_commission_six, tie, player_pair, banker_pair, either_pair, perfect_pair,
    # player_natural, banker_natural, bonus_natural_win, bonus_margin_4..bonus_margin_9,
    # lucky_six_two_cards, lucky_six_three_cards, lucky_six_2, lucky_six_3.
    paytable: tuple[tuple[str, Odds], ...]
    # bet type -> last round of the shoe in which it may be placed (absent: always offered)
    max_round_by_bet: tuple[tuple[str, int], ...]
    # Banker third-card rule after the Player drew: banker two-card total -> the
    # player third-card values on which Banker draws (totals 0-2 draw always, 7 never).
    banker_draws_on: tuple[tuple[int, tuple[int, ...]], ...]
    player_draws_max_total: int  # Player draws on 0..this two-card total (5)
    banker_draws_max_total_if_player_stood: int  # Banker draws on 0..this when Player stood (5)
    # Decision: a pair is the same rank (10-K is not a pair); False: same point value.
    pair_same_rank_only: bool
    # Decision: Player/Banker Natural pays on a two-card 8 or 9 whether or not that hand wins.
    natural_pays_regardless_of_win: bool
    # Decision: Lucky Six needs the Banker to WIN with a final 6 (a 6-6 tie loses);
    # False: any final Banker 6 that does not lose (a 6-6 tie) pays too.
    lucky_six_needs_banker_win: bool
    # Decision: no-commission Banker pays 1:2 on any winning Banker 6 (two or three
    # cards); False: only on a two-card winning 6 (a three-card 6 then pays 1:1).
    no_commission_half_on_any_banker_6: bool
    # Seed "Supplement": the Player and Banker table limits apply to the difference
    # between one player's Player and Banker stakes in the round; False: to each side.
    main_limit_on_difference: bool
    # Decision: the studio reports every burned card with its identity (target "burn");
    # False: only the revealed first card is reported, the rest are burned unseen.
    burned_cards_reported: bool
    # Decision: a Banker bet without a mode is taken in this mode (the player's toggle
    # defaults to traditional baccarat); None would refuse it (`mode_required`).
    banker_mode_default: str | None
    bets_per_round_max: int  # every bet line of the round, all players (a limit on everything)

    def __post_init__(self) -> None:
        lines = dict(self.paytable)
        require(len(lines) == len(self.paytable), "duplicate paytable line")
        require(all(t in BET_TYPES for t, _ in self.limits), "limit for an unknown bet type")
        require(all(t in BET_TYPES and n >= 1 for t, n in self.max_round_by_bet), "bad max round")
        require(self.banker_mode_default in (None, *MODES), "bad default mode")
        require(self.bets_per_round_max >= 1, "bets_per_round_max must be positive")

    def odds(self, line: str) -> Odds:
        for name, odds in self.paytable:  # every winning bet asks: no dict made, the message only when broken
            if name == line:
                return odds
        raise InvariantBroken(f"no paytable line {line!r} in {self.id} v{self.version}")

    def max_round(self, bet_type: str) -> int | None:
        for name, last in self.max_round_by_bet:  # every bet asks: no dict made
            if name == bet_type:
                return last
        return None


def _odds(**lines: str) -> tuple[tuple[str, Odds], ...]:
    return tuple((name, Odds.parse(text)) for name, text in lines.items())


LIVE_8D_V1 = BaccaratRules(
    id="baccarat/live-8d",
    version=1,
    game=GAME,
    title="Baccarat (live, 8 decks), traditional and no-commission",
    seed="001_5a030715fdf31d3a.txt",
    decks=8,
    limits=limits(
        player=(100, 1_000_000), banker=(100, 1_000_000), tie=(100, 200_000),
        player_pair=(100, 100_000), banker_pair=(100, 100_000), either_pair=(100, 100_000),
        perfect_pair=(100, 50_000), player_natural=(100, 100_000), banker_natural=(100, 100_000),
        player_bonus=(100, 100_000), banker_bonus=(100, 100_000), lucky_six=(100, 50_000),
        lucky_six_2=(100, 50_000), lucky_six_3=(100, 50_000),
    ),
    error_policy=policy(
        "seed 001 'Error handling': the round is paused while the dealer calls the supervisor, "
        "resumed if solved quickly, else cancelled with every bet refunded; 'Disconnect': the "
        "round goes on and confirmed bets stay valid",
        default="pause",
        player_connection_lost="complete",
    ),
    paytable=_odds(
        player="1:1", banker_traditional="0.95:1", banker_no_commission="1:1",
        banker_no_commission_six="1:2", tie="8:1", player_pair="11:1", banker_pair="11:1",
        either_pair="5:1", perfect_pair="25:1", player_natural="7:2", banker_natural="7:2",
        bonus_natural_win="1:1", bonus_margin_9="30:1", bonus_margin_8="10:1",
        bonus_margin_7="6:1", bonus_margin_6="4:1", bonus_margin_5="2:1", bonus_margin_4="1:1",
        lucky_six_two_cards="12:1", lucky_six_three_cards="20:1", lucky_six_2="22:1",
        lucky_six_3="50:1",
    ),
    max_round_by_bet=(
        ("player_pair", 60), ("banker_pair", 60), ("either_pair", 50), ("perfect_pair", 50),
        ("player_natural", 50), ("banker_natural", 50), ("lucky_six", 50), ("lucky_six_2", 50),
        ("lucky_six_3", 50),
    ),
    banker_draws_on=(
        (0, tuple(range(10))), (1, tuple(range(10))), (2, tuple(range(10))),
        (3, (0, 1, 2, 3, 4, 5, 6, 7, 9)), (4, (2, 3, 4, 5, 6, 7)), (5, (4, 5, 6, 7)),
        (6, (6, 7)), (7, ()),
    ),
    player_draws_max_total=5,
    banker_draws_max_total_if_player_stood=5,
    pair_same_rank_only=True,
    natural_pays_regardless_of_win=True,
    lucky_six_needs_banker_win=True,
    no_commission_half_on_any_banker_6=True,
    main_limit_on_difference=True,
    burned_cards_reported=True,
    banker_mode_default="traditional",
    bets_per_round_max=1000,
)

RULE_SETS: tuple[BaccaratRules, ...] = (LIVE_8D_V1,)


# ---------------------------------------------------------------- card math


def point_value(card: Card) -> int:
    """Baccarat points: ace 1, 2-9 face value, 10/J/Q/K 0."""
    return 0 if card.is_ten_value else (1 if card.rank == "A" else int(card.rank))


def burn_value(card: Card) -> int:
    """How many more cards a revealed burn card burns: ace 1, 2-9 face, 10-value 10."""
    return BURN_TEN_VALUE if card.is_ten_value else (1 if card.rank == "A" else int(card.rank))


def hand_total(cards: list[Card] | tuple[Card, ...]) -> int:
    return sum(point_value(c) for c in cards) % 10


def is_natural(two_card_total: int) -> bool:
    return two_card_total >= NATURAL_TOTAL_MIN


def player_draws(total: int, rules: BaccaratRules = LIVE_8D_V1) -> bool:
    """Player (two-card total, no natural on either side) draws on 0-5, stands on 6-7."""
    if not (0 <= total <= 9):  # the message is built only when broken
        raise InvariantBroken(f"bad total {total}")
    return total <= rules.player_draws_max_total


def banker_draws(banker_total: int, player_third_value: int | None, rules: BaccaratRules = LIVE_8D_V1) -> bool:
    """Banker's third card: by its own total if the Player stood, else by the table."""
    if not (0 <= banker_total <= 9):  # the message is built only when broken
        raise InvariantBroken(f"bad total {banker_total}")
    if player_third_value is None:
        return banker_total <= rules.banker_draws_max_total_if_player_stood
    if not (0 <= player_third_value <= 9):  # the message is built only when broken
        raise InvariantBroken(f"bad third card value {player_third_value}")
    return player_third_value in dict(rules.banker_draws_on).get(banker_total, ())


def is_pair(first: Card, second: Card, rules: BaccaratRules) -> bool:
    if rules.pair_same_rank_only:
        return first.rank == second.rank
    return point_value(first) == point_value(second)


def is_perfect_pair(first: Card, second: Card) -> bool:
    return first == second  # same rank and suit (possible with 8 decks)


@dataclass(frozen=True, slots=True)
class Coup:
    """Everything settlement needs to know about a finished coup."""

    player_total: int
    banker_total: int
    player_cards: int  # 2 or 3
    banker_cards: int
    player_pair: bool
    banker_pair: bool
    perfect_pair: bool  # either hand's first two cards are identical
    player_natural: bool
    banker_natural: bool

    @property
    def winner(self) -> str:
        if self.player_total == self.banker_total:
            return "tie"
        return "player" if self.player_total > self.banker_total else "banker"

    def describe(self) -> str:
        p, b = self.player_total, self.banker_total
        if p == b:
            return f"Tie {p}–{b}"
        return f"Player wins {p}–{b}" if p > b else f"Banker wins {b}–{p}"


def coup_of(player: list[Card], banker: list[Card], rules: BaccaratRules) -> Coup:
    require(len(player) >= 2 and len(banker) >= 2, "coup needs two cards a side")
    return Coup(
        player_total=hand_total(player),
        banker_total=hand_total(banker),
        player_cards=len(player),
        banker_cards=len(banker),
        player_pair=is_pair(player[0], player[1], rules),
        banker_pair=is_pair(banker[0], banker[1], rules),
        perfect_pair=is_perfect_pair(player[0], player[1]) or is_perfect_pair(banker[0], banker[1]),
        player_natural=is_natural(hand_total(player[:2])),
        banker_natural=is_natural(hand_total(banker[:2])),
    )


# ---------------------------------------------------------------- settlement


@dataclass(frozen=True, slots=True)
class Resolution:
    """How one bet type fares in a coup: outcome, the paytable line, and why."""

    outcome: str  # win | push | lose
    line: str | None  # paytable line paid on a win
    reason: str


def _lose(reason: str) -> Resolution:
    return Resolution("lose", None, reason)


def _main(bet_type: str, mode: str | None, coup: Coup, rules: BaccaratRules) -> Resolution:
    if coup.winner == "tie":
        return Resolution("push", None, f"a tie pushes {BET_NAMES[bet_type]}")
    if coup.winner != bet_type:
        return _lose(f"{BET_NAMES[bet_type]} lost")
    if bet_type == "player":
        return Resolution("win", "player", "Player pays")
    if mode == "traditional":
        return Resolution("win", "banker_traditional", "Banker pays (5% commission)")
    six = coup.banker_total == LUCKY_TOTAL and (
        rules.no_commission_half_on_any_banker_6 or coup.banker_cards == 2
    )
    if six:
        return Resolution("win", "banker_no_commission_six", f"Banker {LUCKY_TOTAL} pays")
    return Resolution("win", "banker_no_commission", "Banker pays")


def _pairs(bet_type: str, coup: Coup) -> Resolution:
    hit = {
        "player_pair": coup.player_pair,
        "banker_pair": coup.banker_pair,
        "either_pair": coup.player_pair or coup.banker_pair,
        "perfect_pair": coup.perfect_pair,
    }[bet_type]
    if hit:
        return Resolution("win", bet_type, f"{BET_NAMES[bet_type]} on the first two cards pays")
    return _lose(f"no {BET_NAMES[bet_type]} on the first two cards")


def _natural(bet_type: str, coup: Coup, rules: BaccaratRules) -> Resolution:
    side = bet_type.removesuffix("_natural")
    natural = coup.player_natural if side == "player" else coup.banker_natural
    if not natural:
        return _lose(f"no {side.capitalize()} natural")
    if rules.natural_pays_regardless_of_win or coup.winner == side:
        return Resolution("win", bet_type, f"{BET_NAMES[bet_type]} (two-card {NATURAL_TOTAL_MIN} or 9) pays")
    return _lose(f"{side.capitalize()} natural did not win")


def _bonus(bet_type: str, coup: Coup, rules: BaccaratRules) -> Resolution:
    side = bet_type.removesuffix("_bonus")
    mine, theirs = (
        (coup.player_total, coup.banker_total) if side == "player" else (coup.banker_total, coup.player_total)
    )
    natural = coup.player_natural if side == "player" else coup.banker_natural
    name = side.capitalize()
    if natural and mine > theirs:
        return Resolution("win", "bonus_natural_win", f"{BET_NAMES[bet_type]}: natural win pays")
    if natural and mine == theirs:
        return Resolution("push", None, "a natural tie pushes")
    margin = mine - theirs
    line = f"bonus_margin_{margin}"
    if margin > 0 and line in dict(rules.paytable):
        return Resolution("win", line, f"{BET_NAMES[bet_type]}: non-natural win by {margin} pays")
    if margin == 0:
        return _lose("a non-natural tie loses")
    return _lose(f"{name} did not win by 4 or more" if margin > 0 else f"{name} lost")


def _lucky(bet_type: str, coup: Coup, rules: BaccaratRules) -> Resolution:
    six = coup.banker_total == LUCKY_TOTAL
    won = coup.winner == "banker" or (not rules.lucky_six_needs_banker_win and coup.winner == "tie")
    cards = coup.banker_cards
    if not (six and won):
        return _lose(f"Banker did not win with {LUCKY_TOTAL}")
    if bet_type == "lucky_six":
        line = "lucky_six_two_cards" if cards == 2 else "lucky_six_three_cards"
        return Resolution("win", line, f"Lucky Six: Banker {LUCKY_TOTAL} on {cards} cards pays")
    wanted = 2 if bet_type == "lucky_six_2" else 3
    if cards == wanted:
        return Resolution("win", bet_type, f"{BET_NAMES[bet_type]}: Banker {LUCKY_TOTAL} on {cards} cards pays")
    return _lose(f"Banker's {LUCKY_TOTAL} has {cards} cards, not {wanted}")


def resolve_bet(rules: BaccaratRules, bet_type: str, mode: str | None, coup: Coup) -> Resolution:
    """The outcome of one bet type in `coup` (pure; shared by settlement and domain/gamemath.py)."""
    if bet_type not in BET_TYPES:  # the message is built only when broken
        raise InvariantBroken(f"unknown bet type {bet_type!r}")
    if bet_type in MAIN_BETS:
        return _main(bet_type, mode, coup, rules)
    if bet_type == "tie":
        return Resolution("win", "tie", "Tie pays") if coup.winner == "tie" else _lose("no tie")
    if bet_type.endswith("_pair"):
        return _pairs(bet_type, coup)
    if bet_type.endswith("_natural"):
        return _natural(bet_type, coup, rules)
    if bet_type.endswith("_bonus"):
        return _bonus(bet_type, coup, rules)
    return _lucky(bet_type, coup, rules)


def _mode_note(bet: Bet) -> str:
    """", no-commission mode" after a Banker bet's coup; a placed Banker bet always has its mode."""
    if bet.bet_type != "banker":
        return ""
    if bet.mode is None:
        raise InvariantBroken(f"Banker bet {bet.bet_id} has no mode; place_bet resolves it")
    return f", {bet.mode.replace('_', '-')} mode"


def settle_bet(rules: BaccaratRules, bet: Bet, coup: Coup, described: str | None = None) -> BetResult:
    """`described` is `coup.describe()` when the caller settles many bets of one coup."""
    res = resolve_bet(rules, bet.bet_type, bet.mode, coup)
    name, stake = BET_NAMES[bet.bet_type], bet.stake_minor
    head = (coup.describe() if described is None else described) + _mode_note(bet)
    if res.outcome == "win":
        odds = rules.odds(res.line or "")
        pay = win(stake, odds)
        text = f"{head}: {res.reason} {odds} {returns_text(stake, pay.returned_minor)}"
        rem = pay.remainder
        return BetResult(bet.bet_id, bet.player_id, bet.bet_type, "win", stake, pay.returned_minor,
                         rem.numerator, rem.denominator, text)
    if res.outcome == "push":
        text = f"{head}: {name} pushes ({res.reason}); {format_minor(stake)} returned"
        return BetResult(bet.bet_id, bet.player_id, bet.bet_type, "push", stake, stake, 0, 1, text)
    text = f"{head}: {name} loses {format_minor(stake)} ({res.reason})"
    return BetResult(bet.bet_id, bet.player_id, bet.bet_type, "lose", stake, 0, 0, 1, text)


# ---------------------------------------------------------------- round model


def check_round_in_shoe(round_in_shoe: object, decks: int) -> int:
    """A shoe of `decks` decks holds at most decks*52/4 rounds of at least four cards."""
    most = decks * CARDS_PER_DECK // CARDS_PER_ROUND_MIN
    if type(round_in_shoe) is not int or not 1 <= round_in_shoe <= most:
        raise refuse(RefusalCode.BAD_ROUND_IN_SHOE, most=most, round_in_shoe=round_in_shoe)
    return round_in_shoe


def _what(bet: Bet) -> str:
    """How a refusal names a bet: built only when refusing (bets are checked on every place_bet)."""
    return f"bet {bet.bet_id} ({BET_NAMES[bet.bet_type]})"


@dataclass
class BaccaratRound(NoPlayerChoices):
    """One coup. Phases: betting -> dealing (burn first on a new shoe) -> complete."""

    GAME_TITLE = "baccarat"  # for the no-decision refusals (NoPlayerChoices)

    rules: BaccaratRules
    round_in_shoe: int
    phase: str = "betting"
    bets: list[Bet] = field(default_factory=list)
    burn: list[Card] = field(default_factory=list)
    burn_left: int | None = None  # None until the revealed burn card is seen
    player: list[Card] = field(default_factory=list)
    banker: list[Card] = field(default_factory=list)
    counter: CardCounter = field(init=False)  # set in __post_init__ from the rule set's decks

    def __post_init__(self) -> None:
        self.counter = CardCounter(self.rules.decks)
        if self.round_in_shoe != 1:
            self.burn_left = 0  # only a new shoe burns

    # -- bets

    def place_bet(self, bet: Bet) -> None:
        if not isinstance(bet, Bet):  # the message is built only when broken
            raise InvariantBroken(f"not a Bet: {type(bet).__name__}")
        resolved = self._check_bet(bet)
        self.bets.append(resolved)

    def _check_bet(self, bet: Bet) -> Bet:
        rules = self.rules
        check_table_bet(rules, self.phase, self.bets, bet, spot=SPOT, bet_types=BET_TYPES,
                        game_name="baccarat", bets_per_round_max=rules.bets_per_round_max)
        rules.limit_for(bet.bet_type)  # refuses a type this version has no limit for
        last = rules.max_round(bet.bet_type)
        if last is not None and self.round_in_shoe > last:
            raise refuse(
                RefusalCode.BET_NOT_OFFERED, "after-round", bet_name=BET_NAMES[bet.bet_type], last_round=last,
                round_in_shoe=self.round_in_shoe)
        mode = self._mode(bet)
        check_stake_minor(bet.stake_minor, bet.bet_id)
        self._check_limits(bet)
        return Bet(bet.bet_id, bet.player_id, bet.spot, bet.bet_type, bet.stake_minor, mode, bet.seat_no)

    def _mode(self, bet: Bet) -> str | None:
        if bet.mode is not None and bet.mode not in MODES:
            raise refuse(RefusalCode.BAD_MODE, bet_id=bet.bet_id, modes=', '.join(MODES), mode=bet.mode)
        if bet.bet_type != "banker":
            return bet.mode  # the toggle only changes the Banker payout; kept for the record
        mode = bet.mode or self.rules.banker_mode_default
        if mode is None:
            raise refuse(RefusalCode.MODE_REQUIRED, bet_id=bet.bet_id, modes=' or '.join(MODES))
        return mode

    def _stakes(self, player_id: str, bet_type: str) -> int:
        return sum(b.stake_minor for b in self.bets if b.player_id == player_id and b.bet_type == bet_type)

    def _check_limits(self, bet: Bet) -> None:
        rules = self.rules
        limit = rules.limit_for(bet.bet_type)
        if bet.stake_minor < limit.min_minor:
            rules.check_stake(bet.bet_type, bet.stake_minor, _what(bet))  # raises stake_below_minimum
        total = self._stakes(bet.player_id, bet.bet_type) + bet.stake_minor
        if bet.bet_type in MAIN_BETS and rules.main_limit_on_difference:
            other = "banker" if bet.bet_type == "player" else "player"
            diff = total - self._stakes(bet.player_id, other)
            if diff > limit.max_minor:
                raise refuse(
                    RefusalCode.DIFFERENCE_ABOVE_MAXIMUM, what=_what(bet), side=BET_NAMES[bet.bet_type],
                    other=BET_NAMES[other], difference=format_minor(diff), maximum=format_minor(limit.max_minor))
            return
        if total > limit.max_minor:
            raise refuse(
                RefusalCode.STAKE_ABOVE_MAXIMUM, "total", what=_what(bet), bet_name=BET_NAMES[bet.bet_type],
                total=format_minor(total), maximum=format_minor(limit.max_minor))

    def close_betting(self) -> None:
        if self.phase != "betting":
            raise refuse(RefusalCode.BETTING_CLOSED, "close")
        self.phase = "dealing"

    # -- cards

    def next_card_target(self) -> str | None:
        if self.phase != "dealing":
            return None
        if self.burn_left is None or self.burn_left > 0:
            return "burn"
        p, b = self.player, self.banker
        if len(p) < 2 or len(b) < 2:
            return "player" if len(p) == len(b) else "banker"
        if is_natural(hand_total(p[:2])) or is_natural(hand_total(b[:2])):
            return None
        if len(p) == 2 and len(b) == 2 and player_draws(hand_total(p), self.rules):
            return "player"
        if len(b) == 2:
            third = point_value(p[2]) if len(p) == 3 else None
            if banker_draws(hand_total(b), third, self.rules):
                return "banker"
        return None

    def deal(self, card: Card, target: str) -> None:
        if not isinstance(card, Card):  # the message is built only when broken
            raise InvariantBroken(f"not a Card: {type(card).__name__}")
        expected = self.next_card_target()
        if expected is None:
            state = "betting is still open" if self.phase == "betting" else "the coup is complete"
            raise refuse(RefusalCode.CARD_NOT_EXPECTED, "table-game", card=card, card_name=card.name, state=state)
        if target != expected:
            raise refuse(
                RefusalCode.WRONG_TARGET, "baccarat", card=card, card_name=card.name, target=target, expected=expected)
        self.counter.take(card)  # impossible_card (checked before it is counted)
        if expected == "burn":
            self._burn(card)
        else:
            (self.player if expected == "player" else self.banker).append(card)

    def _burn(self, card: Card) -> None:
        self.burn.append(card)
        if self.burn_left is None:
            self.burn_left = burn_value(card) if self.rules.burned_cards_reported else 0
        else:
            self.burn_left -= 1

    # -- end

    def is_complete(self) -> bool:
        return self.phase == "dealing" and len(self.player) >= 2 and self.next_card_target() is None

    def coup(self) -> Coup:
        if not self.is_complete():
            raise refuse(RefusalCode.ROUND_NOT_COMPLETE, "coup")
        return coup_of(self.player, self.banker, self.rules)

    def settle(self) -> list[BetResult]:
        coup = self.coup()
        described = coup.describe()
        return [settle_bet(self.rules, bet, coup, described) for bet in self.bets]

    def outcome(self) -> RoundOutcome:
        """Both hands, the winner and what the side bets read (pairs, naturals, a Banker 6)."""
        coup = self.coup()
        player = _side_outcome("player", self.player, coup.player_natural, coup.winner)
        banker = _side_outcome("banker", self.banker, coup.banker_natural, coup.winner)
        categories = [(name, value) for name, value, flag in (
            ("player_pair", "pair", coup.player_pair), ("banker_pair", "pair", coup.banker_pair),
            ("perfect_pair", "perfect_pair", coup.perfect_pair),
        ) if flag]
        if coup.winner == "banker" and coup.banker_total == LUCKY_TOTAL:
            categories.append(("lucky_six", f"{coup.banker_cards}_cards"))
        margin = abs(coup.player_total - coup.banker_total)
        notes = ((f"won by {margin} point(s)",) if margin else ()) + (
            (f"new shoe: burned {' '.join(str(c) for c in self.burn)}",) if self.burn else ())
        return RoundOutcome(game=GAME, hands=(player, banker), summary=coup.describe(), winner=coup.winner,
                            categories=tuple(categories), notes=notes)

    def view(self) -> dict[str, Any]:
        done = self.is_complete()
        return {
            "game": GAME,
            "rule_set": self.rules.id,
            "version": self.rules.version,
            "round_in_shoe": self.round_in_shoe,
            "phase": "complete" if done else self.phase,
            "burn": [str(c) for c in self.burn],
            "player": {"cards": [str(c) for c in self.player], "total": hand_total(self.player)},
            "banker": {"cards": [str(c) for c in self.banker], "total": hand_total(self.banker)},
            "next_card": self.next_card_target(),
            "bets": [
                {"bet_id": b.bet_id, "player_id": b.player_id, "bet_type": b.bet_type,
                 "stake_minor": b.stake_minor, "mode": b.mode}
                for b in self.bets
            ],
            "result": self.coup().describe() if done else None,
        }


def _side_outcome(side: str, cards: list[Card], natural: bool, winner: str) -> HandOutcome:
    total = hand_total(cards)
    result = "tie" if winner == "tie" else ("win" if winner == side else "lose")
    name = f"Natural {total}" if natural else f"{total} on {len(cards)} cards"
    return HandOutcome(hand=side, cards=tuple(str(c) for c in cards), total=total,
                       category="natural" if natural else None, name=name, result=result)


def new_round(rules: BaccaratRules, *, round_in_shoe: int) -> BaccaratRound:
    require(isinstance(rules, BaccaratRules), f"not baccarat rules: {type(rules).__name__}")
    return BaccaratRound(rules, check_round_in_shoe(round_in_shoe, rules.decks))
