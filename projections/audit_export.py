"""Audit exports on disk: write events.jsonl, events.csv and manifest.json; verify them.

The chain and the canonical form are in projections/audit.py; the file
formats and verify semantics are specified in docs/audit.md. Events come in
as typed records beside their stored fields, in global order
(`ledger.eventlog.EventLog.stored`), so this module knows nothing about the store.
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from domain.errors import InvariantBroken, Refusal, require
from domain.registry import get_rule_set
from ledger.records import Opened, Record, TableConfigured
from projections.audit import (
    FORMAT,
    GENESIS_HEX,
    LINE_BYTES_MAX,
    Finding,
    Link,
    Stored,
    TreeBuilder,
    canonical_json,
    chain,
    compare_with_store,
    parse_line,
    verify_links,
)
from projections.folding import gaming_day, studio_utc_text

EVENTS_JSONL = "events.jsonl"
EVENTS_CSV = "events.csv"
MANIFEST = "manifest.json"
SOFTWARE = "casino-ledger"
CSV_COLUMNS = ("seq", "position", "timestamp", "originator_id", "originator_version", "event", "fields", "prev", "hash")


@dataclass
class ExportResult:
    directory: Path
    manifest: dict[str, Any]
    links: list[Link] = field(default_factory=list)


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass(frozen=True)
class Window:
    """Which events an export holds: a position range and/or a recorded-time range
    [since, until) (UTC), or the gaming days of play `played_from`..`played_to` (both
    included). Events are recorded in position order, so a time range is a position range
    too: the export starts at the first event recorded at or after `since` and ends before
    the first recorded at or after `until`. An export is one stretch of the chain, so the
    days of play give the stretch from the first event played on them to the last (a store
    ingested later, or tables interleaved, may hold events of other days in between)."""

    from_position: int | None = None
    to_position: int | None = None
    since: datetime | None = None
    until: datetime | None = None
    played_from: str | None = None
    played_to: str | None = None
    zone: tzinfo = UTC  # the gaming days' zone where a table has none of its own

    @property
    def by_play(self) -> bool:
        return self.played_from is not None or self.played_to is not None

    def before(self, event: Record, position: int) -> bool:
        return (self.from_position is not None and position < self.from_position) or (
            self.since is not None and event.timestamp < self.since)

    def after(self, event: Record, position: int) -> bool:
        return (self.to_position is not None and position > self.to_position) or (
            self.until is not None and event.timestamp >= self.until)

    def requested(self) -> dict[str, Any]:
        """The manifest's `requested_range`."""
        played = {"played_from": self.played_from, "played_to": self.played_to, "timezone": str(self.zone)}
        return {"from": self.from_position, "to": self.to_position,
                **({"since": self.since.isoformat()} if self.since else {}),
                **({"until": self.until.isoformat()} if self.until else {}),
                **(played if self.by_play else {})}


class PlayDays:
    """The gaming day each event was played on (its studio time), as `ggr` counts it: a round
    in the zone of its table's configuration when it opened, any other event (or a round at
    an unconfigured table) in the window's zone. Follows the configurations in the stream
    (they are recorded before the rounds that apply them); keeps a zone only for rounds at
    tables that have one."""

    def __init__(self, window: Window) -> None:
        self.window = window
        self.table_zones: dict[str, str] = {}
        self.round_zones: dict[str, str] = {}

    def takes(self, event: Record) -> bool:
        """Whether `event` was played on one of the window's days."""
        if isinstance(event, TableConfigured):
            self.table_zones[event.table_id] = event.timezone
        elif isinstance(event, Opened) and self.table_zones.get(event.table_id):
            self.round_zones[event.originator_id] = self.table_zones[event.table_id]
        name = self.round_zones.get(event.originator_id)
        day = gaming_day(studio_utc_text(event.studio_time, event.timestamp),
                         ZoneInfo(name) if name else self.window.zone)
        w = self.window
        return (w.played_from is None or day >= w.played_from) and (w.played_to is None or day <= w.played_to)


def export(directory: str | Path, events: Iterable[Stored], *, from_position: int | None = None,
           to_position: int | None = None, previous_manifest: str | Path | None = None,
           exported_at: str, progress: Callable[[int], Any] | None = None, window: Window | None = None,
           software_version: str = "unknown", shown: Callable[[Link], Link] | None = None) -> ExportResult:
    """Chain every event from the first (the chain always starts at genesis) and
    write those within [from_position, to_position] (or `window`). `progress(n)` is called per event.
    `shown`: each line as the export's reader may see it (one operator's: projections/redaction.py)."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    window = window or Window(from_position, to_position)
    chain_start, rule_sets, studio = GENESIS_HEX, RuleSetsSeen(), StudioTimes()
    links: list[Link] = []
    tree, start_peaks = TreeBuilder(), []  # the Merkle tree over every link up to the export's last
    play = PlayDays(window) if window.by_play else None
    pending: list[tuple[Record, Link]] = []  # by play: events after the last one played on the days
    for event, link in zip_chain(events):
        if progress is not None:
            progress(1)
        if shown is not None:
            link = shown(link)  # every line from the first: a bet named later is known from its BetPlaced
        if window.after(event, link.position):
            break
        inside = play.takes(event) if play is not None else not window.before(event, link.position)
        if not links and not pending and not inside:
            chain_start = link.hash
            tree.add(link.hash)
            continue
        if not links and not pending:
            start_peaks = tree.peak_hexes()
        pending.append((event, link))
        if not inside:
            continue
        for kept, kept_link in pending:
            tree.add(kept_link.hash)
            links.append(kept_link)
            studio.note(kept.studio_time)
            if isinstance(kept, Opened):
                rule_sets.note(kept)
        pending.clear()
    with open(out / EVENTS_JSONL, "w", encoding="utf-8", newline="\n") as f:
        for link in links:
            f.write(link.line() + "\n")
    (out / EVENTS_CSV).write_text(_csv_text(links), encoding="utf-8", newline="")
    previous = Path(previous_manifest) if previous_manifest else find_previous_manifest(out, links)
    manifest = _manifest(links, chain_start, window, previous, rule_sets, exported_at, out)
    manifest.update(tree_start_peaks=start_peaks, tree_root=tree.root() if links else None)
    manifest.update(files={name: file_sha256(out / name) for name in (EVENTS_JSONL, EVENTS_CSV)},
                    studio_time_range=studio.range(), software={"name": SOFTWARE, "version": software_version})
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n",
                                encoding="utf-8")
    return ExportResult(out, manifest, links)


class RuleSetsSeen:
    """The rule sets the exported rounds opened under: rounds and content hashes per (id, version)."""

    def __init__(self) -> None:
        self.entries: dict[tuple[str, int], dict[str, Any]] = {}

    def note(self, opened: Opened) -> None:
        key = (opened.ruleset_id, opened.ruleset_version)
        entry = self.entries.get(key) or self.entries.setdefault(key, {
            "id": key[0], "version": key[1], "hashes": [], "rounds": 0, "published_hash": _published_hash(*key)})
        entry["rounds"] += 1
        if opened.ruleset_hash and opened.ruleset_hash not in entry["hashes"]:
            entry["hashes"].append(opened.ruleset_hash)

    def listed(self) -> list[dict[str, Any]]:
        return [self.entries[k] for k in sorted(self.entries)]


def _published_hash(ruleset_id: str, version: int) -> str | None:
    """The content hash of the rule set as this software publishes it (None: unknown here)."""
    try:
        return get_rule_set(ruleset_id, version).content_hash()
    except Refusal:
        return None


class StudioTimes:
    """The earliest and latest studio time of the exported events (as instants)."""

    def __init__(self) -> None:
        self.first: tuple[datetime, str] | None = None
        self.last: tuple[datetime, str] | None = None

    def note(self, studio_time: str | None) -> None:
        try:
            moment = (datetime.fromisoformat(studio_time), studio_time) if studio_time else None
        except ValueError:  # an old or foreign record: the range covers what can be read
            moment = None
        if moment is None or moment[0].tzinfo is None:
            return
        if self.first is None or moment[0] < self.first[0]:
            self.first = moment
        if self.last is None or moment[0] > self.last[0]:
            self.last = moment

    def range(self) -> dict[str, str | None]:
        return {"first": self.first[1] if self.first else None, "last": self.last[1] if self.last else None}


def zip_chain(events: Iterable[Stored]) -> Iterator[tuple[Record, Link]]:
    """Each event beside its link (the chain consumes the same iterator, in step)."""
    pending: list[Record] = []

    def noted() -> Iterator[Stored]:
        for item in events:
            pending.append(item[0])
            yield item

    for link in chain(noted()):
        yield pending.pop(), link


def _csv_text(links: list[Link]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for link in links:
        writer.writerow(_csv_row(link))
    return buf.getvalue()


def _csv_row(link: Link) -> list[str]:
    r = link.record
    return [str(r["seq"]), str(r["position"]), r.get("timestamp", ""), r.get("originator_id", ""),
            str(r.get("originator_version", "")), r.get("event", ""), canonical_json(r.get("fields", {})),
            link.prev, link.hash]


def _manifest(links: list[Link], chain_start: str, window: Window, previous: Path | None,
              rule_sets: RuleSetsSeen, exported_at: str, out: Path) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "count": len(links),
        "first_position": links[0].position if links else None,
        "last_position": links[-1].position if links else None,
        "first_seq": links[0].seq if links else None,
        "last_seq": links[-1].seq if links else None,
        "chain_start_hash": chain_start,
        "head_hash": links[-1].hash if links else chain_start,
        "requested_range": window.requested(),
        "previous_manifest": _relative(previous, out) if previous else None,
        "previous_manifest_hash": file_sha256(previous) if previous else None,
        "rule_sets": rule_sets.listed(),
        "exported_at": exported_at,
    }


def _relative(path: Path, out: Path) -> str:
    try:
        return str(path.resolve().relative_to(out.resolve().parent))
    except ValueError:
        return str(path.resolve())


def find_previous_manifest(out: Path, links: list[Link]) -> Path | None:
    """The sibling export (same parent directory) that ends latest before this one starts."""
    first_seq = links[0].seq if links else None
    best: tuple[int, Path] | None = None
    for candidate in sorted(out.resolve().parent.glob(f"*/{MANIFEST}")):
        if candidate.parent == out.resolve():
            continue
        try:
            data = json.loads(candidate.read_text(encoding="utf-8"))
            last_seq = data["last_seq"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if isinstance(last_seq, int) and (first_seq is None or last_seq < first_seq):
            if best is None or last_seq > best[0]:
                best = (last_seq, candidate)
    return best[1] if best else None


# --------------------------------------------------------------------------- verify


@dataclass
class Verified:
    manifest: dict[str, Any]
    links: list[Link]
    findings: list[Finding]


def read_links(directory: Path) -> tuple[list[Link], list[Finding]]:
    links, findings = [], []
    with open(directory / EVENTS_JSONL, encoding="utf-8", newline="\n") as f:
        for number, text in enumerate(f, 1):
            text = text.rstrip("\n")
            if not text:
                continue
            try:
                require(len(text) <= LINE_BYTES_MAX, "line too long")
                links.append(parse_line(text))
            except Exception as exc:  # a mangled line is a finding, not a crash
                findings.append(Finding("unreadable", None, f"{EVENTS_JSONL} line {number}: {exc}"))
    return links, findings


def verify_files(directory: str | Path) -> Verified:
    """Recompute the chain from the files alone and check the manifest and CSV against it."""
    out = Path(directory)
    try:
        manifest = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return Verified({}, [], [Finding("manifest", None, f"{MANIFEST} unreadable: {exc}")])
    if not isinstance(manifest, dict):
        return Verified({}, [], [Finding("manifest", None, f"{MANIFEST} is not a JSON object")])
    links, findings = read_links(out)
    first_seq = manifest.get("first_seq") or (min((lk.seq for lk in links), default=1))
    findings += verify_links(links, manifest.get("chain_start_hash", GENESIS_HEX), first_seq)
    findings += _manifest_findings(manifest, links, findings)
    findings += _tree_findings(manifest, links)
    findings += _csv_findings(out, links)
    if not findings:  # a change the chain and the rows already name is not reported twice
        findings += _file_hash_findings(out, manifest)
    findings += _previous_findings(out, manifest)
    return Verified(manifest, links, findings)


def _manifest_findings(manifest: dict[str, Any], links: list[Link], so_far: list[Finding]) -> list[Finding]:
    ordered = sorted(links, key=lambda lk: lk.seq)
    head = ordered[-1] if ordered else None
    checks = [
        ("count", len(links)),
        ("first_position", ordered[0].position if ordered else None),
        ("last_position", head.position if head else None),
        ("last_seq", head.seq if head else None),
        ("head_hash", head.hash if head else manifest.get("chain_start_hash")),
    ]
    findings = []
    for key, actual in checks:
        if manifest.get(key) != actual:
            position = head.position if key in ("head_hash", "last_seq", "last_position") and head else None
            # A missing or extra event is already reported by position; the count follows from it.
            findings.append(Finding("manifest", position, f"manifest {key} is {manifest.get(key)!r}, "
                                    f"the events give {actual!r}"))
    if manifest.get("format") != FORMAT:
        findings.append(Finding("manifest", None, f"unknown format {manifest.get('format')!r}; expected {FORMAT}"))
    return findings


def _tree_findings(manifest: dict[str, Any], links: list[Link]) -> list[Finding]:
    """`tree_root` recomputed from `tree_start_peaks` (the tree of every link before this
    export) and this export's links (exports written before the tree have neither: nothing to check)."""
    if "tree_root" not in manifest or not links:
        return []
    ordered = sorted(links, key=lambda lk: lk.seq)
    try:
        tree = TreeBuilder(start_peaks=manifest.get("tree_start_peaks") or [], start_size=ordered[0].seq - 1)
        for link in ordered:
            tree.add(link.hash)
        root = tree.root()
    except (InvariantBroken, ValueError, TypeError) as exc:
        return [Finding("manifest", None, f"manifest tree_start_peaks unusable: {exc}")]
    if root != manifest["tree_root"]:
        return [Finding("manifest", ordered[-1].position, f"manifest tree_root is {manifest['tree_root']!r}, "
                        f"the events give {root!r}")]
    return []


def _csv_findings(out: Path, links: list[Link]) -> list[Finding]:
    path = out / EVENTS_CSV
    if not path.exists():
        return [Finding("csv", None, f"{EVENTS_CSV} is missing")]
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    if not rows or tuple(rows[0]) != CSV_COLUMNS:
        return [Finding("csv", None, f"{EVENTS_CSV} header is not {','.join(CSV_COLUMNS)}")]
    expected = {link.hash: _csv_row(link) for link in links}
    findings = []
    seen = set()
    for row in rows[1:]:
        h = row[-1] if row else ""
        position = _int_or_none(row[1]) if len(row) > 1 else None
        if h not in expected:
            findings.append(Finding("csv", position, f"{EVENTS_CSV} row for position {position} matches no "
                                    f"line of {EVENTS_JSONL}"))
        elif row != expected[h]:
            findings.append(Finding("csv", position, f"{EVENTS_CSV} row differs from {EVENTS_JSONL}"))
        seen.add(h)
    for h, row in expected.items():
        if h not in seen:
            findings.append(Finding("csv", int(row[1]), f"{EVENTS_CSV} has no row for position {row[1]}"))
    return findings


def _file_hash_findings(out: Path, manifest: dict[str, Any]) -> list[Finding]:
    """Each file's SHA-256 as the manifest records it (exports before it recorded none): catches
    what no line shows (an added blank line, a changed line ending)."""
    findings = []
    for name, recorded in sorted((manifest.get("files") or {}).items()):
        path = out / name
        if name not in (EVENTS_JSONL, EVENTS_CSV) or not path.is_file():
            findings.append(Finding("file", None, f"{name} is listed in the manifest but not in the export"))
        elif file_sha256(path) != recorded:
            findings.append(Finding("file", None, f"{name} does not hash to the manifest's {recorded}"))
    return findings


def _int_or_none(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def _previous_findings(out: Path, manifest: dict[str, Any]) -> list[Finding]:
    name, recorded = manifest.get("previous_manifest"), manifest.get("previous_manifest_hash")
    if not name:
        return []
    path = Path(name) if Path(name).is_absolute() else out.resolve().parent / name
    if not path.exists():
        return [Finding("previous_manifest", None, f"previous manifest {name} not found; its hash "
                        f"{recorded} cannot be checked here")]
    findings = []
    if file_sha256(path) != recorded:
        findings.append(Finding("previous_manifest", None, f"previous manifest {name} does not hash to {recorded}"))
    try:
        previous = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        return findings + [Finding("previous_manifest", None, f"previous manifest {name} is not JSON")]
    consecutive = previous.get("last_seq") is not None and previous.get("last_seq") + 1 == manifest.get("first_seq")
    if consecutive and previous.get("head_hash") != manifest.get("chain_start_hash"):
        findings.append(Finding("previous_manifest", manifest.get("first_position"),
                                f"this export continues {name} but its chain start differs from that "
                                "export's head hash: events before this export were changed"))
    if consecutive and previous.get("tree_root") and "tree_start_peaks" in manifest \
            and _peaks_root(manifest, previous["last_seq"]) != previous["tree_root"]:
        findings.append(Finding("previous_manifest", manifest.get("first_position"),
                                f"this export continues {name} but its tree_start_peaks do not give that "
                                "export's tree_root"))
    return findings


def _peaks_root(manifest: dict[str, Any], size: int) -> str | None:
    try:
        return TreeBuilder(start_peaks=manifest["tree_start_peaks"], start_size=size).root()
    except (InvariantBroken, ValueError, TypeError, KeyError):
        return None


def verify_against_store(verified: Verified, store_events: Iterable[Stored],
                         shown: Callable[[Link], Link] | None = None) -> list[Finding]:
    """Chain the live store's events (from genesis) and compare them by position with the export
    (`shown`: each store line as the export's reader may see it, projections/redaction.py)."""
    last = verified.manifest.get("last_position")
    if last is None and verified.links:
        last = max(lk.position for lk in verified.links)
    first = min((lk.position for lk in verified.links), default=None)
    store_links, before = [], TreeBuilder()
    for link in chain(store_events):
        if last is not None and link.position > last:
            break
        store_links.append(link if shown is None else shown(link))
        if first is not None and link.position < first:
            before.add(link.hash)
    findings = compare_with_store(verified.links, store_links)
    peaks = verified.manifest.get("tree_start_peaks")
    if peaks is not None and peaks != before.peak_hexes() and not findings:
        # The links before the export are what its tree_root builds on: a forged start is caught here.
        findings.append(Finding("edited", None, f"events before position {first} in the store do not give this "
                                "export's tree_start_peaks"))
    return findings
