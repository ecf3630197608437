"""Turn a feed (JSON lines) into round files (the `ledger settle` format).

Used by the settlement benchmark and by tests that check the simulator, the
round-file player and the ledger agree. Only rounds without pauses, voids
or reversals are kept: a round file holds facts, not interruptions.
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

INTERRUPTIONS = {"pause", "resume", "void", "reverse_settlement"}


def round_files(lines: Iterable[bytes]) -> list[dict[str, Any]]:
    rounds: dict[tuple[str, int], dict[str, Any]] = {}
    spoiled: set[tuple[str, int]] = set()
    seen: set[str] = set()
    for line in lines:
        cmd = json.loads(line)
        if cmd["command_id"] in seen:  # a duplicate delivery adds no fact
            continue
        seen.add(cmd["command_id"])
        key = (cmd["table_id"], cmd["round_no"])
        kind = cmd["type"]
        if kind in INTERRUPTIONS or (kind != "open_round" and key not in rounds):
            spoiled.add(key)
            continue
        if kind == "open_round":
            rounds[key] = {"ruleset_id": cmd["ruleset_id"], "ruleset_version": cmd["ruleset_version"],
                           "round_in_shoe": None, "shoe_id": cmd["shoe_id"], "bets": [], "steps": []}
        elif kind == "place_bet":
            bet = {k: cmd[k] for k in ("bet_id", "player_id", "spot", "bet_type", "stake_minor")}
            bet.update({k: cmd[k] for k in ("mode", "seat_no") if cmd.get(k) is not None})
            rounds[key]["bets"].append(bet)
        elif kind == "deal_card":
            rounds[key]["steps"].append({"card": cmd["card"], "to": cmd["target"]})
        elif kind == "decide":
            step = {"decide": cmd["action"], "hand": cmd["hand"], "source": cmd["source"]}
            if cmd.get("amount_minor") is not None:
                step["amount_minor"] = cmd["amount_minor"]
            rounds[key]["steps"].append(step)
        elif kind == "follow":
            rounds[key]["steps"].append({"follow": cmd["bet_id"], "kind": cmd["kind"], "accept": cmd["accept"]})
    _number_rounds_in_shoe(rounds)
    return [r for k, r in rounds.items() if k not in spoiled]


def _number_rounds_in_shoe(rounds: dict[tuple[str, int], dict[str, Any]]) -> None:
    """Round n of a shoe = how many rounds of that table's shoe opened so far."""
    counts: dict[tuple[str, str], int] = {}
    for (table, _), data in sorted(rounds.items(), key=lambda kv: kv[0]):
        shoe = (table, data.pop("shoe_id"))
        counts[shoe] = counts.get(shoe, 0) + 1
        data["round_in_shoe"] = counts[shoe]
