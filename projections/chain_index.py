"""The audit chain kept in the store: each position's seq and link hash, and the chain's
head with the peaks of its Merkle tree (projections/audit.py), extended from where it
stopped.

A round's proof (each of its events' place and hash in the chain, the head, the tree
root) otherwise reads and hashes every event from genesis: minutes at a million events.
Kept here, it costs one pass once, then only the events recorded since, and a proof is
a few indexed reads. Links are derived data, like the views: the same events always
give the same rows (a second writer at the same time writes the same values), and
`proof` gives what projections/document.py `proof` computes from the whole store.
"""
from __future__ import annotations

import json
from typing import Any

from ledger.eventlog import EventLog
from projections.audit import GENESIS_HEX, Link, TreeBuilder, chain, path_ranges, peak_ranges
from projections.sql import Db, Table

CHAIN = Table("proj_chain", key=("position",),
              columns=(("position", "int"), ("seq", "int"), ("hash", "text"), ("prev", "text")),
              indexes=(("seq",),))
# The roots of the tree's perfect subtrees of NODE_MIN leaves or more ([lo, hi) of leaf
# indexes, leaf i = link seq i + 1): with them a subtree root anywhere in the tree costs
# O(log n) reads and at most NODE_MIN leaves, not a pass over the chain.
NODES = Table("proj_chain_nodes", key=("lo", "hi"), columns=(("lo", "int"), ("hi", "int"), ("hash", "text")))
NODE_MIN = 256
CHAIN_HEAD = Table("proj_chain_head", key=("id",),
                   columns=(("id", "int"), ("position", "int"), ("seq", "int"), ("hash", "text"), ("peaks", "text")))
PAGE_LINKS = 5000
_HEAD_ID = 1


class ChainMismatch(ValueError):
    """The chain kept in the store disagrees with the store or with its own head: a finding
    for whoever asked (refuse the bundle, show the page), never a proof."""


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
    db.create(NODES)
    with db.exclusive("chain"):
        position, seq, last_hash, peaks = _head(db)
        _complete_nodes(db, seq, peaks)
        tree = TreeBuilder(start_peaks=peaks, start_size=seq)
        rows: list[tuple[int, int, str, str]] = []
        for link in chain(log.stored(position + 1, page_size=PAGE_LINKS), prev_hex=last_hash, seq_start=seq + 1):
            _add(tree, link.hash)
            rows.append((link.position, link.seq, link.hash, link.prev))
            if len(rows) == PAGE_LINKS:
                _write(db, rows, tree)
                rows = []
        if rows:
            _write(db, rows, tree)
        return tree.size


def _add(tree: TreeBuilder, link_hash: str) -> None:
    """Add a leaf, keeping (in `tree.nodes`) the perfect subtrees of NODE_MIN leaves or more it closes."""
    hi = tree.size + 1
    tree.wanted = {(hi - (1 << bit), hi) for bit in range(NODE_MIN.bit_length() - 1, hi.bit_length())
                   if hi % (1 << bit) == 0}
    tree.add(link_hash)


def _write(db: Db, rows: list[tuple[int, int, str, str]], tree: TreeBuilder) -> None:
    position, seq, link_hash, _ = rows[-1]
    nodes = [(lo, hi, digest.hex()) for (lo, hi), digest in tree.nodes.items()]
    tree.nodes.clear()
    with db.transaction():
        db.upsert_many(CHAIN, rows)
        if nodes:
            db.upsert_many(NODES, nodes)
        db.upsert_many(CHAIN_HEAD, [(_HEAD_ID, position, seq, link_hash, json.dumps(tree.peak_hexes()))])


def _node_count(size: int) -> int:
    return sum(size >> bit for bit in range(NODE_MIN.bit_length() - 1, size.bit_length()))


def _complete_nodes(db: Db, size: int, peaks: list[str]) -> None:
    """Make the subtree roots again from the links kept when they are not all there (a chain
    kept before they were): a read of the kept link hashes, no event is read or hashed."""
    if db.query(f"SELECT COUNT(*) FROM {NODES.name}")[0][0] == _node_count(size):
        return
    tree, after = TreeBuilder(), 0
    while True:
        page = db.query(f"SELECT position, hash FROM {CHAIN.name} WHERE position > ? AND seq <= ? "
                        f"ORDER BY position LIMIT {PAGE_LINKS}", (after, size))
        for _, link_hash in page:
            _add(tree, str(link_hash))
        if len(page) < PAGE_LINKS:
            break
        after = int(page[-1][0])
    if tree.size != size or tree.peak_hexes() != peaks:
        raise ChainMismatch(f"the chain kept does not match its head (seq {size}): drop {CHAIN.name}, "
                         f"{CHAIN_HEAD.name} and {NODES.name} to hash it again")
    with db.transaction():
        db.execute(f"DELETE FROM {NODES.name}")
        db.upsert_many(NODES, [(lo, hi, digest.hex()) for (lo, hi), digest in tree.nodes.items()])


def proof(db: Db, positions: set[int]) -> dict[str, Any]:
    """As projections/document.py `proof`, from the links kept (call `extend` first)."""
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


def checked_proof(log: EventLog, positions: set[int]) -> dict[str, Any]:
    """`proof` from the chain kept in the store (extended first, on a connection of its own),
    each of the given events read again and its hash checked against its link kept, so a
    store changed under the chain kept raises ChainMismatch rather than quoting old hashes.
    What the replay page and `ledger replay --proof` show: no pass over the whole chain."""
    db = Db.for_store(log.backend)
    try:
        extend(log, db)
        found = proof(db, positions)
        for position, link in found["events"].items():
            _link(log, link["seq"], position, link["hash"], link["prev"])
        return found
    finally:
        db.close()


def prove(log: EventLog, db: Db, positions: set[int], size: int) -> tuple[list[Link], dict[str, str], Link | None]:
    """As ops/bundle/build.py's pass over the chain, from the links kept (call `extend` first;
    `size` at most the head kept): the links at `positions` (their records read from the
    store, their hashes recomputed and checked against the ones kept), the sibling roots that
    prove them and the link at seq `size` in the tree of `size` leaves (as `"lo-hi": hex`),
    and the link at seq `size` (None when the chain kept is shorter)."""
    kept = {seq: (position, link_hash, prev) for position, seq, link_hash, prev in _rows(db, "position", positions)}
    head_row = {seq: (position, link_hash, prev) for position, seq, link_hash, prev in _rows(db, "seq", {size})}
    if size not in head_row:
        return [], {}, None
    links = [_link(log, seq, *kept[seq]) for seq in sorted(s for s in kept if s <= size)]
    head = _link(log, size, *head_row[size])
    wanted = sorted({r for link in [*links, head] for r in path_ranges(link.seq - 1, size)})
    return links, _Roots(db, wanted).hexes(), head


def _rows(db: Db, column: str, values: set[int]) -> list[tuple[int, int, str, str]]:
    out: list[tuple[int, int, str, str]] = []
    wanted = sorted(values)
    for start in range(0, len(wanted), 500):
        part = wanted[start:start + 500]
        out += [(int(p), int(s), str(h), str(v)) for p, s, h, v in db.query(
            f"SELECT position, seq, hash, prev FROM {CHAIN.name} WHERE {column} IN ({', '.join('?' * len(part))})",
            part)]
    return out


def _link(log: EventLog, seq: int, position: int, link_hash: str, prev: str) -> Link:
    """The link kept at `position`, its record read from the store and its hash checked."""
    found = log.notifications(position, 1)
    if not found or found[0].id != position:
        raise ChainMismatch(f"the chain kept has position {position}, the store has no event there")
    event, fields = log.decode_stored(found[0])
    link = next(chain([(event, fields)], prev_hex=prev, seq_start=seq))
    if link.hash != link_hash:
        raise ChainMismatch(f"the event at position {position} hashes to {link.hash}, the chain kept says "
                         f"{link_hash}: the store changed under the chain kept")
    return link


class _Roots:
    """Subtree roots of the tree of kept link hashes: perfect ones of NODE_MIN leaves or more
    read from NODES, smaller ones hashed from the links kept, the others folded from those."""

    def __init__(self, db: Db, ranges: list[tuple[int, int]]) -> None:
        self.db, self.ranges = db, ranges
        self.perfect = {p for lo, hi in ranges for p in _pieces(lo, hi)}

    def hexes(self) -> dict[str, str]:
        roots = self._stored() | self._hashed()
        out: dict[str, str] = {}
        for lo, hi in self.ranges:
            pieces = [roots[p] for p in _pieces(lo, hi)]
            builder = TreeBuilder(start_peaks=pieces, start_size=hi - lo)
            out[f"{lo}-{hi}"] = builder.root()
        return out

    def _stored(self) -> dict[tuple[int, int], str]:
        big = sorted(p for p in self.perfect if p[1] - p[0] >= NODE_MIN)
        found: dict[tuple[int, int], str] = {}
        los = sorted({lo for lo, _ in big})
        for start in range(0, len(los), 500):
            part = los[start:start + 500]
            for lo, hi, digest in self.db.query(
                    f"SELECT lo, hi, hash FROM {NODES.name} WHERE lo IN ({', '.join('?' * len(part))})", part):
                found[(int(lo), int(hi))] = str(digest)
        missing = [p for p in big if p not in found]
        if missing:
            raise ChainMismatch(f"the chain kept has no subtree root for leaves {missing[0]}: call extend first")
        return {p: found[p] for p in big}

    def _hashed(self) -> dict[tuple[int, int], str]:
        small = sorted(p for p in self.perfect if p[1] - p[0] < NODE_MIN)
        out: dict[tuple[int, int], str] = {}
        for block in sorted({lo // NODE_MIN * NODE_MIN for lo, _ in small}):
            leaves = [str(h) for (h,) in self.db.query(
                f"SELECT hash FROM {CHAIN.name} WHERE seq > ? AND seq <= ? ORDER BY seq", (block, block + NODE_MIN))]
            for lo, hi in (p for p in small if p[0] // NODE_MIN * NODE_MIN == block):
                if hi - block > len(leaves):
                    raise ChainMismatch(f"the chain kept lacks links in seq {lo + 1}..{hi}")
                tree = TreeBuilder()
                for link_hash in leaves[lo - block:hi - block]:
                    tree.add(link_hash)
                out[(lo, hi)] = tree.root()
        return out


def _pieces(lo: int, hi: int) -> list[tuple[int, int]]:
    """The perfect subtrees [lo, hi) is made of (lo a multiple of the largest: an audit path's range)."""
    return [(lo + a, lo + b) for a, b in peak_ranges(hi - lo)]
