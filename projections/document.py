"""One round's replay as a document: what `ledger replay --json` prints, what the
dispute page (projections/replay_page.py) draws and what a dispute bundle carries.

Built once here so the three can never disagree: the timeline with the state
after each step and the settlement recomputed on a fresh model
(projections/replay.py), the refunds of a voided round, and optionally the
proof (each event's place and hash in the audit chain, projections/audit.py).
"""
from __future__ import annotations

from typing import Any
from uuid import UUID

from ledger.eventlog import EventLog
from ledger.records import Opened, Record, Voided
from projections.audit import TreeBuilder, chain
from projections.chain_index import checked_proof
from projections.replay import Replay, recompute
from projections.round_story import round_story

MINOR_EXPONENT = 2  # how amounts are shown (domain.money.format_minor's default); stored as integers


def proof(log: EventLog, positions: set[int]) -> dict[str, Any]:
    """Each given position's seq and hash in the audit chain, and the store's head with the
    root of the chain's Merkle tree (reads the whole store: the chain starts at genesis).
    The reference the chain kept in the store is checked against (tests); readers call
    `projections.chain_index.checked_proof`, which gives the same from the chain kept."""
    hashes, head, tree = {}, None, TreeBuilder()
    for link in chain(log.stored(1, page_size=5000)):
        if link.position in positions:
            hashes[link.position] = {"seq": link.seq, "hash": link.hash, "prev": link.prev}
        tree.add(link.hash)
        head = link
    return {"events": hashes, "head_position": head.position if head else None,
            "head_seq": head.seq if head else None, "head_hash": head.hash if head else None,
            "tree_root": tree.root() if head else None}


def replay_document(round_id: UUID | str, events: list[Record], replay: Replay,
                    chain_proof: dict[str, Any] | None, at: int | None, ref: str | None = None) -> dict[str, Any]:
    """The replay as plain JSON values (amounts integers in minor units). `ref` is the
    TABLE#NO the round was asked for: the only name a tombstone has (see round_story)."""
    opened = events[0] if events and isinstance(events[0], Opened) else None
    return _with_story(round_id, events, replay, ref, {
        "round_id": str(round_id),
        "round": f"{opened.table_id}#{opened.round_no}" if opened else None,
        "table_id": opened.table_id if opened else None, "round_no": opened.round_no if opened else None,
        "game": opened.game if opened else None,
        "currency": opened.currency if opened else None, "minor_exponent": MINOR_EXPONENT,
        "ruleset": {"ruleset_id": opened.ruleset_id if opened else None,
                    "ruleset_version": opened.ruleset_version if opened else None,
                    "ruleset_hash": opened.ruleset_hash if opened else None},
        "at": at,
        "steps": [s.as_dict() for s in replay.steps],
        "results": [r.as_dict() for r in replay.results],
        "refunds": [{"position": e.position, "cause": e.cause, "by": e.by, "note": e.note,
                     **r._asdict()} for e in events if isinstance(e, Voided) for r in e.refunds],
        "findings": [f.as_dict() for f in replay.findings],
        "proof": chain_proof,
    })


def _with_story(round_id: UUID | str, events: list[Record], replay: Replay, ref: str | None,
                document: dict[str, Any]) -> dict[str, Any]:
    """Add what is in force (projections/round_story.py): each result line marked with its
    settlement's status, so no reader takes a reversed line for the result; a tombstone's
    table and number from the reference (its one event carries neither)."""
    story = round_story(round_id, events, replay.outcome, ref)
    status = {s["settlement_no"]: s["status"] for s in story["settlements"]}
    for line in document["results"]:
        line["status"] = status.get(line["settlement_no"], "in_force")
    tomb = story["tombstone"]
    if tomb and tomb["table_id"]:
        document.update(round=f"{tomb['table_id']}#{tomb['round_no']}", table_id=tomb["table_id"],
                        round_no=tomb["round_no"])
    return {**document, **story}


def round_document(log: EventLog, round_id: UUID, *, at: int | None = None,
                   with_proof: bool = False, ref: str | None = None) -> dict[str, Any] | None:
    """Read, replay and describe one round (None when the store has no such round);
    `at` cuts the round after its at-th event (the caller checked the range)."""
    from projections.audit_store import round_events

    events = round_events(log, round_id)
    if not events:
        return None
    if at is not None:
        events = events[:at]
    chain_proof = checked_proof(log, {e.position for e in events}) if with_proof else None
    return replay_document(round_id, events, recompute(events), chain_proof, at, ref)
