"""Exact money: integer minor units, odds as fractions, round down, keep the remainder.

No floats anywhere near money. An `Odds` of `3:2` means a winning stake
returns the stake plus 3/2 of it. A payout is rounded **down** to the minor
unit and the cut-off part is kept as an exact fraction of one minor unit.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import NamedTuple

from domain.errors import InvariantBroken, refuse, require
from domain.refusals import RefusalCode

# Below PostgreSQL BIGINT (2**63 - 1) with room for sums of many stakes and
# the largest odds (1000:1): a stake at the max times 1001 stays below BIGINT.
AMOUNT_MAX_MINOR = 10**15
CURRENCY_CODE_LEN = 3


def check_amount(amount_minor: object, what: str) -> int:
    """Refuse anything that is not a positive integer below AMOUNT_MAX_MINOR."""
    if type(amount_minor) is not int:  # bool is an int subclass: refuse it too
        raise refuse(RefusalCode.BAD_AMOUNT, "not-int", what=what, amount_minor=amount_minor)
    if amount_minor <= 0:
        raise refuse(RefusalCode.BAD_AMOUNT, what=what, amount_minor=amount_minor)
    if amount_minor > AMOUNT_MAX_MINOR:
        raise refuse(
            RefusalCode.BAD_AMOUNT, "too-large", what=what, amount_minor=amount_minor, maximum=AMOUNT_MAX_MINOR)
    return amount_minor


def check_stake_minor(amount_minor: object, bet_id: str) -> int:
    """`check_amount` of a bet's stake, named "bet <id> stake": once per bet, so the
    name is built only when refusing."""
    if type(amount_minor) is int and 0 < amount_minor <= AMOUNT_MAX_MINOR:
        return amount_minor
    return check_amount(amount_minor, f"bet {bet_id} stake")


def check_currency(code: object) -> str:
    if not (isinstance(code, str) and len(code) == CURRENCY_CODE_LEN and code.isalpha() and code.isupper()):
        raise refuse(RefusalCode.BAD_CURRENCY, currency=code)
    return code


@dataclass(frozen=True, slots=True)
class Odds:
    """Winnings per unit staked, exact: `Odds.parse("3:2")` == 3/2, `"0.95:1"` == 19/20."""

    ratio: Fraction

    @staticmethod
    def parse(text: str) -> Odds:
        left, sep, right = text.partition(":")
        require(sep == ":", f"odds must look like 'X:Y', got {text!r}")
        # Fraction parses '0.95' exactly from the decimal string (never via float).
        ratio = Fraction(left.strip()) / Fraction(right.strip())
        require(ratio >= 0, f"odds must be non-negative: {text!r}")
        return Odds(ratio)

    def __str__(self) -> str:
        return f"{self.ratio.numerator}:{self.ratio.denominator}"


@dataclass(frozen=True, slots=True)
class Payout:
    """What a winning stake returns: stake back + winnings rounded down, and what rounding kept."""

    stake_minor: int
    winnings_minor: int
    remainder: Fraction  # 0 <= remainder < 1 minor unit, cut off by rounding down

    @property
    def returned_minor(self) -> int:
        return self.stake_minor + self.winnings_minor


ZERO = Fraction(0)  # the remainder of most payouts: one shared (immutable) value


def win(stake_minor: int, odds: Odds) -> Payout:
    """Pay `stake_minor` at `odds`, rounding the winnings down to the minor unit.

    In integers: stake x numerator divided by the denominator, with its remainder; the
    same winnings and remainder as `stake_minor * odds.ratio` taken apart in Fractions
    (tests/unit/domain/test_money_integer.py), without three Fraction operations per bet."""
    if type(stake_minor) is not int or stake_minor < 0:  # checked per bet: the message only when broken
        raise InvariantBroken(f"bad stake {stake_minor!r}")
    ratio = odds.ratio
    denominator = ratio.denominator  # > 0 (Fraction): divmod's remainder is in [0, denominator)
    winnings, cut = divmod(stake_minor * ratio.numerator, denominator)
    return Payout(stake_minor, winnings, ZERO if cut == 0 else Fraction(cut, denominator))


def fraction_parts(f: Fraction) -> tuple[int, int]:
    """A fraction as plain (numerator, denominator) for events and JSON."""
    return f.numerator, f.denominator


# Decimals a fraction of a minor unit may add: 1/20 of a cent (0.95:1 odds) needs 2,
# 1/8 needs 3; a fraction no power of ten makes whole (1/3) is rounded there, marked "≈".
FRACTION_DIGITS_MAX = 6


def format_minor(amount_minor: int | Fraction, currency: str | None = None, exponent: int = 2) -> str:
    """`123456` -> `1,234.56` (display only; never parse this back).

    A Fraction of minor units (rounding kept by payouts, `Fraction(13, 2)`) is shown
    with as many more decimals as it needs, `0.065`, so text shows money in the
    currency's decimal form and never `13/2` of a minor unit; past
    FRACTION_DIGITS_MAX more decimals it is rounded half-even and marked `≈`."""
    if type(amount_minor) is not int:  # a settlement's text formats ints several times a bet: no ABC check for them
        if isinstance(amount_minor, Fraction) and amount_minor.denominator != 1:
            for extra in range(1, FRACTION_DIGITS_MAX + 1):
                scaled = amount_minor * 10**extra
                if scaled.denominator == 1:
                    return format_minor(scaled.numerator, currency, exponent + extra)
            return "≈" + format_minor(round(amount_minor * 10**FRACTION_DIGITS_MAX), currency,
                                      exponent + FRACTION_DIGITS_MAX)
        amount_minor = int(amount_minor)
    sign = "-" if amount_minor < 0 else ""
    units, cents = divmod(abs(amount_minor), 10**exponent)
    text = f"{sign}{units:,}" + (f".{cents:0{exponent}d}" if exponent else "")
    return f"{text} {currency}" if currency else text


class Leg(NamedTuple):  # two per transfer: a tuple, several times cheaper to make than a frozen dataclass
    """One side of a double-entry posting: `amount_minor` > 0 increases the account."""

    account: str
    amount_minor: int

    def as_dict(self) -> dict[str, object]:
        return {"account": self.account, "amount_minor": self.amount_minor}


def transfer(from_account: str, to_account: str, amount_minor: int) -> tuple[Leg, Leg]:
    """Move money between two accounts: two legs that sum to zero."""
    if type(amount_minor) is not int or amount_minor < 0:  # checked per leg: the message only when broken
        raise InvariantBroken(f"bad transfer amount {amount_minor!r}")
    return Leg(from_account, -amount_minor), Leg(to_account, amount_minor)


def check_balanced(legs: list[Leg] | tuple[Leg, ...]) -> None:
    """Invariant: the legs of one event sum to zero."""
    total = sum(leg.amount_minor for leg in legs)
    if total != 0:  # the message reprs every leg: build it only when it is raised
        raise InvariantBroken(f"postings do not sum to zero (sum {total}): {legs}")


def player_account(player_id: str) -> str:
    return f"player:{player_id}"


def round_account(round_id: str) -> str:
    return f"round:{round_id}"


def house_account(table_id: str) -> str:
    return f"house:{table_id}"


# ------------------------------------------------------------ what a paying line returns
#
# Every settlement explanation's arrow has one meaning, labelled: what goes back to the
# player, stake included, and how it is made up. In the earlier wording the arrow meant the total
# return in blackjack ("win 1:1 → 50.00 on 25.00") and the winnings alone in baccarat and
# Teen Patti ("pays 19:20 → 9.50 on 10.00"); stored settlements keep that earlier wording,
# which `earlier_wording` rebuilds so a replay accepts it as the same explanation.


def returns_text(stake_minor: int, returned_minor: int, kind: str = "win") -> str:
    """`→ returns 50.00 (stake 25.00 + winnings 25.00)` (a win, even with winnings rounded to
    0.00); kind "push": `→ returns 5.00 (stake back)`; "surrender": `→ returns 5.00 (half the stake 10.00)`."""
    back = format_minor(returned_minor)
    if kind == "push":
        return f"→ returns {back} (stake back)"
    if kind == "surrender":
        return f"→ returns {back} (half the stake {format_minor(stake_minor)})"
    return f"→ returns {back} (stake {format_minor(stake_minor)} + winnings {format_minor(returned_minor - stake_minor)})"


_AMOUNT = r"(-?[\d,]+\.\d+)"
_RETURNS_WIN = re.compile(rf"→ returns {_AMOUNT} \(stake {_AMOUNT} \+ winnings {_AMOUNT}\)")
_RETURNS_BACK = re.compile(rf"→ returns {_AMOUNT} \(stake back\)")
_RETURNS_PART = re.compile(rf"→ returns {_AMOUNT} \(half the stake {_AMOUNT}\)")


def earlier_wording(explanation: str, game: str) -> str:
    """The explanation as settlements recorded it in the earlier wording (see above): in
    blackjack `→ RETURNED on STAKE` and `push → STAKE back`, elsewhere `→ WINNINGS on STAKE`."""
    if game == "blackjack":
        text = _RETURNS_WIN.sub(r"→ \1 on \2", explanation)
        text = _RETURNS_BACK.sub(r"→ \1 back", text)
    else:
        text = _RETURNS_WIN.sub(r"→ \3 on \2", explanation)
    return _RETURNS_PART.sub(r"→ \1 on \2", text)
