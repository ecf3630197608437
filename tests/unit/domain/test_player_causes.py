"""Player-side causes: the only ones an error policy may answer with "complete" (it plays
one named player's hands), and every rule set's policy keeps to that."""
from __future__ import annotations

import pytest

from domain.errorpolicy import CAUSES, PLAYER_CAUSES, is_player_side, policy
from domain.errors import InvariantBroken
from domain.registry import all_rule_sets


@pytest.mark.parametrize("cause", [c for c in CAUSES if c not in PLAYER_CAUSES])
def test_only_a_player_side_cause_may_complete(cause: str) -> None:
    with pytest.raises(InvariantBroken):
        policy("test", default="pause", **{cause: "complete"})


@pytest.mark.parametrize("cause", PLAYER_CAUSES)
def test_a_player_side_cause_may_complete(cause: str) -> None:
    assert policy("test", default="pause", **{cause: "complete"}).action_for(cause) == "complete"
    assert is_player_side(cause)


def test_every_rule_set_completes_a_disconnect() -> None:
    """Seeds 000-004: a lost connection is never a void; the round goes on for the others."""
    for rules in all_rule_sets():
        assert rules.error_policy.action_for("player_connection_lost") == "complete", rules.id
