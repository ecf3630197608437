"""The command index keeps a payload hash per command id; a retry is a duplicate only if
it hashes the same. The hash is stored, so its form is fixed: sha256 of the command's
canonical JSON as pydantic's `model_dump_json` writes it (fields in declaration order,
defaults included), whatever the key order on the wire."""
from __future__ import annotations

import hashlib
import json

from ledger.commands import parse_command
from ledger.intake import payload_hash
from ops.sim.simulator import simulate


def test_the_hash_is_sha256_of_the_canonical_json_for_every_kind_of_command() -> None:
    kinds: set[type] = set()
    for line in simulate(4, 6, seed=11, fault_rate=50):
        cmd = parse_command(line)
        kinds.add(type(cmd))
        assert payload_hash(cmd) == hashlib.sha256(cmd.model_dump_json().encode("utf-8")).hexdigest()
    assert len(kinds) >= 6, kinds


def test_key_order_on_the_wire_does_not_change_the_hash() -> None:
    line = next(iter(simulate(1, 1, seed=1, fault_rate=0)))
    data = json.loads(line)
    reordered = json.dumps(dict(reversed(list(data.items())))).encode()
    assert payload_hash(parse_command(reordered)) == payload_hash(parse_command(line))
    assert payload_hash(parse_command(line)) != payload_hash(parse_command(json.dumps(dict(data, table_id="X")).encode()))
