"""A view's row is declared once (its dataclass; the table's columns from it, `columns_of`), and
a query's result type is made from it; the rounds search's `RoundSummary`, which cannot be
(docs/projections.md, rounds), names the rounds view's fields as the row types them."""
from __future__ import annotations

from dataclasses import fields
from types import UnionType
from typing import Any, get_args, get_type_hints

from projections import queries
from projections.ggr import GgrSums
from projections.recall import PlayerRound, RecallRow
from projections.refunds import RefundRow
from projections.rounds import RoundRow


def test_result_types_are_made_from_their_view_rows() -> None:
    assert issubclass(queries.RefundLine, RefundRow)
    assert issubclass(queries.StoryRound, PlayerRound) and issubclass(RecallRow, PlayerRound)
    assert issubclass(queries.GgrRow, GgrSums)
    assert queries.BalanceRow.__module__ == "projections.balances"


def test_a_round_summary_types_the_rounds_view_fields_as_the_row_does() -> None:
    row, summary = get_type_hints(RoundRow), get_type_hints(queries.RoundSummary)
    shared = [f.name for f in fields(queries.RoundSummary) if f.name in row]
    assert len(shared) == 15
    for name in shared:  # None aside: a tombstone (no table) is never listed, a settlement_no may be absent
        assert _bare(summary[name]) == _bare(row[name]), name


def _bare(hint: Any) -> Any:
    """`X | None` as X."""
    args = [a for a in get_args(hint) if a is not type(None)]
    return args[0] if type(hint) is UnionType and len(args) == 1 else hint
