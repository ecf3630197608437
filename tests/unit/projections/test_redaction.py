"""What a key of some operators sees of refused commands and of the audit trail's lines
(projections/redaction.py), table-driven: the operator a refused payload is about, and each
kind of line redacted or not."""
from __future__ import annotations

import json
from typing import Any

import pytest

from domain.operators import OperatorScope
from projections.audit import Link, is_redacted
from projections.redaction import LinkRedactor, command_operator, redact_text, shows_rejection

OP2 = OperatorScope.of("OP2")


@pytest.mark.parametrize(("payload", "operator"), [
    ({"type": "place_bet", "player_id": "p1", "operator_id": "OP2"}, "OP2"),
    ({"type": "place_bet", "player_id": "p1"}, "default"),  # no operator named: the default operator's
    ({"type": "decide", "player_id": "p1", "operator_id": "OP1"}, "OP1"),
    ({"type": "decide", "bet_id": "b1"}, None),  # a decision naming no player: the studio's
    ({"type": "configure_operator", "operator_id": "OP2"}, "OP2"),
    ({"type": "deal_card", "table_id": "t"}, None),
    ("not json {", None),
    ([1, 2], None),
])
def test_the_operator_a_refused_command_names(payload: Any, operator: str | None) -> None:
    text = payload if isinstance(payload, str) else json.dumps(payload)
    assert command_operator(text) == operator
    assert shows_rejection(text, OP2) == (operator == "OP2")
    assert shows_rejection(text, OperatorScope())  # every operator's scope: every refusal


def test_a_refusal_of_ones_own_bet_names_no_other_operators_player() -> None:
    message = "bet b7: seat-3 is taken by player OP1~p0003; OP2~p0003 may bet behind"  # seat_taken's kind
    assert redact_text(message, OP2) == "bet b7: seat-3 is taken by player (another operator's); OP2~p0003 may bet behind"
    assert redact_text(message, OperatorScope()) == message


def link(position: int, event: str, **fields: Any) -> Link:
    record = {"event": f"Round.{event}", "fields": fields, "originator_id": "r1", "originator_version": position,
              "position": position, "seq": position, "timestamp": "t"}
    return Link(record, "0" * 64, f"{position:064x}")


def test_audit_lines_as_an_operator_sees_them() -> None:
    shown = LinkRedactor(OP2)
    mine = shown(link(1, "BetPlaced", bet_id="b2", player_id="OP2~p1", stake_minor=500))
    theirs = shown(link(2, "BetPlaced", bet_id="b1", player_id="OP1~p1", stake_minor=4983))
    follow = shown(link(3, "FollowDecided", bet_id="b1", postings=[{"account": "round:r1", "amount_minor": 4983}]))
    settled = shown(link(4, "Settled", results=[{"bet_id": "b1", "player_id": "OP1~p1", "returned_minor": 0},
                                                {"bet_id": "b2", "player_id": "OP2~p1", "returned_minor": 1000}],
                         postings=[{"account": "house:t", "amount_minor": 4983},
                                   {"account": "house:t", "amount_minor": -500},
                                   {"account": "player:OP2~p1", "amount_minor": 1000}]))
    card = shown(link(5, "CardDealt", card="AS", target="player"))
    assert not is_redacted(mine) and not is_redacted(card) and mine.record["fields"]["stake_minor"] == 500
    assert is_redacted(theirs) and theirs.record["fields"] == {} and theirs.hash == f"{2:064x}"
    assert is_redacted(follow) and follow.record["fields"] == {}  # its bet is known from its BetPlaced
    assert settled.record["fields"] == {
        "results": [{"bet_id": "b2", "player_id": "OP2~p1", "returned_minor": 1000}],
        "postings": [{"account": "house:t", "amount_minor": 4483},  # the house's legs summed: no bet's amount
                     {"account": "player:OP2~p1", "amount_minor": 1000}]}
    assert "4983" not in json.dumps([theirs.record, follow.record, settled.record])
    assert LinkRedactor(OperatorScope())(theirs) is theirs


def test_a_redacted_line_is_proved_by_its_links_only() -> None:
    """The chain verifies through a redacted line (its content is not what was hashed); a
    changed hash on one still breaks the link to the next line."""
    from projections.audit import GENESIS_HEX, Stored, chain, verify_links
    from tests.unit.projections.test_audit_chain import stored

    events: list[Stored] = [stored(i, "Round.BetPlaced", "r1", i, "2024-05-01T12:00:00Z",
                                   {"bet_id": f"b{i}", "player_id": f"OP{i % 2 + 1}~p1", "stake_minor": 100 * i})
                            for i in range(1, 5)]
    links = [LinkRedactor(OP2)(lk) for lk in chain(events)]
    assert [is_redacted(lk) for lk in links] == [False, True, False, True]
    assert verify_links(links, GENESIS_HEX, 1) == []
    links[1] = Link(links[1].record, links[1].prev, "f" * 64)
    assert [f.kind for f in verify_links(links, GENESIS_HEX, 1)] == ["edited"]
