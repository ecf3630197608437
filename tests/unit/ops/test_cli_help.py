"""Help texts speak to operators: no internal file, module or function names."""
from __future__ import annotations

import importlib
import pkgutil
import re

import pytest

from ops.cli import build_parser, main

PACKAGES = ("ops", "ledger", "projections", "domain")
MODULES = "|".join(sorted({m.name for p in PACKAGES for m in pkgutil.iter_modules(importlib.import_module(p).__path__)}))
# a module by its path or dotted name (ledger.feed.TABLE, a NATS subject, is not a module)
INTERNAL = re.compile(rf"\w+\.py\b|\w+\(\)|\b(?:{'|'.join(PACKAGES)})[./](?:{MODULES})\b")


def every_command() -> list[list[str]]:
    commands: list[list[str]] = [[]]
    for name, sub in build_parser()._subparsers._group_actions[0].choices.items():  # type: ignore[union-attr]
        commands.append([name])
        for action in sub._actions:
            if action.__class__.__name__ == "_SubParsersAction":
                commands += [[name, child] for child in action.choices]
    return commands


@pytest.mark.parametrize("argv", every_command(), ids=lambda a: " ".join(a) or "ledger")
def test_help_names_no_internal_file_or_function(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main([*argv, "--help"])
    assert stop.value.code == 0
    text = capsys.readouterr().out
    public = re.sub(r"docs/\S+", "", text)  # the documentation is for readers
    public = public.replace("verify.py", "")  # the dispute bundle's own verifier, run by its reader
    assert text and not INTERNAL.findall(public), INTERNAL.findall(public)
