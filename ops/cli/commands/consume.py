"""`ledger consume`: apply commands from NATS JetStream, one partition of the tables."""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
from collections.abc import Callable

from ops.cli.errors import usage
from ops.cli.options import add_command, add_create_argument, existing_store, int_range

EPILOG = """\
Consumer I of N owns the tables whose stable hash mod N is I (run N processes,
on one machine or several, against one PostgreSQL; N a power of two up to 64). It
receives only its tables' messages (subject ledger.feed.<slot bits>.<table>, one
filter subject per partition). It pulls up to --batch commands, commits them in
one transaction, publishes each result to ledger.results.<table_id>, then acks.
Killed at any point, it loses nothing and records nothing twice: a restart
starts again after the last message it acked (only ever after committing it),
so what a killed process was handed comes again, in order, before anything newer,
and what was committed answers duplicate. SIGTERM: finish the batch in hand, ack
it, exit. Changing N: docs/scaling.md. A configure_operator (no table) is committed by
the partition of the table `_`; the others commit a batch only after every
configuration stored before it (they wait for that partition: run all N).

  ledger consume --db postgresql://postgres@127.0.0.1:5432/postgres
  ledger consume --partitions 2 --partition 0 &  ledger consume --partitions 2 --partition 1 &

A SQLite store must exist already (--create makes a new one); PostgreSQL is the
store for consumers on several machines.

Exit status: 0 stopped (SIGTERM, or drained with --idle-exit); 2 could not run
(one line on standard error).
"""

def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = add_command(sub, "consume", "apply commands from NATS JetStream (one partition of the tables)", run,
                    epilog=EPILOG)
    p.add_argument("--db", help="store URL (default: $LEDGER_DB or sqlite:///./casino-ledger.db)")
    add_create_argument(p)
    p.add_argument("--nats", default="nats://127.0.0.1:4222", metavar="URL")
    p.add_argument("--stream", default="LEDGER_FEED")
    p.add_argument("--subject-prefix", default="ledger", metavar="P",
                   help="subjects P.feed.<table> and P.results.<table> (default ledger)")
    p.add_argument("--partitions", type=int_range(1, 64), default=1, metavar="N", help="1, 2, 4, ... 64 (default 1)")
    p.add_argument("--partition", type=int_range(0, 63), default=0, metavar="I", help="0..N-1")
    p.add_argument("--batch", type=int_range(1, 10_000), default=500, metavar="N",
                   help="commands per pull and transaction")
    p.add_argument("--ack-wait-s", type=float, default=30.0, metavar="S",
                   help="redeliver what is unacked after S seconds (longer than two batches' commit; default 30)")
    p.add_argument("--idle-exit", action="store_true", help="exit once the stream has nothing left for us")


def run(args: argparse.Namespace) -> int:
    from ops.jetstream.intake import PARTITIONS_MAX, is_partition_count

    if not is_partition_count(args.partitions):
        raise usage(f"--partitions must be a power of two up to {PARTITIONS_MAX}, got {args.partitions}")
    if args.partition >= args.partitions:
        raise usage(f"--partition {args.partition} is not below --partitions {args.partitions}")
    if not args.ack_wait_s > 0:
        raise usage(f"--ack-wait-s must be above 0, got {args.ack_wait_s}")
    from ledger import logging as ledger_logging
    from ledger.store import open_app
    from ops.jetstream.intake import Consumer

    # A mistyped SQLite path would take (and ack) the stream's commands into a new, empty store.
    url = existing_store(args.db, args.create)
    ledger_logging.configure("info")
    app = open_app(url)
    consumer = Consumer(app, nats_url=args.nats, stream=args.stream, partitions=args.partitions,
                        partition=args.partition, batch=args.batch, ack_wait_s=args.ack_wait_s,
                        prefix=args.subject_prefix)
    consumer.after_commit = _crash_hook()

    async def main() -> None:
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, consumer.stop.set)
        await consumer.run(idle_exit=args.idle_exit)

    try:
        asyncio.run(main())
    finally:
        app.close()
    s = consumer.stats
    ledger_logging.get_logger().info("consume finished", partition=args.partition, partitions=args.partitions,
                                     batches=s.batches, commands=s.commands, restarts=s.restarts,
                                     barrier_waits=s.barrier_waits)
    print(json.dumps({"batches": s.batches, "commands": s.commands, "restarts": s.restarts,
                      "barrier_waits": s.barrier_waits}))
    return 0


def _crash_hook() -> Callable[[int], None] | None:
    """LEDGER_TEST_KILL_AFTER_BATCH=K: SIGKILL this process after committing batch K, before its ack
    (the crash tests' worst case: committed, never acknowledged)."""
    after = os.environ.get("LEDGER_TEST_KILL_AFTER_BATCH")
    if not after:
        return None

    def hook(batch_no: int) -> None:
        if batch_no == int(after):
            os.kill(os.getpid(), signal.SIGKILL)

    return hook
