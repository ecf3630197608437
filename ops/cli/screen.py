"""What the command line prints reaches a terminal: a note, a rejected line or a wallet
reference from a feed may hold ESC (a control sequence that recolours or clears the
screen), a carriage return (which overwrites what was printed), NUL or a right-to-left
override. Every write to standard output and standard error passes through `Escaping`,
which shows those characters as escapes (`\\x1b`, `\\u202e`, domain/text.py) and keeps
the line feeds and tabs of the command's own layout. JSON output is ASCII already (its
escapes are JSON's), so it passes through unchanged."""
from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO, cast

from domain.text import escaped

LAYOUT = "\n\t"  # what the commands' own layout writes


class Escaping:
    """A text stream that writes `escaped(text)` to the stream it wraps; every other
    attribute (`buffer`, `isatty`, `encoding`, ...) is the wrapped stream's."""

    def __init__(self, stream: TextIO) -> None:
        self.wrapped = stream

    def write(self, text: str) -> int:
        self.wrapped.write(escaped(text, keep=LAYOUT))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.wrapped, name)


@contextmanager
def escaping_output() -> Iterator[None]:
    """Standard output and error escaped while a command runs, restored after (the tests
    run commands in-process, under pytest's own captured streams)."""
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = cast(TextIO, Escaping(out)), cast(TextIO, Escaping(err))
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err
