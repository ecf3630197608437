"""`ledger publish FEED.jsonl`: send a feed to NATS JetStream for `ledger consume`."""
from __future__ import annotations

import argparse
import asyncio
import json
import sys

EPILOG = """\
Each line goes to subject ledger.feed.<table_id> of the stream (created if missing),
with the Nats-Msg-Id header set to its command_id: a line sent twice within the
stream's duplicate window (2 minutes) is stored once.

  ledger publish feed.jsonl
  ledger simulate --tables 10 --rounds 50 | ledger publish - --nats nats://127.0.0.1:4222
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("publish", help="send a JSONL feed to NATS JetStream (ledger.feed.<table>)", epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("feed", metavar="FEED.jsonl", help="feed file ('-' for standard input)")
    p.add_argument("--nats", default="nats://127.0.0.1:4222", metavar="URL")
    p.add_argument("--stream", default="LEDGER_FEED")
    p.add_argument("--subject-prefix", default="ledger", metavar="P",
                   help="subjects P.feed.<table> and P.results.<table> (default ledger)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ops.jetstream.intake import publish

    stream = sys.stdin.buffer if args.feed == "-" else open(args.feed, "rb")
    with stream:
        counts = asyncio.run(publish(stream, args.nats, args.stream, args.subject_prefix))
    print(json.dumps(counts))
    return 0
