"""`ledger schema`: the JSON Schema of the feed's command union."""
from __future__ import annotations

import argparse
import json

from ledger.commands import command_json_schema
from ops.cli.options import add_command


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    add_command(sub, "schema", "print the JSON Schema of the feed commands", run,
                description="The JSON Schema of every feed command (docs/feed.md), for studio integrators.", wrap=True)


def run(args: argparse.Namespace) -> int:
    print(json.dumps(command_json_schema(), indent=2))
    return 0
