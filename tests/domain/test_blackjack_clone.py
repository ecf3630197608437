"""Hand.clone copies every field (in the right place) and shares no mutable list."""
from dataclasses import fields

from domain.blackjack_round import Hand, Stake
from domain.cards import parse_card


def test_hand_clone_copies_every_field_and_owns_its_lists() -> None:
    # A distinct value per field, so a clone that swaps two fields fails.
    values = {f.name: f"value-of-{f.name}" for f in fields(Hand)}
    values["cards"] = [parse_card("AS"), parse_card("9H")]
    values["stakes"] = [Stake("b1", "p1", 500, "main")]
    hand = Hand(**values)
    twin = hand.clone()
    for f in fields(Hand):
        assert getattr(twin, f.name) == values[f.name], f.name
    assert twin.cards is not hand.cards and twin.stakes is not hand.stakes
    twin.cards.append(parse_card("2C"))
    assert len(hand.cards) == 2
