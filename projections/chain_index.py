"""The audit chain kept in the store: each position's seq and link hash, and the chain's
head with the peaks of its Merkle tree (projections/audit.py), extended from where it
stopped.

A round's proof (each of its events' place and hash in the chain, the head, the tree
root) otherwise reads and hashes every event from genesis: minutes at a million events.
Kept here, it costs one pass once, then only the events recorded since, and a proof is
a few indexed reads. Links are derived data, like the views: the same events always
give the same rows (a second writer at the same time writes the same values), and
`proof` gives what projections/replay_view.py `proof` computes from the whole store.
"""
from __future__ import annotations

import json
from typing import Any

from ledger.eventlog import EventLog
from projections.audit import GENESIS_HEX, TreeBuilder, chain
from projections.sql import Db, Table

CHAIN = Table("proj_chain", key=("position",),
              columns=(("position", "int"), ("seq", "int"), ("hash", "text"), ("prev", "text")))
CHAIN_HEAD = Table("proj_chain_head", key=("id",),
                   columns=(("id", "int"), ("position", "int"), ("seq", "int"), ("hash", "text"), ("peaks", "text")))
PAGE_LINKS = 5000
_HEAD_ID = 1


def _head(db: Db) -> tuple[int, int, str, list[str]]:
    """(position, seq, hash, tree peaks) of the last link kept (genesis: nothing kept)."""
    found = db.query(f"SELECT position, seq, hash, peaks FROM {CHAIN_HEAD.name} WHERE id = ?", (_HEAD_ID,))
    if not found:
        return 0, 0, GENESIS_HEX, []
    position, seq, hash_hex, peaks = found[0]
    return int(position), int(seq), str(hash_hex), list(json.loads(peaks))


def extend(log: EventLog, db: Db) -> int:
    """Hash the events recorded since the last link kept; the seq of the head after."""
    db.create(CHAIN)
    db.create(CHAIN_HEAD)
    with db.exclusive("chain"):
        position, seq, last_hash, peaks = _head(db)
        tree = TreeBuilder(start_peaks=peaks, start_size=seq)
        rows: list[tuple[int, int, str, str]] = []
        for link in chain(log.stored(position + 1, page_size=PAGE_LINKS), prev_hex=last_hash, seq_start=seq + 1):
            tree.add(link.hash)
            rows.append((link.position, link.seq, link.hash, link.prev))
            if len(rows) == PAGE_LINKS:
                _write(db, rows, tree)
                rows = []
        if rows:
            _write(db, rows, tree)
        return tree.size


def _write(db: Db, rows: list[tuple[int, int, str, str]], tree: TreeBuilder) -> None:
    position, seq, link_hash, _ = rows[-1]
    with db.transaction():
        db.upsert_many(CHAIN, rows)
        db.upsert_many(CHAIN_HEAD, [(_HEAD_ID, position, seq, link_hash, json.dumps(tree.peak_hexes()))])


def proof(db: Db, positions: set[int]) -> dict[str, Any]:
    """As projections/replay_view.py `proof`, from the links kept (call `extend` first)."""
    wanted = sorted(positions)
    events: dict[int, dict[str, Any]] = {}
    for start in range(0, len(wanted), 500):
        part = wanted[start:start + 500]
        for position, seq, link_hash, prev in db.query(
                f"SELECT position, seq, hash, prev FROM {CHAIN.name} WHERE position IN ({', '.join('?' * len(part))})",
                part):
            events[int(position)] = {"seq": int(seq), "hash": link_hash, "prev": prev}
    head_position, head_seq, head_hash, peaks = _head(db)
    if not head_seq:
        return {"events": events, "head_position": None, "head_seq": None, "head_hash": None, "tree_root": None}
    return {"events": events, "head_position": head_position, "head_seq": head_seq, "head_hash": head_hash,
            "tree_root": TreeBuilder(start_peaks=peaks, start_size=head_seq).root()}
