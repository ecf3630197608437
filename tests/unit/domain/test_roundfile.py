"""Round files (domain/roundfile.py): a rule set id or version that is missing or of the wrong type
is refused as unknown, with the registry's own message."""
from __future__ import annotations

import pytest

from domain.errors import Refusal
from domain.roundfile import play


@pytest.mark.parametrize("head,named", [
    ({}, "no rule set None version None; known: "),
    ({"ruleset_id": "baccarat/live-8d", "ruleset_version": "1"}, "no rule set 'baccarat/live-8d' version 1; known: "),
    ({"ruleset_id": 7, "ruleset_version": 1}, "no rule set 7 version 1; known: "),
    ({"ruleset_id": "baccarat/live-8d", "ruleset_version": 99}, "no rule set 'baccarat/live-8d' version 99; known: "),
])
def test_an_unknown_or_mistyped_rule_set_is_refused(head: dict[str, object], named: str) -> None:
    with pytest.raises(Refusal) as err:
        play({**head, "bets": [], "steps": []})
    assert err.value.code == "unknown_rule_set" and err.value.message.startswith(named)
    assert "baccarat/live-8d v1" in err.value.message  # the known ones are listed


def test_a_known_rule_set_plays() -> None:
    played = play({"ruleset_id": "baccarat/live-8d", "ruleset_version": 1, "bets": [], "steps": []})
    assert (played.ruleset_id, played.ruleset_version, played.refusal) == ("baccarat/live-8d", 1, None)
