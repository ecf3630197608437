"""Text that is safe to keep and to show: the one definition of a hostile character.

A feed is written by another system, and its strings reach PostgreSQL `text` columns
(which refuse NUL), terminals (where ESC starts a control sequence and a carriage return
overwrites a line), and pages read by people (where a right-to-left override makes
`gpj.exe` read as `exe.jpg`). One set of characters is refused where text enters
(ledger/commands.py) and escaped wherever text is shown (the CLI's output, the console):

- control characters (Unicode category Cc: C0, DEL and C1), except those a field allows
  (free text allows tab and line feed);
- the bidirectional formatting characters (embeddings, overrides, isolates and marks);
- the line and paragraph separators U+2028 and U+2029 (line breaks to a terminal);
- surrogates (U+D800-U+DFFF): a str holds one only when it came from broken input, and
  no store can encode it as UTF-8.

Pure: standard library only.
"""
from __future__ import annotations

import re
import unicodedata
from functools import cache

BIDI_CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
SEPARATORS = "\u2028\u2029"
FREE_TEXT_ALLOWED = "\t\n"  # a note may keep its tabs and lines; ids allow nothing here


@cache  # a few distinct `allowed` sets in a process
def _class(allowed: str) -> re.Pattern[str]:
    controls = "".join(c for c in map(chr, range(0xA0)) if unicodedata.category(c) == "Cc" and c not in allowed)
    return re.compile("[" + re.escape(controls + BIDI_CONTROLS + SEPARATORS) + "\ud800-\udfff]")


def hostile_at(text: str, allowed: str = "") -> int | None:
    """The index of the first character of `text` that is refused (None: the text is clean)."""
    found = _class(allowed).search(text)
    return None if found is None else found.start()


def char_name(c: str) -> str:
    """`U+0000 (NUL)`, `U+202E (RIGHT-TO-LEFT OVERRIDE)`: a character named for a person."""
    name = _C0_NAMES.get(c) or unicodedata.name(c, "")
    return f"U+{ord(c):04X}" + (f" ({name})" if name else "")


_C0_NAMES = {"\x00": "NUL", "\x07": "BEL", "\x08": "BACKSPACE", "\t": "TAB", "\n": "LINE FEED",
             "\r": "CARRIAGE RETURN", "\x1b": "ESC", "\x7f": "DEL"}


_SHORT = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}  # as repr writes them


def _escape(found: re.Match[str]) -> str:
    c = found.group()
    code = ord(c)
    return _SHORT.get(c) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def escaped(text: str, keep: str = "") -> str:
    """`text` with every hostile character written as a Python-style escape (`\\x1b`,
    `\\u202e`), as `repr` would, the rest untouched; `keep` names characters left as they
    are (a whole screen of output keeps its line feeds). Escaped text is clean text."""
    pattern = _class(keep)
    if pattern.search(text) is None:  # the common case: one scan, no copy
        return text
    return pattern.sub(_escape, text)


def storable(text: str) -> str:
    """`text` as every store can hold it: a NUL (PostgreSQL text refuses it) and lone
    surrogates (not encodable as UTF-8) are written as backslash escapes. Text recorded
    before the feed refused them (or a refused line kept as evidence) still reaches stores:
    the rejections log and the views' rows are written through this."""
    if "\x00" in text:
        text = text.replace("\x00", "\\x00")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", errors="backslashreplace").decode("utf-8")
    return text
