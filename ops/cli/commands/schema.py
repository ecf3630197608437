"""`ledger schema`: the JSON Schema of the feed's command union."""
from __future__ import annotations

import argparse
import json

from ledger.commands import command_json_schema


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("schema", help="print the JSON Schema of the feed commands",
                       description="The JSON Schema of every feed command (docs/feed.md), for studio integrators.")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    print(json.dumps(command_json_schema(), indent=2))
    return 0
