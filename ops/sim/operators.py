"""A simulated studio dealing to several operators (`ledger simulate --operators N`).

The feed starts with one `configure_operator` per operator (OP1..OPn), then is the studio's
own feed (ops/sim/simulator.py) with every bet, and every decision or pause that names a
player, naming that player's operator. Which operator a player bets through is a seeded
function of (table, player): the same simulated player id plays for different operators at
different tables, so the operators' player ids overlap (two operators' `p0007` are two
people), while one player's bets in one round are always one operator's. Deterministic: the
same arguments give the same bytes.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator

from ops.sim.core import CURRENCY, encode, studio_time

OPERATORS_MAX = 64
NAMED_PLAYER = frozenset({"place_bet", "decide", "pause"})  # the commands whose player has an operator


def operator_ids(count: int) -> list[str]:
    if not 1 <= count <= OPERATORS_MAX:
        raise ValueError(f"operators must be 1..{OPERATORS_MAX}, got {count}")
    return [f"OP{i}" for i in range(1, count + 1)]


def configure_lines(count: int) -> list[bytes]:
    """One configure_operator per operator, at the studio's epoch (before any round)."""
    zones = ("Europe/Madrid", "Europe/London", "Europe/Malta", "Asia/Kolkata", "UTC")
    return [encode({"type": "configure_operator", "command_id": f"cfg-{op}", "operator_id": op,
                    "studio_time": studio_time(0), "name": f"Simulated casino {op}", "currencies": [CURRENCY],
                    "timezone": zones[i % len(zones)], "jurisdictions": ["ES"] if i % 2 == 0 else ["MT"]})
            for i, op in enumerate(operator_ids(count))]


def operator_for(seed: int, table_id: str, player_id: str, operators: list[str]) -> str:
    """The operator a player bets through at a table (seeded, stable across runs and processes)."""
    digest = hashlib.blake2b(f"{seed}/{table_id}/{player_id}".encode(), digest_size=8).digest()
    return operators[int.from_bytes(digest, "big") % len(operators)]


def with_operators(lines: Iterable[bytes], count: int, seed: int) -> Iterator[bytes]:
    """The feed `lines` for `count` operators: their configurations first, then every line,
    a player's commands naming the player's operator (lines that are not such commands,
    faults included, pass unchanged)."""
    operators = operator_ids(count)
    yield from configure_lines(count)
    for line in lines:
        if b'"player_id"' not in line:
            yield line
            continue
        try:
            data = json.loads(line)
        except ValueError:  # a fault injected on purpose: as it was
            yield line
            continue
        player, table = data.get("player_id"), data.get("table_id")
        if (isinstance(data, dict) and data.get("type") in NAMED_PLAYER and isinstance(player, str)
                and isinstance(table, str)):
            data["operator_id"] = operator_for(seed, table, player, operators)
            yield encode(data)
        else:
            yield line
