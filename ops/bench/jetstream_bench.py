"""JetStream throughput: `ledger consume` with 1 consumer process against N (default 2), on
PostgreSQL, the same feed, runs taking turns; medians.

    python -m ops.bench.jetstream_bench                         # 30,000 commands, 1 vs 2, 5 runs each
    python -m ops.bench.jetstream_bench --commands 60000 --consumers 1,2,4 --repeats 3 --batch 500
    python -m ops.bench.jetstream_bench --tables 200 --repeats 3     # a split close to even

Each run publishes the feed (50 tables, clean commands) to a stream of its own on the
machine's nats-server, makes a fresh PostgreSQL schema, starts the consumers with
--idle-exit and times from the moment the first of them has made its durable (the
process has started and is about to pull) until every durable has nothing pending or
unacked. Process start-up (about 1.2 s of imports here) and the final idle check are
outside the timing, as they are outside a consumer's steady state; with them inside, a
10,000-command run is half start-up and the ratio says nothing about throughput. The
store is checked afterwards: every command committed.

Each consumer commits its share alone, so the ideal ratio is N only when the tables split
evenly (the split is printed) and the machine has a core per consumer besides what
nats-server and PostgreSQL use.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import time
import uuid
from typing import Any

from ops.bench.live_bench import drop_schema, feed, fresh_schema_url

NATS_URL = os.environ.get("LEDGER_BENCH_NATS_URL", "nats://127.0.0.1:4222")
POLL_S = 0.02


async def _progress(stream: str, durables: list[str], deadline_s: float) -> tuple[float, float]:
    """(first durable made, all drained) on the monotonic clock."""
    import nats
    from nats.js.errors import NotFoundError

    nc = await nats.connect(NATS_URL)
    js = nc.jetstream()
    started = None
    end = time.monotonic() + deadline_s
    try:
        while time.monotonic() < end:
            done = 0
            for d in durables:
                try:
                    info = await js.consumer_info(stream, d)
                except NotFoundError:
                    continue
                if started is None:
                    started = time.monotonic()
                if info.num_pending == 0 and info.num_ack_pending == 0 and info.delivered.stream_seq > 0:
                    done += 1
            if done == len(durables) and started is not None:
                return started, time.monotonic()
            await asyncio.sleep(POLL_S)
        raise TimeoutError("consumers did not drain in time")
    finally:
        await nc.close()


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


async def _delete_stream(stream: str) -> None:
    import nats

    nc = await nats.connect(NATS_URL)
    try:
        await nc.jetstream().delete_stream(stream)
    finally:
        await nc.close()


def one_run(lines: list[bytes], consumers: int, batch: int) -> dict[str, Any]:
    from ledger.store import open_app
    from ops.jetstream.intake import publish
    from ops.service.committer import partition_of

    url = fresh_schema_url()
    stream, prefix = f"BENCH_{uuid.uuid4().hex[:8]}", f"bench{uuid.uuid4().hex[:8]}"
    try:
        asyncio.run(publish(lines, NATS_URL, stream, prefix))
        open_app(url).close()  # tables made before the consumers start together
        cpu_before = _children_cpu_s()
        procs = [subprocess.Popen([sys.executable, "-m", "ops.cli", "consume", "--db", url, "--nats", NATS_URL,
                                   "--stream", stream, "--subject-prefix", prefix, "--partitions", str(consumers),
                                   "--partition", str(i), "--idle-exit", "--batch", str(batch)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for i in range(consumers)]
        durables = [f"ledger-p{i}-of-{consumers}" for i in range(consumers)]
        started, drained = asyncio.run(_progress(stream, durables, 600.0))
        outs = [p.communicate(timeout=600) for p in procs]
        cpu = _children_cpu_s() - cpu_before
        if any(p.returncode for p in procs):
            raise RuntimeError(f"a consumer failed: {[o[1][-500:] for o in outs]}")
        ids = [json.loads(x)["command_id"] for x in lines]
        app = open_app(url)
        try:
            stored = len(app.ledger_recorder().select_commands(ids))
        finally:
            app.close()
        if stored != len(set(ids)):
            raise RuntimeError(f"{len(set(ids)) - stored} commands not committed")
        split = [0] * consumers
        for x in lines:
            split[partition_of(json.loads(x)["table_id"], consumers)] += 1
        return {"consumers": consumers, "commands": len(lines), "seconds": round(drained - started, 3),
                "commands_per_s": round(len(lines) / (drained - started)), "split": split,
                "consumer_cpu_s": round(cpu, 2),  # start-up (about 1 s each) included
                "summaries": [json.loads(o[0].splitlines()[-1]) for o in outs]}
    finally:
        asyncio.run(_delete_stream(stream))
        drop_schema(url)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--commands", type=int, default=30_000)
    p.add_argument("--consumers", default="1,2", help="consumer counts to compare, comma-separated (powers of two)")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--batch", type=int, default=500)
    p.add_argument("--tables", type=int, default=50,
                   help="tables in the feed (more split more evenly over the consumers; a studio has hundreds)")
    p.add_argument("--json", action="store_true",
                   help="only one JSON object of the medians (for ops.bench.compare: --figure "
                        "commands_per_s_1, commands_per_s_2, vs_1_2)")
    args = p.parse_args()
    counts = [int(c) for c in args.consumers.split(",")]
    rates: dict[int, list[int]] = {c: [] for c in counts}
    for r in range(args.repeats):
        for c in counts:  # taking turns: a noisy minute hits every count alike
            lines = feed(args.commands, f"jsb{r}c{c}-{uuid.uuid4().hex[:6]}", args.tables)
            row = one_run(lines, c, args.batch)
            rates[c].append(row["commands_per_s"])
            if not args.json:
                print(json.dumps({"run": r + 1, **row}), flush=True)
    base = statistics.median(rates[counts[0]])
    report: dict[str, float] = {}
    for c in counts:
        med = statistics.median(rates[c])
        report[f"commands_per_s_{c}"] = round(med)
        report[f"vs_{counts[0]}_{c}"] = round(med / base, 3)
        if not args.json:
            print(json.dumps({"consumers": c, "median_commands_per_s": round(med), "runs": rates[c],
                              f"vs_{counts[0]}": round(med / base, 2)}), flush=True)
    if args.json:
        print(json.dumps(report), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
