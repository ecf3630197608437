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

--lease (PostgreSQL): no fixed partition. Each process is a host that takes the 64
slots nobody holds by leases in the store, renews them every --lease-ms / 3, takes a
fair share (64 / live hosts) from the others one handover at a time when it joins,
and takes over a dead, frozen or cut-off host's slots within 4/3 of --lease-ms plus a
batch. Every batch is fenced by its slot's lease in its own transaction: a host that
lost a slot can never commit for it again. SIGTERM hands every slot over at once.

  ledger consume --lease --db postgresql://postgres@10.0.0.5:5432/postgres   # on each host

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
    p.add_argument("--lease", action="store_true",
                   help="take slots by leases in the store (PostgreSQL) instead of a fixed --partition")
    p.add_argument("--lease-ms", type=int_range(300, 600_000), default=3000, metavar="MS",
                   help="lease time with --lease (default 3000): the takeover bound is 4/3 of it plus a batch")
    p.add_argument("--host-id", metavar="ID", help="this host's name in the leases (default: hostname-pid)")


def run(args: argparse.Namespace) -> int:
    if args.lease:
        return run_leased(args)
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


def run_leased(args: argparse.Namespace) -> int:
    """`--lease`: one host of the slots (ops/jetstream/leased.py)."""
    from ledger.store import db_url_from

    url = db_url_from(args.db)
    if not url.startswith(("postgresql://", "postgres://")):
        raise usage("--lease needs a PostgreSQL store (--db postgresql://...): the leases live there")
    if args.idle_exit or args.partitions != 1 or args.partition != 0:
        raise usage("--lease takes no --partitions, --partition or --idle-exit: the slots are leased")
    # A batch's transaction left open by a host cut off the network (idle, or a COPY waiting
    # for rows that never come) holds its slot's lease row: the server ends it after the lease
    # time, so the successor's takeover never waits longer.
    # (The library sets the idle timeout itself, in whole seconds.)
    os.environ["PGOPTIONS"] = f"{os.environ.get('PGOPTIONS', '')} -c statement_timeout={args.lease_ms}"
    idle_s = str(max(1, args.lease_ms // 1000))
    from ledger import logging as ledger_logging
    from ledger.store import open_app
    from ops.jetstream.leased import LeasedHost

    ledger_logging.configure("info")
    app = open_app(url, POSTGRES_IDLE_IN_TRANSACTION_SESSION_TIMEOUT=idle_s)
    host = LeasedHost(app, url, host_id=args.host_id, ttl_ms=args.lease_ms, nats_url=args.nats, stream=args.stream,
                      prefix=args.subject_prefix, batch=args.batch, ack_wait_s=args.ack_wait_s)

    async def main() -> None:
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, host.stop.set)
        await host.run()

    try:
        asyncio.run(main())
    finally:
        app.close()
    s = host.stats
    ledger_logging.get_logger().info("consume finished", host=host.host_id, **vars(s))
    print(json.dumps({"host": host.host_id, **vars(s)}))
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
