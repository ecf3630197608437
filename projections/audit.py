"""The audit trail: every event in global order, canonical bytes, a SHA-256 chain.

Pure functions only (no I/O): `projections/audit_export.py` reads the store and
writes or reads the files. The exact form is specified for regulators in
docs/audit.md; change nothing here without changing `FORMAT` and that file.

Canonical record of one event (a JSON object, keys sorted, no whitespace,
UTF-8, strings escaped as JSON requires and nothing else, integers as JSON
numbers, no floats: RFC 8785 JCS restricted to integers within +-(2**53 - 1)):

    {"event": name, "fields": {...plain fields...}, "originator_id": uuid,
     "originator_version": int, "position": int, "seq": int, "timestamp": ISO-8601 UTC}

`seq` is the 1-based number of the event in the chain (dense, unlike
`position`, which may have gaps on PostgreSQL). The chain:

    hash_1 = SHA-256(GENESIS || canonical(record_1));  hash_n = SHA-256(hash_{n-1} || canonical(record_n))

with hashes as raw 32 bytes inside the hash input and as lower-case hex in files.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from domain.errors import require
from ledger.records import Record, event_name

FORMAT = "casino-ledger-audit/1"
GENESIS_HEX = "00" * 32
JSON_INT_MAX = 2**53 - 1  # exact in every JSON implementation (IEEE double)
NESTING_MAX = 32
LINE_BYTES_MAX = 1_000_000
ZERO = timedelta(0)


@dataclass(frozen=True, slots=True)
class Finding:
    """Something the verifier or the replay found wrong. `position` is the store's
    global position of the event concerned (None when it concerns a whole file)."""

    kind: str
    position: int | None
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "position": self.position, "message": self.message}

    def __str__(self) -> str:
        where = f"position {self.position}" if self.position is not None else "export"
        return f"{self.kind} at {where}: {self.message}"


def iso_utc(value: Any) -> str:
    """Server time as `YYYY-MM-DDTHH:MM:SS.ffffffZ` (UTC, always six fraction digits)."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value.replace("Z", "+00:00"))
    require(isinstance(value, datetime) and value.tzinfo is not None, f"timestamp must be aware: {value!r}")
    if value.utcoffset() != ZERO:
        value = value.astimezone(UTC)
    return f"{value.year:04d}-{value.month:02d}-{value.day:02d}T{value.hour:02d}:{value.minute:02d}:" \
           f"{value.second:02d}.{value.microsecond:06d}Z"


def check_plain(value: Any, where: str, depth: int = 0) -> None:
    """Only str, int (within +-2**53-1), bool, null, lists and string-keyed objects."""
    require(depth <= NESTING_MAX, f"{where}: nested deeper than {NESTING_MAX}")
    if value is None or isinstance(value, (str, bool)):
        return
    if isinstance(value, int):
        require(-JSON_INT_MAX <= value <= JSON_INT_MAX, f"{where}: integer {value} beyond +-2**53-1")
        return
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            check_plain(item, f"{where}[{i}]", depth + 1)
        return
    if isinstance(value, dict):
        for key, item in value.items():
            require(isinstance(key, str), f"{where}: object key {key!r} is not a string")
            check_plain(item, f"{where}.{key}", depth + 1)
        return
    require(False, f"{where}: {type(value).__name__} {value!r} is not a plain JSON value (no floats)")


def canonical_json(value: Any) -> str:
    """The canonical JSON text (caller checked the value is plain)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


Stored = tuple[Record, dict[str, Any]]  # a record beside its fields exactly as stored (`EventLog.stored`)


def canonical_record(event: Record, fields: dict[str, Any], seq: int) -> dict[str, Any]:
    """The record the chain hashes: the stored event name and its fields, exactly as stored."""
    return {
        "event": event_name(event),
        "fields": fields,
        "originator_id": event.originator_id,
        "originator_version": event.originator_version,
        "position": event.position,
        "seq": seq,
        "timestamp": iso_utc(event.timestamp),
    }


def record_bytes(record: dict[str, Any]) -> bytes:
    check_plain(record, f"event at position {record.get('position')}")
    return canonical_json(record).encode("utf-8")


def chain_hash(prev_hex: str, canonical: bytes) -> str:
    return hashlib.sha256(bytes.fromhex(prev_hex) + canonical).hexdigest()


@dataclass(frozen=True, slots=True)
class Link:
    """One line of events.jsonl: the record, the hash before it, its own hash."""

    record: dict[str, Any]
    prev: str
    hash: str

    @property
    def position(self) -> int:
        position: int = self.record["position"]
        return position

    @property
    def seq(self) -> int:
        seq: int = self.record["seq"]
        return seq

    def line(self) -> str:
        return canonical_json({"hash": self.hash, "prev": self.prev, "record": self.record})


def chain(events: Iterable[Stored], prev_hex: str = GENESIS_HEX, seq_start: int = 1) -> Iterator[Link]:
    """Hash events (in global order) into links, continuing from `prev_hex`."""
    seq = seq_start
    last_position = None
    for event, fields in events:
        require(last_position is None or event.position > last_position,
                f"events out of order: {event.position} after {last_position}")
        record = canonical_record(event, fields, seq)
        link_hash = chain_hash(prev_hex, record_bytes(record))
        yield Link(record, prev_hex, link_hash)
        prev_hex, seq, last_position = link_hash, seq + 1, event.position


def parse_line(text: str) -> Link:
    """One events.jsonl line; raises ValueError when it is not a link at all."""
    obj = json.loads(text)
    if not (isinstance(obj, dict) and set(obj) == {"hash", "prev", "record"}):
        raise ValueError("a line must be an object with exactly hash, prev, record")
    record = obj["record"]
    if not (isinstance(record, dict) and isinstance(record.get("position"), int)
            and isinstance(record.get("seq"), int)):
        raise ValueError("record must carry integer position and seq")
    for key in ("hash", "prev"):
        value = obj[key]
        if not (isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)):
            raise ValueError(f"{key} must be 64 lower-case hex digits")
    return Link(record, obj["prev"], obj["hash"])


REDACTED = "redacted"  # a record's key no stored event has: its fields as a key of some operators sees them


def is_redacted(link: Link) -> bool:
    """A line of an export redacted for a key of some operators (projections/redaction.py): its
    hash is the event's, its record no longer what was hashed; the chain still links through it."""
    return link.record.get(REDACTED) is True


def self_consistent(link: Link) -> bool:
    """The line's hash is SHA-256(its prev || canonical bytes of its record)."""
    try:
        return chain_hash(link.prev, record_bytes(link.record)) == link.hash
    except Exception:  # a record that is not even plain JSON cannot match
        return False


# --------------------------------------------------------------------------- verify: files alone


def verify_links(links: Sequence[Link], chain_start: str, first_seq: int) -> list[Finding]:
    """Check a chain segment (lines in file order) and name every broken event by position.

    Kinds: `reordered` (lines out of seq order), `inserted` (a line that is not
    part of the chain: duplicate seq or its successor links past it),
    `deleted` (seq numbers missing), `edited` (a line whose hash does not match
    its content, or whose successor names a different hash for it).
    """
    findings = _reorder_findings(links)
    by_seq: dict[int, list[Link]] = {}
    for link in links:
        by_seq.setdefault(link.seq, []).append(link)
    seqs = sorted(by_seq)
    last_hash, expected_seq, last_link = chain_start, first_seq, None
    for i, seq in enumerate(seqs):
        next_prevs = {c.prev for c in by_seq[seqs[i + 1]]} if i + 1 < len(seqs) else None
        link, extra = _pick(by_seq[seq], last_hash, next_prevs)
        findings += [Finding("inserted", x.position, f"line with seq {x.seq} is not part of the chain "
                             "(another line holds this seq and links correctly)") for x in extra]
        if seq > expected_seq:
            after = f"after position {last_link.position} " if last_link else ""
            findings.append(Finding("deleted", link.position,
                                    f"{seq - expected_seq} event(s) (seq {expected_seq}..{seq - 1}) missing "
                                    f"{after}before position {link.position}"))
        if not is_redacted(link) and not self_consistent(link):
            findings.append(Finding("edited", link.position, "content does not match its hash"))
        elif link.prev != last_hash and seq == expected_seq:
            where = last_link.position if last_link else None
            what = f"position {where}" if where is not None else "the event before this export"
            findings.append(Finding("edited", where, f"{what} was changed and re-hashed: the next event "
                                    f"(position {link.position}) names a different hash for it"))
        last_hash, expected_seq, last_link = link.hash, seq + 1, link
    return _dedupe(findings)


def _pick(candidates: list[Link], last_hash: str, next_prevs: set[str] | None) -> tuple[Link, list[Link]]:
    """Among lines sharing one seq, the one that belongs to the chain, and the intruders."""
    if len(candidates) == 1:
        return candidates[0], []

    def score(link: Link) -> tuple[bool, bool, bool]:
        return (next_prevs is not None and link.hash in next_prevs, link.prev == last_hash, self_consistent(link))

    best = max(candidates, key=score)
    return best, [c for c in candidates if c is not best]


def _reorder_findings(links: Sequence[Link]) -> list[Finding]:
    findings = []
    for before, after in zip(links, links[1:]):
        if after.seq < before.seq:
            findings.append(Finding("reordered", after.position,
                                    f"line for position {after.position} (seq {after.seq}) comes after "
                                    f"position {before.position} (seq {before.seq})"))
    seq_sorted = sorted(links, key=lambda lk: lk.seq)
    for before, after in zip(seq_sorted, seq_sorted[1:]):
        if after.seq > before.seq and after.position <= before.position:
            findings.append(Finding("reordered", after.position,
                                    f"position {after.position} has seq {after.seq} but follows position "
                                    f"{before.position} (seq {before.seq})"))
    return findings


def _dedupe(findings: list[Finding]) -> list[Finding]:
    seen, out = set(), []
    for f in findings:
        key = (f.kind, f.position)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


# --------------------------------------------------------------------------- verify: against the store


def compare_with_store(links: Sequence[Link], store_links: Sequence[Link]) -> list[Finding]:
    """Compare exported lines with the store's events over the same position range, by position.

    `store_links` are freshly chained from the live store (over the export's
    position range, the seq/prev continuing from the store's own history).
    """
    if not links:
        return []
    lo = min(lk.position for lk in links)
    hi = max(lk.position for lk in links)
    exported = {lk.position: _content(lk.record) for lk in links}
    stored = {lk.position: _content(lk.record) for lk in store_links if lo <= lk.position <= hi}
    findings: list[Finding] = []
    changed = sorted(p for p in exported.keys() & stored.keys() if exported[p] != stored[p])
    swapped = _swaps(changed, exported, stored)
    for p, q in swapped:
        findings.append(Finding("reordered", p, f"the store holds at position {p} the event exported at "
                                f"position {q}, and vice versa"))
    in_swaps = {p for pair in swapped for p in pair}
    for p in changed:
        if p not in in_swaps:
            findings.append(Finding("edited", p, f"the store's event differs from the export: {_diff(exported[p], stored[p])}"))
    for p in sorted(exported.keys() - stored.keys()):
        findings.append(Finding("deleted", p, "exported event is missing from the store"))
    for p in sorted(stored.keys() - exported.keys()):
        findings.append(Finding("inserted", p, "the store holds an event here that the export does not"))
    first_store = next((lk for lk in store_links if lk.position == lo), None)
    first_export = min(links, key=lambda lk: lk.position)
    if first_store is not None and first_store.prev != first_export.prev and not findings:
        findings.append(Finding("edited", None, f"events before position {lo} in the store no longer hash to "
                                "this export's chain start: verify the earlier export against the store"))
    return findings


def _content(record: dict[str, Any]) -> str:
    """A record without its chain-dependent `seq`, canonical."""
    return canonical_json({k: v for k, v in record.items() if k != "seq"})


def _swaps(changed: list[int], exported: dict[int, str], stored: dict[int, str]) -> list[tuple[int, int]]:
    def body(content: str) -> str:  # the event without its own position
        obj = json.loads(content)
        obj.pop("position", None)
        return canonical_json(obj)

    exp_body = {p: body(exported[p]) for p in changed}
    sto_body = {p: body(stored[p]) for p in changed}
    pairs, used = [], set()
    for p in changed:
        for q in changed:
            if q > p and p not in used and q not in used and exp_body[p] == sto_body[q] and exp_body[q] == sto_body[p]:
                pairs.append((p, q))
                used |= {p, q}
    return pairs


def _diff(exported: str, stored: str) -> str:
    a, b = json.loads(exported), json.loads(stored)
    keys = []
    for key in sorted(set(a) | set(b)):
        if key == "fields":
            fa, fb = a.get("fields", {}), b.get("fields", {})
            keys += [f"fields.{k}" for k in sorted(set(fa) | set(fb)) if fa.get(k) != fb.get(k)]
        elif a.get(key) != b.get(key):
            keys.append(key)
    return "changed " + ", ".join(keys) if keys else "changed"


# --------------------------------------------------------------------------- the chain's Merkle tree
#
# A hash chain proves an event only to someone who rehashes every later link up to a
# published head, so a proof of one round grew with the store. Beside the chain (which
# is unchanged) every export publishes the root of a Merkle tree over the chain's link
# hashes (RFC 9162 section 2.1, SHA-256): leaf i (0-based) is link seq i + 1,
#     leaf = SHA-256(0x00 || hash_seq as 32 bytes),   node = SHA-256(0x01 || left || right),
# and a tree of n leaves splits at the largest power of two below n. One leaf is proved
# against a root by about log2(n) sibling hashes (`path_ranges`), whatever n is.


def tree_leaf(link_hash_hex: str) -> bytes:
    return hashlib.sha256(b"\x00" + bytes.fromhex(link_hash_hex)).digest()


def tree_node(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def path_ranges(index: int, size: int) -> list[tuple[int, int]]:
    """The leaf ranges [lo, hi) whose subtree roots prove leaf `index` in a tree of `size`
    leaves: its siblings from the bottom up (RFC 9162's audit path, as ranges)."""
    require(0 <= index < size, f"leaf {index} is not in a tree of {size}")
    out: list[tuple[int, int]] = []
    lo, hi = 0, size
    while hi - lo > 1:
        k = 1 << ((hi - lo - 1).bit_length() - 1)  # the largest power of two below hi - lo
        if index < lo + k:
            out.append((lo + k, hi))
            hi = lo + k
        else:
            out.append((lo, lo + k))
            lo = lo + k
    out.reverse()
    return out


def peak_ranges(size: int) -> list[tuple[int, int]]:
    """The perfect subtrees a tree of `size` leaves is made of, largest (leftmost) first."""
    out, lo = [], 0
    for bit in range(size.bit_length() - 1, -1, -1):
        if size >> bit & 1:
            out.append((lo, lo + (1 << bit)))
            lo += 1 << bit
    return out


class TreeBuilder:
    """The tree's root over leaves added in order, in memory of O(log n) hashes: the
    roots of its perfect subtrees (`peaks`). Subtree roots named in `wanted` (ranges
    [lo, hi)) are kept in `nodes` as they are made; `finish` adds the wanted ranges
    that end at the last leaf but are not perfect (folds of the last peaks)."""

    def __init__(self, wanted: Iterable[tuple[int, int]] = (), start_peaks: Sequence[str] = (),
                 start_size: int = 0) -> None:
        ranges = peak_ranges(start_size)
        require(len(ranges) == len(start_peaks), f"{len(start_peaks)} peaks given for a tree of {start_size}")
        self.peaks: list[tuple[int, int, bytes]] = [(lo, hi, bytes.fromhex(h))
                                                    for (lo, hi), h in zip(ranges, start_peaks)]
        self.size = start_size
        self.wanted = set(wanted)
        self.nodes: dict[tuple[int, int], bytes] = {}

    def add(self, link_hash_hex: str) -> None:
        lo, hi, digest = self.size, self.size + 1, tree_leaf(link_hash_hex)
        self.size += 1
        if (lo, hi) in self.wanted:
            self.nodes[(lo, hi)] = digest
        while self.peaks and self.peaks[-1][1] - self.peaks[-1][0] == hi - lo:
            left = self.peaks.pop()
            lo, digest = left[0], tree_node(left[2], digest)
            if (lo, hi) in self.wanted:
                self.nodes[(lo, hi)] = digest
        self.peaks.append((lo, hi, digest))

    def peak_hexes(self) -> list[str]:
        return [p[2].hex() for p in self.peaks]

    def root(self, lo: int = 0) -> str:
        """The root of the leaves [lo, size) when lo starts a peak (0: the whole tree)."""
        tail = [p for p in self.peaks if p[0] >= lo]
        require(bool(tail) and tail[0][0] == lo, f"no subtree of the tree of {self.size} starts at {lo}")
        digest = tail[-1][2]
        for p in reversed(tail[:-1]):
            digest = tree_node(p[2], digest)
        return digest.hex()

    def finish(self) -> dict[str, str]:
        """Every wanted subtree root as `"lo-hi": hex` (the form a bundle's proof.json holds)."""
        for lo, hi in self.wanted - self.nodes.keys():
            if hi == self.size:
                self.nodes[(lo, hi)] = bytes.fromhex(self.root(lo))
        return {f"{lo}-{hi}": digest.hex() for (lo, hi), digest in sorted(self.nodes.items())}


def root_from_path(index: int, size: int, link_hash_hex: str, nodes: dict[str, str]) -> str | None:
    """The root that leaf `index` (holding link hash `link_hash_hex`) and the sibling roots
    in `nodes` give; None when a sibling is missing."""
    digest = tree_leaf(link_hash_hex)
    for lo, hi in path_ranges(index, size):
        sibling = nodes.get(f"{lo}-{hi}")
        if sibling is None:
            return None
        digest = tree_node(bytes.fromhex(sibling), digest) if hi <= index else tree_node(digest, bytes.fromhex(sibling))
    return digest.hex()
