"""`ledger publish FEED.jsonl`: send a feed to NATS JetStream for `ledger consume`."""
from __future__ import annotations

import argparse
import asyncio
import json
import sys

from ops.cli.options import add_command

EPILOG = """\
Each line goes to subject ledger.feed.<slot bits>.<table_id> of the stream (created
if missing; the slot bits route it to its consumer partition, docs/scaling.md), with
the Nats-Msg-Id header set to its command_id and a hash of its payload: the same
command sent twice within the stream's duplicate window (2 minutes) is stored once.
A different command under an id already used is not deduplicated: it reaches the
ledger, which refuses it command_id_conflict, as `ledger ingest` does.

Prints {"published": N, "duplicate": N, "conflict": N}. Exit status: 0 sent; 1 sent,
but some command ids were reused with another payload within this feed (conflict);
2 could not send (one line on standard error).

  ledger publish feed.jsonl
  ledger simulate --tables 10 --rounds 50 | ledger publish - --nats nats://127.0.0.1:4222
"""

def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = add_command(sub, "publish", "send a JSONL feed to NATS JetStream (ledger.feed.<slot bits>.<table>)", run,
                    epilog=EPILOG)
    p.add_argument("feed", metavar="FEED.jsonl", help="feed file ('-' for standard input)")
    p.add_argument("--nats", default="nats://127.0.0.1:4222", metavar="URL")
    p.add_argument("--stream", default="LEDGER_FEED")
    p.add_argument("--subject-prefix", default="ledger", metavar="P",
                   help="subjects P.feed.<table> and P.results.<table> (default ledger)")


def run(args: argparse.Namespace) -> int:
    from ops.cli.errors import check_input_file
    from ops.jetstream.intake import publish

    check_input_file(args.feed)  # a missing file is one line on stderr, exit 2 (no traceback)
    stream = sys.stdin.buffer if args.feed == "-" else open(args.feed, "rb")
    with stream:
        counts = asyncio.run(publish(stream, args.nats, args.stream, args.subject_prefix))
    print(json.dumps(counts))
    if counts["conflict"]:
        print(f"{counts['conflict']} command(s) reuse a command_id with another payload: the ledger refuses "
              "them command_id_conflict", file=sys.stderr)
        return 1
    return 0
