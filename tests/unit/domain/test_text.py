"""domain/text.py: which characters are hostile, and escapes that leave none of them."""
from __future__ import annotations

import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from domain.text import BIDI_CONTROLS, FREE_TEXT_ALLOWED, SEPARATORS, char_name, escaped, hostile_at

CONTROLS = [chr(c) for c in range(0x110000) if unicodedata.category(chr(c)) == "Cc"]
HOSTILE = [*CONTROLS, *BIDI_CONTROLS, *SEPARATORS, "\ud800", "\udfff"]


def test_every_control_bidi_separator_and_surrogate_is_hostile_anywhere_in_an_id() -> None:
    assert len(CONTROLS) == 65
    for c in HOSTILE:
        assert hostile_at(f"ab{c}cd") == 2, char_name(c)


def test_free_text_keeps_tab_and_line_feed_only() -> None:
    assert hostile_at("two\tcolumns\nand lines", FREE_TEXT_ALLOWED) is None
    assert [c for c in HOSTILE if hostile_at(c, FREE_TEXT_ALLOWED) is None] == ["\t", "\n"]


def test_ordinary_text_is_clean() -> None:
    for text in ("bj-live-1#23", "Müller räumt den Tisch ab", "庄家", "مرحبا", "a\u200db", "€ 10.55"):
        assert hostile_at(text) is None and escaped(text) == text


def test_escapes_read_like_repr() -> None:
    assert escaped("a\x00b\x1b[31m\u202ec\x85\ud800") == "a\\x00b\\x1b[31m\\u202ec\\x85\\ud800"
    assert escaped("one\ntwo\tthree\r", keep="\n\t") == "one\ntwo\tthree\\r"
    assert char_name("\x00") == "U+0000 (NUL)" and char_name("\u202e") == "U+202E (RIGHT-TO-LEFT OVERRIDE)"


@given(st.text(alphabet=st.sampled_from([*HOSTILE, "a", "\\", "é", " "])))
def test_escaped_text_is_clean_and_storable(text: str) -> None:
    shown = escaped(text)
    assert hostile_at(shown) is None
    shown.encode("utf-8")  # no lone surrogate left: every store takes it
    assert len(shown) >= len(text)
