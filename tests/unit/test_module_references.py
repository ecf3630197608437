"""Every module path the docs and the source's docstrings and comments mention exists.

A module moved into a package (ops/rtp_blackjack.py to ops/gamemath/) leaves its old
path behind in prose; this finds such references: `ops/gamemath/rtp.py`, and the
`ops/sim/table.TableSim` form (a module, then a name in it). Command ids and other
text that only looks like a path are told apart by not starting with a layer folder.
"""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("domain", "ledger", "projections", "ops", "tests", "docs")
REFERENCE = re.compile(r"(?<![\w/.-])((?:" + "|".join(FOLDERS) + r")/[\w/.-]*\w)")
NOT_PATHS = {"ops/7781"}  # docs/feed.md: a command id of the example feed


def _exists(reference: str) -> bool:
    """`a/b.py`, `a/b/`, `a/b` (a folder or a module), or `a/b.name` (a name in module a/b.py)."""
    path = ROOT / reference
    stem, _, _name = reference.rpartition(".")
    return path.exists() or path.with_suffix(".py").exists() or (ROOT / f"{stem}.py").exists()


def _texts() -> list[Path]:
    docs = sorted((ROOT / "docs").rglob("*.md")) + [ROOT / "README.md"]
    source = [p for folder in FOLDERS[:5] for p in sorted((ROOT / folder).rglob("*.py"))]
    return [p for p in docs + source if p != Path(__file__).resolve()]  # this file names a moved module on purpose


def test_every_module_path_mentioned_exists() -> None:
    stale = [
        f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(1)}"
        for path in _texts()
        for text in [path.read_text(encoding="utf-8")]
        for m in REFERENCE.finditer(text)
        if m.group(1) not in NOT_PATHS and not any(c in m.group(1) for c in "*<{") and not _exists(m.group(1))
    ]
    assert not stale, "references to paths that do not exist:\n" + "\n".join(stale)


def test_a_moved_module_is_found() -> None:
    assert not _exists("ops/rtp_blackjack.dealer_paths")
    assert _exists("ops/gamemath/rtp_blackjack.dealer_paths") and _exists("ops/sim/") and _exists("domain/money.py")
