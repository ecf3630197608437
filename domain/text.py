"""Text as every store can hold it (pure: standard library only).

The ledger's rejections log and the views' rows both write text that came from outside;
a NUL (PostgreSQL's text refuses it) or a lone surrogate (not UTF-8 at all) would fail
the write on one store or both, so both write it through `storable`.
"""
from __future__ import annotations


def storable(text: str) -> str:
    """`text` as every store can hold it: a NUL (PostgreSQL text refuses it) and lone
    surrogates (not encodable as UTF-8) are written as backslash escapes."""
    if "\x00" in text:
        text = text.replace("\x00", "\\x00")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", errors="backslashreplace").decode("utf-8")
    return text
