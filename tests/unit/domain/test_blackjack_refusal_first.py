"""The blackjack model changes its state in place (no copy per call): every Refusal
must come from the checks before the change. A Refusal raised from inside a change
would leave a half-changed model, so `_apply` turns it into InvariantBroken."""
import pytest

from domain.blackjack import LIVE_8D_V1, new_round
from domain.errors import InvariantBroken, Refusal
from domain.model import Bet


def test_a_refusal_inside_a_change_is_a_broken_invariant() -> None:
    model = new_round(LIVE_8D_V1, round_in_shoe=1)

    def half_change(state):
        state.phase = "changed"
        raise Refusal("late_refusal", "refused after changing the state")

    with pytest.raises(InvariantBroken, match="late_refusal"):
        model._apply(half_change)


def test_a_refused_bet_leaves_the_live_state_object_untouched() -> None:
    model = new_round(LIVE_8D_V1, round_in_shoe=1)
    model.place_bet(Bet("b1", "p1", "seat:1", "main", 1000))
    state, before = model._s, model.view()
    with pytest.raises(Refusal):
        model.place_bet(Bet("b2", "p2", "seat:1", "main", 1000))  # seat taken
    assert model._s is state and model.view() == before
