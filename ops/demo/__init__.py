"""`ledger demo`: a simulated day through every part of the ledger, as a report."""
