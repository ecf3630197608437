"""`postings_delta`'s shortcut for two legs gives what the general sum gives, or fails alike."""
from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from domain.errors import InvariantBroken
from ledger.records import Posting
from projections.folding import postings_delta

ACCOUNTS = st.sampled_from(["player:p1", "player:p2", "round:r1", "house:t1"])
AMOUNTS = st.one_of(st.integers(-(2**70), 2**70), st.integers(-3, 3), st.booleans())


def general_delta(postings: tuple[Posting, ...]) -> dict[str, int]:
    """The sum per account, as for any number of legs."""
    delta: dict[str, int] = {}
    for account, amount_minor in postings:
        delta[account] = delta.get(account, 0) + amount_minor
    total = sum(delta.values())
    if total != 0 or type(total) is not int:
        raise InvariantBroken("postings do not sum to zero")
    return delta


def outcome(fn: Any, postings: tuple[Posting, ...]) -> Any:
    try:
        return list(fn(postings).items())  # insertion order too
    except InvariantBroken:
        return "broken"


@given(st.lists(st.tuples(ACCOUNTS, AMOUNTS), min_size=0, max_size=4), st.booleans())
def test_two_legs_sum_as_any_number_of_legs(legs: list[tuple[str, Any]], balanced: bool) -> None:
    if balanced and len(legs) == 2:  # most drawn pairs do not cancel: make half of them a transfer
        legs[1] = (legs[1][0], -legs[0][1])
    postings = tuple(Posting(a, m) for a, m in legs)
    assert outcome(postings_delta, postings) == outcome(general_delta, postings)
