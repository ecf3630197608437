"""The back-office console: server-rendered pages under /ui/ of `ledger serve`
(ops/console/pages.py, mounted by `mount`), on the same read side as the command line
and the API. docs/console.md describes the pages."""
