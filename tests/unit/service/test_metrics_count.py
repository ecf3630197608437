"""Command counts in /metrics: one increment per (status, code) of a batch adds up to
one per command (ops/service/metrics.py count_results)."""
from __future__ import annotations

from prometheus_client import REGISTRY

from ledger.batching import Result
from ops.service import metrics


def _count(status: str, code: str) -> float:
    return REGISTRY.get_sample_value("ledger_commands_total", {"status": status, "code": code}) or 0.0


def test_a_mixed_batch_counts_each_command_once_under_its_status_and_code() -> None:
    keys = [("accepted", ""), ("refused", "bet_too_large"), ("refused", "round_closed"), ("duplicate", "")]
    before = {k: _count(*k) for k in keys}
    metrics.count_results([
        Result(status="accepted", command_id="a"), Result(status="refused", command_id="b", code="bet_too_large"),
        Result(status="accepted", command_id="c"), Result(status="refused", command_id="d", code="round_closed"),
        Result(status="refused", command_id="e", code="bet_too_large"), Result(status="duplicate", command_id="f"),
    ])
    assert {k: _count(*k) - before[k] for k in keys} == {keys[0]: 2, keys[1]: 2, keys[2]: 1, keys[3]: 1}
