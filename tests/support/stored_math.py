"""The exact game math of a rule set's bet lines as domain/gamemath.py COUNTS keeps them,
in the form its enumerations return (`Counted`): for tests of what `ledger rtp` shows that
need the lines, not the enumeration's seconds of CPU. tests/unit/domain/test_gamemath.py
checks COUNTS against a fresh enumeration, tests/unit/ops/test_rtp.py the figures from it."""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from domain import gamemath
from domain.ruleset import RuleSet


def stored_counts(rules: RuleSet, *, long: bool = True) -> dict[str, gamemath.Counted]:
    """Every stored bet line of `rules` (`long` as the enumerations take it; all are stored)."""
    found: dict[str, gamemath.Counted] = {}
    for (ruleset_id, version, key), (total, lines) in gamemath.COUNTS.items():
        if (ruleset_id, version) == (rules.id, rules.version):
            found[key] = (Counter({(outcome, line): n for outcome, line, n in lines}), total)
    return found


@contextmanager
def stored_math() -> Iterator[None]:
    """Baccarat and Teen Patti lines read from COUNTS inside the block; `ledger rtp`'s memo of
    its tables emptied on the way in and out (nothing computed so outlives the block)."""
    from ops.gamemath import rtp

    rtp.tables.cache_clear()
    try:
        with pytest.MonkeyPatch.context() as m:
            m.setattr(gamemath, "baccarat_counts", stored_counts)
            m.setattr(gamemath, "teenpatti_counts", stored_counts)
            yield
    finally:
        rtp.tables.cache_clear()
