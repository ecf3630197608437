"""Every view's fingerprint as committed: a view's tables (column names, types, order, keys,
indexes) and version are what the runner compares to decide a rebuild, so a change to one is
a deliberate edit of this table (and a rebuild of every stored view), never a side effect of
how the table's columns are declared (projections/sql.py `columns_of`)."""
from __future__ import annotations

from projections.runner import ALL_VIEWS

FINGERPRINTS = {
    "tables": "6e20be59f413add8",
    "operators": "cf1205370cf95a1a",
    "rounds": "d2b527f682263317",
    "balances": "8878cf9206c8d4dd",
    "recall": "49aff61e61b15717",
    "timeline": "1102e3227195b094",
    "refunds": "e00a6cabd2885047",
    "ggr": "6eccd0db9b1c1233",
    "monitor": "b8481a3b7d0f2d0d",
}


def test_every_view_has_its_committed_fingerprint() -> None:
    assert {view.name: view.fingerprint() for view in ALL_VIEWS} == FINGERPRINTS
