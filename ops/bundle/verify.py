#!/usr/bin/env python3
"""verify.py: check a casino-ledger dispute bundle offline (Python 3.9+, standard library only).

    python3 verify.py dispute.zip          # or the directory the zip was unpacked into
    python3 verify.py dispute.zip --json   # the findings and the recomputed amounts as JSON

What it checks, naming the file, line and event position of anything wrong:
  1. every member of the zip reads back intact (CRC) and hashes to its line in SHA256SUMS;
  2. each line of events.jsonl is a link of the audit chain: its hash is SHA-256(prev || canonical
     record) (the casino-ledger-audit/1 form of docs/audit.md), and proof.json's sibling roots make
     that hash the leaf of its seq in the Merkle tree (RFC 9162, leaf i = link seq i + 1) whose root
     is manifest.json's tree_root; the manifest's head_hash is that tree's last leaf (seq last_seq);
     consecutive seqs link (prev = the hash before);
  3. events.jsonl holds the round's events numbered 1..n, each once, as replay.json lists them;
  4. the money, recomputed from the events alone: what each bet put in (stakes, doubles, splits,
     follows), each event's postings summing to zero, each settlement line staking what its bet
     put in, the settlement's postings (round -> player the amount returned, round <-> house
     staked - returned), the refunds of a void (everything put in), a reversal negating its
     settlement; and replay.json and the page's embedded data showing those very amounts.
A bundle made for one operator (`ledger replay --bundle --operator ID`) holds the other
operators' events redacted (`"redacted": true` in the record, their players' fields removed, the
round's and house's legs summed): such a line's hash is proved as in 2 (it is the chain's link of
its seq) but not recomputed from its content, and its money is checked only for the operator's
own bets (4: what they put in, their settlement lines and refunds); the report counts them.
It does NOT re-deal the game: whether the rules give these payouts is recomputed by
`ledger replay` with the project's rules engine (replay.json records that comparison).
The anchor: compare the printed tree root and head hash with the tree_root and head_hash of the
audit manifest the operator published; if they are equal, every event of the round is the one
that was recorded in the chain at its seq. What it cannot show: that the round has no event after
its last one here (a later reversal); `ledger replay` on the store, or an audit export, shows it.

Exit status: 0 the bundle verifies; 1 findings (printed); 2 the bundle cannot be read.
"""
from __future__ import annotations

import hashlib
import json
import re
import sys
import zipfile
import zlib
from pathlib import Path
from typing import Any

GENESIS = "00" * 32
SUMS = "SHA256SUMS"
FILES = ("README.txt", "events.jsonl", "proof.json", "manifest.json", "replay.json", "replay.html", "verify.py")
EMBEDDED = re.compile(r'<script type="application/json" id="replay-data">(.*?)</script>', re.S)


class Bundle:
    """The members' bytes (None for one that does not read back) and the findings so far."""

    def __init__(self, files: dict[Any, Any], findings: list[Any]) -> None:
        self.files = files
        self.findings = findings

    def find(self, kind: str, where: str, message: str, position: object = None) -> None:
        self.findings.append({"kind": kind, "file": where, "position": position, "message": message})

    def text(self, name: str) -> str | None:
        data = self.files.get(name)
        if data is None:
            return None
        try:
            text: str = data.decode("utf-8")
            return text
        except UnicodeDecodeError as exc:
            self.find("unreadable", name, f"not UTF-8 at byte {exc.start}")
            return None


def load(path: Path) -> Bundle:
    findings: list[Any] = []
    files: dict[Any, Any] = {}
    if path.is_dir():
        for p in sorted(path.iterdir()):
            files[p.name] = p.read_bytes()
        return Bundle(files, findings)
    with zipfile.ZipFile(path) as zf:
        for info in zf.infolist():
            try:
                files[info.filename] = zf.read(info)
            except (zipfile.BadZipFile, OSError, ValueError, zlib.error, EOFError) as exc:  # a changed byte: CRC or inflate fails
                files[info.filename] = None
                findings.append({"kind": "corrupt", "file": info.filename, "position": None,
                                 "message": f"the member does not read back intact: {exc}"})
    return Bundle(files, findings)


def check_sums(b: Bundle) -> None:
    text = b.text(SUMS)
    if text is None:
        b.find("missing", SUMS, "no SHA256SUMS in the bundle")
        return
    listed = {}
    for number, line in enumerate(text.splitlines(), 1):
        digest, _, name = line.partition("  ")
        if len(digest) != 64 or not name:
            b.find("sums", SUMS, f"line {number} is not 'HEX  NAME'")
            continue
        listed[name] = digest
    for name in FILES:
        if name not in listed:
            b.find("sums", SUMS, f"{name} is not listed")
    for name, digest in listed.items():
        data = b.files.get(name)
        if name not in b.files:
            b.find("missing", name, "listed in SHA256SUMS but not in the bundle")
        elif data is not None and hashlib.sha256(data).hexdigest() != digest:
            # The sums are not an anchor: either side may be the changed one; the content checks say which.
            b.find("changed", f"{name} (or its line in {SUMS})", f"does not hash to {digest[:16]}...")
    for name in b.files:
        if name != SUMS and name not in listed:
            b.find("extra", name, "in the bundle but not listed in SHA256SUMS")


def canonical(value: object) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def parse_links(b: Bundle, name: str) -> list[Any]:
    """(line number, raw line, link) for each line that is a link at all."""
    text = b.text(name)
    if text is None:
        return []
    links = []
    for number, line in enumerate(text.split("\n"), 1):
        if not line:
            continue
        try:
            link = json.loads(line)
            record = link["record"]
            # an explicit check, not `assert`: python -O strips asserts, and a link of the wrong shape would pass
            readable = isinstance(record["seq"], int) and isinstance(record["position"], int)
        except (ValueError, KeyError, TypeError):
            readable = False
        if readable:
            links.append((number, line, link))
        else:
            b.find("unreadable", name, f"line {number} is not a chain link")
    return links


def path_ranges(index: int, size: int) -> list[Any]:
    """The leaf ranges [lo, hi) whose roots prove leaf `index` of a tree of `size` leaves,
    bottom up (RFC 9162's audit path: a tree splits at the largest power of two below its size)."""
    out = []
    lo, hi = 0, size
    while hi - lo > 1:
        k = 1 << ((hi - lo - 1).bit_length() - 1)
        if index < lo + k:
            out.append((lo + k, hi))
            hi = lo + k
        else:
            out.append((lo, lo + k))
            lo = lo + k
    out.reverse()
    return out


def root_from(index: int, size: int, link_hash: str, nodes: dict[Any, Any]) -> str | None:
    """The tree root that leaf `index`, holding `link_hash`, gives with the sibling roots in
    `nodes` ("lo-hi": hex); None when one is missing or not hex."""
    try:
        digest = hashlib.sha256(b"\x00" + bytes.fromhex(link_hash)).digest()
        for lo, hi in path_ranges(index, size):
            sibling = bytes.fromhex(nodes[f"{lo}-{hi}"])
            pair = sibling + digest if hi <= index else digest + sibling
            digest = hashlib.sha256(b"\x01" + pair).digest()
    except (KeyError, ValueError, TypeError):
        return None
    return digest.hex()


def check_proof(b: Bundle, manifest: dict[Any, Any]) -> dict[Any, Any] | None:
    """proof.json's tree and the anchor, once the manifest's head was proved to be its last leaf."""
    try:
        proof = json.loads(b.text("proof.json") or "null")
    except ValueError:
        proof = None
    if not (isinstance(proof, dict) and isinstance(proof.get("size"), int) and isinstance(proof.get("nodes"), dict)):
        b.find("unreadable", "proof.json", "not a tree proof (size, nodes)")
        return None
    size, root = proof["size"], manifest.get("tree_root")
    if not isinstance(root, str) or not isinstance(manifest.get("head_hash"), str):
        b.find("anchor", "manifest.json", "no tree_root or head_hash: nothing to prove the events against")
        return None
    if size != manifest.get("last_seq") or size < 1:
        b.find("anchor", "proof.json", f"the tree has {size} leaves; the manifest's head is seq "
               f"{manifest.get('last_seq')}")
        return None
    if root_from(size - 1, size, manifest["head_hash"], proof["nodes"]) != root:
        b.find("anchor", "manifest.json (or proof.json)", f"head_hash {manifest['head_hash']} is not the last "
               f"leaf (seq {size}) of the tree whose root is tree_root {root}")
    return {"size": size, "root": root, "nodes": proof["nodes"]}


def check_round_events(b: Bundle, tree: dict[Any, Any] | None, round_id: str, listed: list[tuple[Any, Any]]) -> list[Any]:
    """The round's records (in order), each link proved to be the tree's leaf of its seq."""
    links = parse_links(b, "events.jsonl")
    previous = None
    for number, line, link in links:
        record = link["record"]
        where, seq = f"events.jsonl line {number}", record["seq"]
        own: str | None
        form: str | None
        try:
            own = hashlib.sha256(bytes.fromhex(link["prev"]) + canonical(record)).hexdigest()
            form = canonical({"hash": link["hash"], "prev": link["prev"], "record": record}).decode("utf-8")
        except (ValueError, TypeError):
            own = form = None
        if form != line:
            b.find("form", where, "not the canonical line an audit export holds", record["position"])
        if record.get("redacted") is True:  # another operator's: its hash is the chain's, its content not what was hashed
            own = link["hash"] if isinstance(link["hash"], str) else None
        if own != link["hash"]:
            b.find("edited", where, f"seq {seq} ({record.get('event')}): its hash does not match its content",
                   record["position"])
        elif own is not None and tree is not None and not (
                1 <= seq <= tree["size"] and root_from(seq - 1, tree["size"], own, tree["nodes"]) == tree["root"]):
            b.find("not_in_chain", where, f"seq {seq} ({record.get('event')}): its link is not the chain's link "
                   f"of seq {seq} under the manifest's tree_root", record["position"])
        if previous is not None:
            if seq <= previous["record"]["seq"]:
                b.find("sequence", where, f"seq {seq} follows seq {previous['record']['seq']}", record["position"])
            elif seq == previous["record"]["seq"] + 1 and link["prev"] != previous["hash"]:
                b.find("broken", where, f"seq {seq} does not continue the hash before it", record["position"])
        previous = link
    records = [link["record"] for _, _, link in links]
    if sorted((r["seq"], lk["hash"]) for r, (_, _, lk) in zip(records, links)) != sorted(listed):
        b.find("incomplete", "events.jsonl", f"holds the round's events at seq {[r['seq'] for r in records]}; "
               f"replay.json lists seq {sorted(seq for seq, _ in listed)}")
    for expected, record in enumerate(records, 1):
        if record.get("originator_id") != round_id or record.get("originator_version") != expected:
            b.find("sequence", "events.jsonl", f"event {expected} of round {round_id} expected, found "
                   f"{record.get('originator_id')} v{record.get('originator_version')}", record["position"])
            break
    return records


def _add(net: dict[Any, Any], account: str, amount: int) -> None:
    net[account] = net.get(account, 0) + amount


def _net(postings: list[Any]) -> dict[Any, Any]:
    net: dict[Any, Any] = {}
    for p in postings:
        _add(net, p["account"], p["amount_minor"])
    return {k: v for k, v in net.items() if v}


def recompute_money(b: Bundle, records: list[Any]) -> dict[Any, Any]:
    """The money of the round from its events alone (see the module doc)."""
    put_in: dict[Any, Any] = {}
    settlements: dict[Any, Any] = {}
    lines: list[Any] = []
    refunds: list[Any] = []
    reversals: list[Any] = []  # a reversed settlement's lines stay in `results`: the report says which are not in force
    round_id = records[0]["originator_id"] if records else ""
    table = records[0]["fields"].get("table_id", "") if records else ""
    for r in records:
        name, f, pos = r["event"].rpartition(".")[2], r["fields"], r["position"]
        postings = f.get("postings") or []
        if r.get("redacted") is True:  # only the operator's own bets are in it: their lines alone are checked
            _redacted(b, name, f, pos, put_in, lines, refunds, reversals)
            continue
        if sum(p["amount_minor"] for p in postings):
            b.find("unbalanced", "events.jsonl", f"{name}: postings sum to {sum(p['amount_minor'] for p in postings)}",
                   pos)
        if name == "BetPlaced":
            key = (f["bet_id"], f["player_id"])
            put_in[key] = put_in.get(key, 0) + f["stake_minor"]
        for m in f.get("stake_moves") or []:
            key = (m["bet_id"], m["player_id"])
            put_in[key] = put_in.get(key, 0) + m["amount_minor"]
        if name == "Settled":
            lines += _settled(b, f, pos, put_in, round_id, table)
            settlements[f["settlement_no"]] = postings
        elif name == "Voided":
            refunds += _voided(b, f, pos, put_in, round_id)
        elif name == "SettlementReversed":
            original = settlements.get(f.get("settlement_no"))
            if original is None or _net(postings) != {k: -v for k, v in _net(original).items()}:
                b.find("reversal", "events.jsonl", "the reversal does not negate its settlement", pos)
            reversals.append({"settlement_no": f.get("settlement_no"), "position": pos, "by": f.get("by"),
                              "reason": f.get("reason")})
    return {"put_in": [{"bet_id": k[0], "player_id": k[1], "amount_minor": v} for k, v in put_in.items()],
            "results": lines, "refunds": refunds, "reversals": reversals}


def _redacted(b: Bundle, name: str, f: dict[Any, Any], pos: int, put_in: dict[Any, Any], lines: list[Any],
              refunds: list[Any], reversals: list[Any]) -> None:
    """An event with the other operators' bets taken out: what is left of the operator's own bets
    (their stakes put in, settlement lines, refunds) is checked and reported; not the postings,
    which are no longer the whole event's."""
    for m in f.get("stake_moves") or []:
        key = (m["bet_id"], m["player_id"])
        put_in[key] = put_in.get(key, 0) + m["amount_minor"]
    if name == "Settled":
        for line in f.get("results") or []:
            staked = line["staked_minor"]
            if staked != put_in.get((line["bet_id"], line["player_id"]), 0):
                b.find("stake", "events.jsonl", f"bet {line['bet_id']} settles a stake of {staked}; it put in "
                       f"{put_in.get((line['bet_id'], line['player_id']), 0)}", pos)
            lines.append({"settlement_no": f["settlement_no"], "position": pos, "bet_id": line["bet_id"],
                          "player_id": line["player_id"], "outcome": line["outcome"], "staked_minor": staked,
                          "returned_minor": line["returned_minor"], "net_minor": line["returned_minor"] - staked})
    elif name == "Voided":
        given = sorted((r["bet_id"], r["player_id"], r["amount_minor"]) for r in f.get("refunds") or [])
        owed = sorted((k[0], k[1], v) for k, v in put_in.items() if v > 0)  # the operator's own bets
        if given != owed:
            b.find("refunds", "events.jsonl", f"refunds {given}; everything its bets put in is {owed}", pos)
        refunds += [{"position": pos, "bet_id": x[0], "player_id": x[1], "amount_minor": x[2]} for x in given]
    elif name == "SettlementReversed":
        reversals.append({"settlement_no": f.get("settlement_no"), "position": pos, "by": f.get("by"),
                          "reason": f.get("reason")})


def _settled(b: Bundle, f: dict[Any, Any], pos: int, put_in: dict[Any, Any], round_id: str, table: str) -> list[Any]:
    net: dict[Any, Any] = {}
    out = []
    for line in f["results"]:
        staked, returned = line["staked_minor"], line["returned_minor"]
        if staked != put_in.get((line["bet_id"], line["player_id"]), 0):
            b.find("stake", "events.jsonl", f"bet {line['bet_id']} settles a stake of {staked}; it put in "
                   f"{put_in.get((line['bet_id'], line['player_id']), 0)}", pos)
        _add(net, f"round:{round_id}", -staked)
        _add(net, f"player:{line['player_id']}", returned)
        _add(net, f"house:{table}", staked - returned)
        out.append({"settlement_no": f["settlement_no"], "position": pos, "bet_id": line["bet_id"],
                    "player_id": line["player_id"], "outcome": line["outcome"], "staked_minor": staked,
                    "returned_minor": returned, "net_minor": returned - staked})
    if _net(f.get("postings") or []) != {k: v for k, v in net.items() if v}:
        b.find("postings", "events.jsonl", f"settlement {f['settlement_no']}: its postings are not what its "
               f"lines give ({sorted(net.items())})", pos)
    return out


def _voided(b: Bundle, f: dict[Any, Any], pos: int, put_in: dict[Any, Any], round_id: str) -> list[Any]:
    given = sorted((r["bet_id"], r["player_id"], r["amount_minor"]) for r in f.get("refunds") or [])
    owed = sorted((k[0], k[1], v) for k, v in put_in.items() if v > 0)
    if given != owed:
        b.find("refunds", "events.jsonl", f"refunds {given}; everything put in is {owed}", pos)
    net: dict[Any, Any] = {}
    for _bet, player_id, amount in given:
        _add(net, f"player:{player_id}", amount)
        _add(net, f"round:{round_id}", -amount)
    if _net(f.get("postings") or []) != {k: v for k, v in net.items() if v}:
        b.find("postings", "events.jsonl", "the void's postings are not its refunds", pos)
    return [{"position": pos, "bet_id": x[0], "player_id": x[1], "amount_minor": x[2]} for x in given]


def check_documents(b: Bundle, money: dict[Any, Any]) -> dict[Any, Any] | None:
    """replay.json and the page show the amounts the events give."""
    text = b.text("replay.json")
    try:
        doc: dict[str, Any] | None = json.loads(text) if text is not None else None
    except ValueError:
        doc = None
    if doc is None:
        b.find("unreadable", "replay.json", "not JSON")
        return None
    shown = [{"settlement_no": c["settlement_no"], "position": c["position"], "bet_id": c["bet_id"],
              "player_id": c["recorded"]["player_id"], "outcome": c["recorded"]["outcome"],
              "staked_minor": c["recorded"]["staked_minor"], "returned_minor": c["recorded"]["returned_minor"],
              "net_minor": c["recorded"]["returned_minor"] - c["recorded"]["staked_minor"]}
             for c in doc.get("results", []) if c.get("recorded")]
    if shown != money["results"]:
        b.find("amounts", "replay.json", "its settlement amounts differ from the events'")
    refunds = [{k: r[k] for k in ("position", "bet_id", "player_id", "amount_minor")} for r in doc.get("refunds", [])]
    if sorted(refunds, key=str) != sorted(money["refunds"], key=str):
        b.find("amounts", "replay.json", "its refunds differ from the events'")
    page = b.text("replay.html")
    match = EMBEDDED.search(page or "")
    try:
        embedded = json.loads(match.group(1)) if match else None
    except ValueError:
        embedded = None
    if embedded != doc:
        b.find("page", "replay.html", "the page's embedded replay data differs from replay.json")
    return doc


def verify(path: Path) -> tuple[Any, ...]:
    b = load(path)
    check_sums(b)
    try:
        manifest = json.loads(b.text("manifest.json") or "{}")
    except ValueError:
        b.find("unreadable", "manifest.json", "not JSON")
        manifest = {}
    tree = check_proof(b, manifest)
    try:
        replay = json.loads(b.text("replay.json") or "{}")
        round_id = replay.get("round_id", "")
        listed = [(e["seq"], e["hash"]) for e in ((replay.get("proof") or {}).get("events") or {}).values()]
    except (ValueError, AttributeError, KeyError, TypeError):
        round_id, listed = "", []
    records = check_round_events(b, tree, round_id, listed)
    try:
        money = recompute_money(b, records)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:  # a field renamed or retyped: a finding
        b.find("amounts", "events.jsonl", f"the round's money cannot be recomputed: field {exc} missing or malformed")
        money = {"put_in": [], "results": [], "refunds": [], "reversals": []}
    doc = check_documents(b, money)
    report = {"round": doc.get("round") if doc else None, "round_id": round_id, "currency":
              doc.get("currency") if doc else None, "head_seq": manifest.get("last_seq"),
              "head_hash": manifest.get("head_hash"), "tree_root": manifest.get("tree_root"),
              "events": len(records), "redacted": sum(1 for r in records if r.get("redacted") is True),
              **money, "findings": b.findings}
    return report, b.findings


def amount(minor: int, currency: str | None) -> str:
    sign = "-" if minor < 0 else ""
    units, cents = divmod(abs(minor), 100)
    return f"{sign}{units:,}.{cents:02d}" + (f" {currency}" if currency else "")


def print_report(report: dict[Any, Any]) -> None:
    cur = report["currency"]
    print(f"Round {report['round']} (id {report['round_id']}): {report['events']} events")
    if report.get("redacted"):
        print(f"  {report['redacted']} of them hold other operators' bets, redacted: their hashes are proved, "
              "only this operator's bets in them are checked")
    for line in report["results"]:
        print(f"  settlement {line['settlement_no']} bet {line['bet_id']} ({line['player_id']}): {line['outcome']}, "
              f"staked {amount(line['staked_minor'], cur)}, returned {amount(line['returned_minor'], cur)}, "
              f"net {amount(line['net_minor'], cur)}")
    for r in report["refunds"]:
        print(f"  refund bet {r['bet_id']} ({r['player_id']}): {amount(r['amount_minor'], cur)}")
    for r in report.get("reversals", []):
        print(f"  REVERSAL: settlement {r['settlement_no']} was reversed at position {r['position']} by {r['by']} "
              f"({r['reason']}); its lines above are not in force")
    print(f"Anchored to the chain's tree root {report['tree_root']} at head seq {report['head_seq']} "
          f"hash {report['head_hash']}")
    print("  (compare with the tree_root and head_hash of the audit manifest the operator published)")
    if report["findings"]:
        print(f"FINDINGS ({len(report['findings'])}):")
        for f in report["findings"]:
            where = f" position {f['position']}" if f["position"] is not None else ""
            print(f"  {f['kind']} in {f['file']}{where}: {f['message']}")
    else:
        print("OK: the bundle verifies.")


def main(argv: list[Any]) -> int:
    args = [a for a in argv if a != "--json"]
    if args and args[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    if len(args) != 1:
        print("usage: python3 verify.py BUNDLE.zip|DIR [--json]", file=sys.stderr)
        return 2
    path = Path(args[0])
    try:
        report, findings = verify(path)
    except (OSError, zipfile.BadZipFile) as exc:
        print(f"cannot read {path}: {exc}", file=sys.stderr)
        return 2
    if "--json" in argv:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        print_report(report)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
