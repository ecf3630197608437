"""The replay benchmark runs end to end on a tiny simulated store and reports the
audit replay beside the raw read + decode rate of the SAME events, with the
default workers and with one."""
from __future__ import annotations

import json

from ops.bench import replay_bench


def test_bench_reports_replay_beside_raw_for_the_same_events(capsys, monkeypatch) -> None:
    monkeypatch.setattr("projections.replay_range.EVENTS_PER_WORKER_MIN", 1)  # the tiny store still forks
    assert replay_bench.main(["--tables", "2", "--rounds", "3", "--repeat", "1", "--workers", "2", "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["store"] == "sqlite" and figures["events"] > 0
    assert figures["audit_replay_workers"] == 2
    for rate in ("raw_read_decode_events_per_s", "audit_replay_events_per_s", "audit_replay_1_worker_events_per_s"):
        assert figures[rate] > 0
    raw = figures["raw_read_decode_events_per_s"]
    assert abs(figures["replay_vs_raw"] - figures["audit_replay_events_per_s"] / raw) < 0.01
    assert abs(figures["replay_1_worker_vs_raw"] - figures["audit_replay_1_worker_events_per_s"] / raw) < 0.01
