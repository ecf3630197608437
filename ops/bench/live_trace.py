"""Where a live_bench step's latency goes: the client's timestamps joined to the server's
trace (ops/service/trace.py) by command_id, on one clock (perf_counter = CLOCK_MONOTONIC).

Each command's latency (answer - due) is cut into consecutive parts:
  table_wait  due -> the answer to the same table's previous command (the client sends a
              table's commands one at a time, in order)
  client_late the rest of due -> sent (the load generator itself behind)
  to_server   sent -> the server's ASGI middleware entered (socket, uvicorn's loop busy)
  pre         -> handed to the writer (auth, body, checks)
  queue       -> its batch started (group-commit window, writer busy with the batch before)
  commit      -> its batch committed (check + one transaction)
  wake        -> the handler resumed (future -> event loop; waits for the GIL)
  post        -> response finished (results to JSON, send)
  to_client   -> the client read the answer
"""
from __future__ import annotations

import glob
import json
import os
from statistics import mean
from typing import Any

PARTS = ("table_wait", "client_late", "to_server", "pre", "queue", "commit", "wake", "post", "to_client")


def read_server(directory: str) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """(request rows by their first command_id, GC rows)."""
    requests: dict[str, dict[str, Any]] = {}
    gcs: list[dict[str, Any]] = []
    for path in glob.glob(os.path.join(directory, "trace-*.jsonl")):
        with open(path, encoding="utf-8") as f:
            for line in f:
                row = json.loads(line)
                if "gc" in row:
                    gcs.append(row)
                elif row.get("id") is not None:
                    requests[row["id"]] = row
    return requests, gcs


def breakdown(timings: list[tuple[int, float, float, float]], command_ids: list[str], tables: list[str],
              directory: str) -> dict[str, Any]:
    requests, gcs = read_server(directory)
    previous_answer: dict[int, float] = {}
    last_of_table: dict[str, float] = {}
    for i, _due, _sent, answered in sorted(timings, key=lambda t: t[0]):
        previous_answer[i] = last_of_table.get(tables[i], 0.0)
        last_of_table[tables[i]] = answered
    rows = []
    for i, due, sent, answered in timings:
        server = requests.get(command_ids[i])
        if server is None or not all(k in server for k in "aqbcrs"):
            continue
        due = min(due, sent)  # sent early by the client's timer: timed from its send, as live_bench does
        blocked_until = min(sent, max(due, previous_answer[i]))
        marks = [due, blocked_until, sent, server["a"], server["q"], server["b"], server["c"], server["r"],
                 server["s"], answered]
        parts = {name: (marks[k + 1] - marks[k]) * 1000 for k, name in enumerate(PARTS)}
        rows.append((answered - due, parts, due, answered, server.get("k", 0)))
    rows.sort(key=lambda r: r[0])
    first_due = min(t[1] for t in timings)
    gcs = [row for row in gcs if row["t1"] >= first_due]  # not the warm-up's
    if not rows:
        return {"joined": 0}

    def summary(chosen: list[Any]) -> dict[str, Any]:
        return {"n": len(chosen), "latency_ms": round(mean(r[0] for r in chosen) * 1000, 2),
                "batch_commands": round(mean(r[4] for r in chosen), 1),
                **{name: round(mean(r[1][name] for r in chosen), 2) for name in PARTS}}

    cut = int(0.99 * len(rows))
    slow = rows[cut:]
    middle = rows[len(rows) // 4: 3 * len(rows) // 4]
    gc_pauses = {g: sorted((row["t1"] - row["t0"]) * 1000 for row in gcs if row["gc"] == g) for g in (0, 1, 2)}
    old = [row for row in gcs if row["gc"] == 2]
    slow_in_gc2 = sum(1 for r in slow if any(row["t0"] < r[3] and row["t1"] > r[2] for row in old))
    return {
        "joined": len(rows),
        "middle_half_mean_ms": summary(middle),
        "slowest_1pct_mean_ms": summary(slow),
        "gc": {f"gen{g}": {"passes": len(p), "ms_total": round(sum(p), 1), "ms_max": round(max(p), 2) if p else 0}
               for g, p in gc_pauses.items()},
        "slowest_1pct_overlapping_a_gen2_pass": slow_in_gc2,
    }
