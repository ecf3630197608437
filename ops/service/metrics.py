"""Prometheus metrics of the live service.

Correct across `ledger serve --workers N`: `ledger serve` points
PROMETHEUS_MULTIPROC_DIR at a fresh directory BEFORE prometheus-client is
imported (the library picks its value store at import), every worker writes its
samples there, and `/metrics` sums them with the library's MultiProcessCollector.
Without that variable (tests, one process) the default registry is used.
"""
from __future__ import annotations

import os
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)

COMMANDS = Counter("ledger_commands", "Commands answered, by status and refusal code", ["status", "code"])
BATCH_SECONDS = Histogram(
    "ledger_batch_commit_seconds", "Time to check and commit one group-commit batch (one transaction)",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5),
)
BATCH_COMMANDS = Histogram("ledger_batch_commands", "Commands per group-commit batch",
                           buckets=(1, 2, 5, 10, 20, 50, 100, 200, 500, 1000))
PROJECTION_LAG = Gauge("ledger_projection_lag_events", "Events recorded but not yet in the query views",
                       multiprocess_mode="mostrecent")
VIEW_POSITION = Gauge("ledger_view_position", "The last event position folded into the view", ["view"],
                      multiprocess_mode="mostrecent")
VIEW_STOPPED = Gauge("ledger_view_stopped",
                     "1: the view stopped at an event it could not fold or store (the others go on), until a rebuild",
                     ["view"], multiprocess_mode="mostrecent")
REQUESTS = Counter("ledger_http_requests", "HTTP requests by route and status", ["route", "status"])
REQUEST_SECONDS = Histogram("ledger_http_request_seconds", "HTTP request latency by route", ["route"],
                            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0))

WALLET_BEHIND = Gauge("ledger_wallet_events_behind", "Events recorded but not yet turned into wallet transactions",
                      multiprocess_mode="mostrecent")
WALLET_LAG = Gauge("ledger_wallet_delivery_lag_seconds",
                   "Age of the operator's oldest wallet transaction without a final answer (0: none waits)",
                   ["operator"], multiprocess_mode="mostrecent")
WALLET_TXS = Gauge("ledger_wallet_transactions", "Wallet transactions by operator and status", ["operator", "status"],
                   multiprocess_mode="mostrecent")
WALLET_FAILED = Gauge("ledger_wallet_failed_calls", "Wallet calls without a good answer (kept in the store), by operator",
                      ["operator"], multiprocess_mode="mostrecent")

CONTENT_TYPE = CONTENT_TYPE_LATEST


def render() -> bytes:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]  # prometheus_client leaves it unannotated
        return generate_latest(registry)
    return generate_latest(REGISTRY)


def count_results(results: list[Any]) -> None:
    """One increment per (status, code) of a batch, not one per command: in multiprocess mode
    each increment takes a lock, checks the pid and writes the mmap)."""
    tally: dict[tuple[str, str], int] = {}
    for r in results:
        key = (r.status, r.code or "")
        tally[key] = tally.get(key, 0) + 1
    for (status, code), n in tally.items():
        COMMANDS.labels(status, code).inc(n)


def set_views(states: list[Any]) -> None:
    """Each view's position and whether it stopped (`projections.queries.ViewState`)."""
    for state in states:
        VIEW_POSITION.labels(state.view).set(state.position)
        VIEW_STOPPED.labels(state.view).set(0 if state.stop is None else 1)


def set_wallet(status: dict[str, Any] | None) -> None:
    """Delivery lag and failures per operator (`projections.wallet_outbox.read_status`; None: no deliverer ran)."""
    if status is None:
        return
    WALLET_BEHIND.set(status["events_behind"])
    for op, s in status["operators"].items():
        WALLET_LAG.labels(op).set(s["oldest_open_age_s"])
        WALLET_FAILED.labels(op).set(s["failures"])
        for name, n in s["statuses"].items():
            WALLET_TXS.labels(op, name).set(n)
