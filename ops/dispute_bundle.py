"""`ledger replay ROUND --bundle FILE.zip`: a dispute bundle that verifies itself offline.

Members (README.txt says the same to whoever receives it):
  events.jsonl   the round's events as links of the audit chain, in the export's canonical
                 form (the lines of an audit export's events.jsonl, docs/audit.md);
  chain.jsonl    the chain segment from the round's first event to the anchor: every link
                 in between, other rounds' included (each hash covers the one before it,
                 so the segment cannot skip them);
  manifest.json  the anchor: the audit export manifest given with --manifest, copied byte
                 for byte, or else a statement of the store's head when the bundle was made;
  replay.json    `ledger replay ROUND --json --proof` (projections/replay_view.py);
  replay.html    the dispute page (projections/replay_page.py);
  verify.py      ops/bundle_verify.py: standard library only, checks all of it;
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

from ledger.eventlog import EventLog
from projections.audit import FORMAT, Link, chain
from projections.replay_page import render_html

VERIFIER = Path(__file__).with_name("bundle_verify.py")
README = """\
Dispute bundle of round {round} (id {round_id}), made {made_at}.

Check it offline with Python 3.9 or later (standard library only):

    python3 verify.py {name}

verify.py checks every member against SHA256SUMS, recomputes the SHA-256 hash chain of
chain.jsonl up to manifest.json's head ({head_hash}, seq {head_seq}), matches the round's
events (events.jsonl) with that chain, and recomputes the round's money from the events:
stakes put in, postings, each settlement line's staked and returned amounts, refunds.
Compare the head hash with the audit manifest the operator published. Open replay.html in
any browser (it needs no network) to step through the round.
"""


class BundleError(Exception):
    """The bundle cannot be made as asked (one line for the user)."""


def write_bundle(path: str | Path, log: EventLog, document: dict[str, Any],
                 manifest_path: str | Path | None = None) -> str:
    """Write the bundle of the round `document` describes (a whole-round replay
    document with its proof); return a one-line summary."""
    if document.get("at") is not None:
        raise BundleError("a bundle holds the whole round: drop --at")
    seqs = sorted(p["seq"] for p in document["proof"]["events"].values())
    manifest_bytes, manifest = _anchor(document["proof"], manifest_path)
    if seqs[-1] > manifest["last_seq"]:
        raise BundleError(f"the round has events after the manifest's head (seq {manifest['last_seq']}): "
                          "anchor it to a later export")
    segment = _segment(log, seqs[0], manifest["last_seq"])
    if segment[-1].hash != manifest["head_hash"]:
        raise BundleError(f"the store's chain at seq {manifest['last_seq']} hashes to {segment[-1].hash}, not "
                          f"the manifest's head_hash {manifest['head_hash']}: the store or the manifest changed")
    wanted = set(seqs)
    files = {
        "README.txt": README.format(round=document["round"], round_id=document["round_id"], name=Path(path).name,
                                    made_at=_now(), head_hash=manifest["head_hash"],
                                    head_seq=manifest["last_seq"]).encode(),
        "events.jsonl": _lines(lk for lk in segment if lk.seq in wanted),
        "chain.jsonl": _lines(segment),
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
    return f"{len(wanted)} events, chain segment of {len(segment)} links to head seq {manifest['last_seq']}"


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
        return data, manifest
    manifest = {"format": FORMAT, "kind": "store head when the bundle was made (not a published export)",
                "last_seq": proof["head_seq"], "last_position": proof["head_position"],
                "head_hash": proof["head_hash"], "made_at": _now()}
    return (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode(), manifest


def _segment(log: EventLog, first_seq: int, last_seq: int) -> list[Link]:
    """Links first_seq..last_seq (the chain is computed from genesis: the hashes depend on all before)."""
    out = []
    for link in chain(log.stored(1, page_size=5000)):
        if link.seq > last_seq:
            break
        if link.seq >= first_seq:
            out.append(link)
    return out


def _lines(links: Any) -> bytes:
    return "".join(link.line() + "\n" for link in links).encode()


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
