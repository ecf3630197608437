"""The seam: the ledger's overrides of `eventsourcing` 9.5 classes, and only those.

Each module names the library class it overrides and the measurement that keeps it
(docs/architecture-library.md, `python -m ops.bench.library_bench`):
`aggregate` (events: `DomainEvent`; `Application.save`'s per-aggregate checks),
`eventstore` (`EventStore.put`, `Mapper`), `transcoder` (`JSONTranscoder`),
`recorders` (the rows the application recorders keep beside events), `sqlite_recorder` and
`postgres_recorder` (the SQLite and PostgreSQL application recorders), `arrays` (psycopg's
array dumpers).
Outside this package the ledger uses the library through its public API and its
`Application.construct_*` hooks only (tests/unit/test_architecture.py checks it).
"""
