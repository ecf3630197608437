"""`ledger replay ROUND --bundle FILE.zip`: a dispute bundle that verifies itself offline.

Members (README.txt says the same to whoever receives it):
  events.jsonl   the round's events as links of the audit chain, in the export's canonical
                 form (the lines of an audit export's events.jsonl, docs/audit.md);
  proof.json     what proves those links against the anchor without the rest of the store:
                 the Merkle tree's sibling roots (projections/audit.py) for each of the round's
                 links and for the anchor's head link, about log2(head seq) hashes each, so
                 the bundle's size depends on the round, not on the store;
  manifest.json  the anchor: the audit export manifest given with --manifest, copied byte
                 for byte (it publishes the tree_root), or else a statement of the store's
                 head and tree root when the bundle was made;
  replay.json    `ledger replay ROUND --json --proof` (projections/document.py);
  replay.html    the dispute page (projections/replay_page.py);
  verify.py      ops/bundle/verify.py: standard library only, checks all of it;
  SHA256SUMS     each member's SHA-256.
"""
from __future__ import annotations

import hashlib
import io
import json
import zipfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from domain.operators import EVERY_OPERATOR, OperatorScope
from ledger.eventlog import EventLog
from projections import chain_index
from projections.audit import FORMAT, Link, TreeBuilder, chain, path_ranges, root_from_path
from projections.redaction import LinkRedactor, redact_document
from projections.replay_page import render_html
from projections.sql import Db

VERIFIER = Path(__file__).with_name("verify.py")
README = """\
Dispute bundle of round {round} (id {round_id}), made {made_at}.

Check it offline with Python 3.9 or later (standard library only):

    python3 verify.py {name}

verify.py checks every member against SHA256SUMS, recomputes each of the round's events'
chain hash (events.jsonl) and proves it, with proof.json, to be the link of its seq in the
Merkle tree whose root manifest.json gives ({tree_root}, over the chain up to seq {head_seq},
head {head_hash}), checks the round's events are numbered 1..n, and recomputes the round's
money from the events: stakes put in, postings, each settlement line's staked and returned
amounts, refunds. Compare the tree root and head hash with the audit manifest the operator
published. Open replay.html in any browser (it needs no network) to step through the round.
"""


class BundleError(Exception):
    """The bundle cannot be made as asked (one line for the user)."""


def write_bundle(path: str | Path, log: EventLog, document: dict[str, Any],
                 manifest_path: str | Path | None = None, views: Db | None = None,
                 scope: OperatorScope = EVERY_OPERATOR) -> str:
    """Write the bundle of the round `document` describes (a whole-round replay
    document with its proof); return a one-line summary. With `views`, the proof is read
    from the audit chain kept there (projections/chain_index.py, extended here first): a
    few indexed reads whatever the store's size; without, one pass over the chain. For a
    scope of some operators, the other operators' events redacted (their hashes kept, so
    still proved) and the documents as the dispute page shows them (projections/redaction.py)."""
    if document.get("at") is not None:
        raise BundleError("a bundle holds the whole round: drop --at")
    seqs = sorted(p["seq"] for p in document["proof"]["events"].values())
    manifest_bytes, manifest = _anchor(document["proof"], manifest_path)
    size = manifest["last_seq"]
    if seqs[-1] > size:
        raise BundleError(f"the round has events after the manifest's head (seq {size}): "
                          "anchor it to a later export")
    positions = {int(p) for p in document["proof"]["events"]}
    links, nodes, head, root = _kept(log, views, positions, size) if views else _prove(log, set(seqs), size)
    if head is None or head.hash != manifest["head_hash"]:
        raise BundleError(f"the store's chain at seq {size} hashes to {head.hash if head else None}, not "
                          f"the manifest's head_hash {manifest['head_hash']}: the store or the manifest changed")
    if root != manifest["tree_root"]:
        raise BundleError(f"the store's tree over seq 1..{size} has root {root}, not the manifest's "
                          f"tree_root {manifest['tree_root']}: the store or the manifest changed")
    if not scope.everyone:
        shown = LinkRedactor(scope)
        links = [shown(link) for link in links]  # in round order: a bet's BetPlaced before what names it
        document = redact_document(document, scope)
    proof = {"tree": "RFC 9162 section 2.1 (SHA-256) over the audit chain's link hashes: leaf i = link seq i + 1",
             "size": size, "nodes": nodes}
    files = {
        "README.txt": README.format(round=document["round"], round_id=document["round_id"], name=Path(path).name,
                                    made_at=_now(), head_hash=manifest["head_hash"], tree_root=manifest["tree_root"],
                                    head_seq=size).encode(),
        "events.jsonl": _lines(links),
        "proof.json": (json.dumps(proof, indent=1, sort_keys=True) + "\n").encode(),
        "manifest.json": manifest_bytes,
        "replay.json": (json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode(),
        "replay.html": render_html(document).encode(),
        "verify.py": VERIFIER.read_bytes(),
    }
    files["SHA256SUMS"] = "".join(f"{hashlib.sha256(data).hexdigest()}  {name}\n"
                                  for name, data in files.items()).encode()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data, zipfile.ZIP_DEFLATED)
    Path(path).write_bytes(buffer.getvalue())
    return (f"{len(links)} events, proved with {len(proof['nodes'])} tree hashes against the tree root of head "
            f"seq {size}")


def _anchor(proof: dict[str, Any], manifest_path: str | Path | None) -> tuple[bytes, dict[str, Any]]:
    """The manifest given, or a statement of the head the replay's proof read."""
    if manifest_path is not None:
        try:
            data = Path(manifest_path).read_bytes()
            manifest = json.loads(data)
        except (OSError, ValueError) as exc:
            raise BundleError(f"manifest {manifest_path} unreadable: {exc}") from None
        if not (isinstance(manifest, dict) and isinstance(manifest.get("last_seq"), int)
                and isinstance(manifest.get("head_hash"), str)):
            raise BundleError(f"{manifest_path} is not an audit export manifest (last_seq, head_hash)")
        if not isinstance(manifest.get("tree_root"), str):
            raise BundleError(f"{manifest_path} has no tree_root (an export written before the chain's tree was "
                              "published): export again, or make the bundle without --manifest")
        return data, manifest
    manifest = {"format": FORMAT, "kind": "store head when the bundle was made (not a published export)",
                "last_seq": proof["head_seq"], "last_position": proof["head_position"],
                "head_hash": proof["head_hash"], "tree_root": proof["tree_root"], "made_at": _now()}
    return (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode(), manifest


def _kept(log: EventLog, views: Db, positions: set[int], size: int) -> tuple[list[Link], dict[str, str], Link | None,
                                                                            str | None]:
    """What `_prove` gives, from the chain kept in the views (the tree's root at `size`
    is proved by the head link's own path, as the verifier does)."""
    try:
        chain_index.extend(log, views)
        links, nodes, head = chain_index.prove(log, views, positions, size)
    except ValueError as exc:
        raise BundleError(str(exc)) from None
    root = root_from_path(head.seq - 1, size, head.hash, nodes) if head else None
    return links, nodes, head, root


def _prove(log: EventLog, seqs: set[int], size: int) -> tuple[list[Link], dict[str, str], Link | None, str | None]:
    """One pass over the chain from genesis to seq `size` (the hashes depend on all before): the
    round's links, the tree over every link with the sibling roots that prove the round's links
    and the head link kept, and the head link. Memory: the round's links and O(log size) hashes."""
    wanted = {r for seq in seqs | {size} for r in path_ranges(seq - 1, size)}
    tree, links, head = TreeBuilder(wanted), [], None
    for link in chain(log.stored(1, page_size=5000)):
        if link.seq > size:
            break
        tree.add(link.hash)
        if link.seq in seqs:
            links.append(link)
        head = link
    return links, tree.finish(), head, tree.root() if head else None


def _lines(links: Any) -> bytes:
    return "".join(link.line() + "\n" for link in links).encode()


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
