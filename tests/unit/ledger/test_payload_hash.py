"""The command index keeps a payload hash per command id; a retry is a duplicate only if
it hashes the same. The hash is stored, so its form is fixed: sha256 of the command's
canonical JSON as pydantic's `model_dump_json` writes it (fields in declaration order,
defaults included), whatever the key order on the wire; a field added since hashes were
stored (`operator_id`) is left out when absent, so old commands hash as they did."""
from __future__ import annotations

import hashlib
import json

from ledger.commands import parse_command
from ledger.intake import ADDED_FIELDS, payload_hash
from ops.sim.simulator import simulate


def test_the_hash_is_sha256_of_the_canonical_json_for_every_kind_of_command() -> None:
    kinds: set[type] = set()
    for line in simulate(4, 6, seed=11, fault_rate=50):
        cmd = parse_command(line)
        kinds.add(type(cmd))
        exclude = ADDED_FIELDS if getattr(cmd, "operator_id", "") is None else None
        assert payload_hash(cmd) == hashlib.sha256(cmd.model_dump_json(exclude=exclude).encode("utf-8")).hexdigest()
        assert b"operator_id" not in cmd.__pydantic_serializer__.to_json(cmd, exclude=exclude) or cmd.operator_id
    assert len(kinds) >= 6, kinds


def test_a_bet_without_operator_hashes_as_before_operators() -> None:
    """The hash a place_bet had before `operator_id` existed (pinned): a retry stays a duplicate."""
    line = (b'{"type":"place_bet","command_id":"c1","table_id":"T1","round_no":1,'
            b'"studio_time":"2024-05-01T12:00:00+00:00","bet_id":"b1","player_id":"p1","spot":"table",'
            b'"bet_type":"player","stake_minor":100}')
    before = (b'{"command_id":"c1","table_id":"T1","round_no":1,"studio_time":"2024-05-01T12:00:00Z",'
              b'"type":"place_bet","bet_id":"b1","player_id":"p1","spot":"table","bet_type":"player",'
              b'"stake_minor":100,"mode":null,"seat_no":null}')
    assert payload_hash(parse_command(line)) == hashlib.sha256(before).hexdigest()
    named = parse_command(line.replace(b"}", b',"operator_id":"OP2"}'))
    assert payload_hash(named) != payload_hash(parse_command(line))


def test_key_order_on_the_wire_does_not_change_the_hash() -> None:
    line = next(iter(simulate(1, 1, seed=1, fault_rate=0)))
    data = json.loads(line)
    reordered = json.dumps(dict(reversed(list(data.items())))).encode()
    assert payload_hash(parse_command(reordered)) == payload_hash(parse_command(line))
    assert payload_hash(parse_command(line)) != payload_hash(parse_command(json.dumps(dict(data, table_id="X")).encode()))
