"""The audit chain kept in the store gives the proof the whole-store pass gives, on both
stores, when made in one go and when extended after more events."""
from __future__ import annotations

from ledger.eventlog import EventLog
from ledger.store import open_app
from projections import chain_index
from projections.audit_store import parse_round_ref
from projections.document import proof as proof_from_store
from projections.sql import Db
from tests.support.dispute_rounds import ingest_corrections, ingest_three
from tests.support.feed import Feed, baccarat_round, lines


def _positions(log: EventLog, ref: str) -> set[int]:
    return {e.position for e in log.round_records(parse_round_ref(ref))}


def test_kept_chain_proves_as_the_whole_store(store_url: str) -> None:
    app = open_app(store_url)
    ingest_three(app)
    log = EventLog(app)
    db = Db.for_store(log.backend)
    try:
        assert chain_index.extend(log, db) == log.head()
        for ref in ("dispute-bj#1", "dispute-void#1"):
            assert chain_index.proof(db, _positions(log, ref)) == proof_from_store(log, _positions(log, ref))
        ingest_corrections(app)  # more events: the chain goes on from its head
        assert all(r.status == "accepted" for r in app.ingest(lines(*baccarat_round(Feed("chain-more")))))
        assert chain_index.extend(log, db) == log.head()
        assert chain_index.extend(log, db) == log.head()  # nothing new: nothing changes
        for ref in ("dispute-bj#1", "dispute-tp#1", "chain-more#1"):
            kept = chain_index.proof(db, _positions(log, ref))
            assert kept == proof_from_store(log, _positions(log, ref))
            assert kept["head_position"] == log.head() and len(kept["events"]) == len(_positions(log, ref))
    finally:
        db.close()
        app.close()
