"""The fair-share rule of `ledger consume --lease` (ops/jetstream/leased.py `plan`), on lease
table snapshots: who takes which free slots, who hands one back, and that no slot stays unheld."""
from __future__ import annotations

import random

from ledger.leases import Lease
from ops.jetstream.leased import HOST_LEASE, SLOT_LEASE, SLOTS, plan, targets


def table(held: dict[str, list[int]], live_hosts: list[str], dead: dict[str, list[int]] | None = None) -> list[Lease]:
    rows = [Lease(f"{HOST_LEASE}{h}", h, 1, True) for h in live_hosts]
    rows += [Lease(f"{SLOT_LEASE}{s}", h, 1, True) for h, slots in held.items() for s in slots]
    rows += [Lease(f"{SLOT_LEASE}{s}", h, 1, False) for h, slots in (dead or {}).items() for s in slots]
    return rows


def test_the_shares_add_up_to_the_slots_and_differ_by_one_at_most() -> None:
    for n in range(1, 10):
        share = targets([f"h{i}" for i in range(n)])
        assert sum(share.values()) == SLOTS and max(share.values()) - min(share.values()) <= 1
    assert targets(["b", "a", "c"]) == {"a": 22, "b": 21, "c": 21}


def test_a_new_host_takes_nothing_until_one_is_handed_back_by_the_biggest_first() -> None:
    held = {"a": list(range(22)), "b": list(range(22, 43)), "c": list(range(43, 64))}
    rows = table(held, ["a", "b", "c", "d"])
    newcomer = plan("d", [], rows, random.Random(1))
    assert newcomer.take == [] and newcomer.give is None and newcomer.target == 16
    for h in "abc":  # every host above its share hands back ONE slot this round, no more
        p = plan(h, held[h], rows, random.Random(1))
        assert p.give in held[h] and p.take == []


def test_a_handed_back_slot_goes_to_the_host_below_its_share_and_no_more_are_handed_meanwhile() -> None:
    held = {"a": list(range(21)), "b": list(range(22, 43)), "c": list(range(43, 64))}  # slot 21 free
    rows = table(held, ["a", "b", "c", "d"])
    assert plan("d", [], rows, random.Random(1)).take == [21]
    assert plan("a", held["a"], rows, random.Random(1)).take == []  # above its share: leaves it to d
    # one free slot, d is short of 16: the others still hand back one each (free < deficit)
    assert plan("b", held["b"], rows, random.Random(1)).give is not None
    balanced = {"a": list(range(16)), "b": list(range(16, 32)), "c": list(range(32, 48)), "d": list(range(48, 64))}
    rows = table(balanced, ["a", "b", "c", "d"])
    assert all(plan(h, balanced[h], rows, random.Random(1)).give is None for h in "abcd")


def test_a_dead_hosts_slots_are_shared_by_the_survivors() -> None:
    held = {"a": list(range(22)), "b": list(range(22, 43))}
    rows = table(held, ["a", "b"], dead={"c": list(range(43, 64))})
    ta, tb = plan("a", held["a"], rows, random.Random(1)).take, plan("b", held["b"], rows, random.Random(2)).take
    assert len(ta) == 10 and len(tb) == 11  # up to 32 each
    assert set(ta) | set(tb) <= set(range(43, 64))


def test_a_host_short_of_its_share_takes_the_free_slot_and_one_at_its_share_leaves_it() -> None:
    held = {"a": list(range(32)), "b": list(range(32, 63))}  # slot 63 free, b one short
    rows = table(held, ["a", "b"])
    assert plan("b", held["b"], rows, random.Random(1)).take == [63]
    assert plan("a", held["a"], rows, random.Random(1)).take == []
