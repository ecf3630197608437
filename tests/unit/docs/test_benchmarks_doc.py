"""Every command docs/benchmarks.md gives to reproduce a figure is one its benchmark accepts:
the module exists and its own argument parser takes the options and values as written (the
benchmark is not run: its parser is stopped before it would start)."""
from __future__ import annotations

import argparse
import re
import runpy
import shlex
import sys
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[3] / "docs" / "benchmarks.md"
COMMAND = re.compile(r"python -m (ops\.bench\.\w+)([^`#\n]*)")


class Stopped(Exception):
    def __init__(self, parser: argparse.ArgumentParser) -> None:
        super().__init__(parser.prog)
        self.parser = parser


def the_parser(module: str, monkeypatch: pytest.MonkeyPatch) -> argparse.ArgumentParser:
    """The parser the benchmark builds, caught when it asks for its arguments."""
    def stop(self: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        raise Stopped(self)

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", stop)
    monkeypatch.delitem(sys.modules, module, raising=False)  # runpy runs it afresh, as `python -m` does
    with pytest.raises(Stopped) as caught:
        runpy.run_module(module, run_name="__main__")
    monkeypatch.undo()
    return caught.value.parser


def commands() -> list[tuple[str, str]]:
    """(module, arguments) of every command; `ops.bench.compare HEAD -- BENCH ARGS` gives two:
    its own arguments and the benchmark's it runs."""
    found: list[tuple[str, str]] = []
    for m in COMMAND.finditer(DOC.read_text()):
        module, arguments = m.group(1), m.group(2).strip()
        if module == "ops.bench.compare":
            arguments, _, bench = arguments.partition(" -- ")
            name, _, rest = bench.partition(" ")
            found.append((f"ops.bench.{name}", f"{rest} --json".strip()))
        found.append((module, arguments.strip()))
    return list(dict.fromkeys(found))


def test_the_document_gives_a_command_for_every_benchmark_it_quotes() -> None:
    assert {module for module, _ in commands()} >= {
        "ops.bench.ingest_bench", "ops.bench.ingest_phases", "ops.bench.projection_bench", "ops.bench.replay_bench",
        "ops.bench.memory_bench", "ops.bench.live_bench", "ops.bench.live_batch", "ops.bench.jetstream_bench"}


@pytest.mark.parametrize(("module", "arguments"), commands())
def test_the_benchmark_accepts_the_command_as_written(
        module: str, arguments: str, monkeypatch: pytest.MonkeyPatch) -> None:
    parser = the_parser(module, monkeypatch)
    parser.exit_on_error = False
    parser.parse_args(shlex.split(arguments))  # raises on an unknown option or a bad value
