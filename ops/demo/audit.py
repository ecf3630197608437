"""The closing part of `ledger demo`: bring the views up to date, export the
audit trail and verify it (from the files and against the store), and replay
every round. Each step is a report section; a failed check fails the demo."""
from __future__ import annotations

import shutil
import time
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path
from typing import Any

from domain.money import format_minor
from ops.cli.commands.audit import replay_all
from ops.demo.report import DemoData, Section
from projections.audit_export import export, verify_against_store, verify_files
from projections.balances import balance_totals
from projections.folding import parse_fraction
from projections.ggr import ggr_rows
from projections.runner import Projector


def projections_section(d: DemoData) -> Section:
    started = time.monotonic()
    projector = Projector(d.log)
    try:
        caught = projector.catch_up()
        sums = balance_totals(projector.db)
        ggr = ggr_rows(projector.db)
    finally:
        projector.close()
    d.seconds["project"] = time.monotonic() - started
    ggr_total = sum(r["ggr_minor"] for r in ggr)
    rounding = sum((parse_fraction(r["rounding_kept"]) for r in ggr), Fraction(0))
    zero = all(v == 0 for v in sums.values())
    house = _house_total(d)
    lines = [
        f"views caught up to position {caught.position}: {caught.events} events in {caught.pages} page(s), "
        f"{caught.rows_written} rows, {d.seconds['project']:.1f}s",
        f"all accounts in the balances view sum to zero: {'OK' if zero else 'FAILED ' + str(sums)}",
        f"GGR view total {format_minor(ggr_total)} equals the house accounts {format_minor(house)}: "
        f"{'OK' if ggr_total == house else 'FAILED'}",
        f"rounding kept by settlements: {format_minor(rounding, _one_currency(ggr))}",
        "query them: ledger balances | refunds | recall PLAYER | ggr  (--db " + d.db_url + ")",
    ]
    return Section("Projections", _indent(lines), ok=zero and ggr_total == house)


def _one_currency(rows: list[dict[str, Any]]) -> str | None:
    """The code to show money with: the demo studio plays one currency."""
    codes = {r["currency"] for r in rows}
    return codes.pop() if len(codes) == 1 else None


def _indent(lines: list[str]) -> list[str]:
    return ["  " + line for line in lines]


def _house_total(d: DemoData) -> int:
    """The house accounts' balance, from the ledger facts the report already folded."""
    return sum(v for account, v in d.facts.balances.items() if account.startswith("house:"))


def audit_section(d: DemoData, directory: str) -> Section:
    started = time.monotonic()
    out = Path(directory)
    if out.exists():
        shutil.rmtree(out)
    stop = d.log.head()
    exported_at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    result = export(out, d.log.stored(1, stop, page_size=5000), exported_at=exported_at)
    verified = verify_files(out)
    findings = list(verified.findings)
    findings += verify_against_store(verified, d.log.stored(1, stop, page_size=5000))
    d.seconds["audit"] = time.monotonic() - started
    m = result.manifest
    lines = [
        f"exported {m['count']} events (positions {m['first_position']}..{m['last_position']}) to {out}/",
        f"head hash {m['head_hash']}",
        "verify from the files and against the store: "
        + ("intact, no findings" if not findings else f"{len(findings)} finding(s): {findings[:3]}"),
        f"re-check any time: ledger audit verify {out} --db {d.db_url}",
    ]
    return Section("Audit trail", _indent(lines), ok=not findings)


def replay_section(d: DemoData) -> Section:
    started = time.monotonic()
    summary = replay_all(d.log)
    d.seconds["replay"] = time.monotonic() - started
    findings = summary["findings"]
    lines = [
        f"replayed {summary['rounds']} rounds ({summary['events']} events, {summary['bets_checked']} settlement "
        f"lines) under their recorded rule-set versions in {d.seconds['replay']:.1f}s: "
        + ("every payout matches" if not findings else f"{len(findings)} finding(s)"),
    ]
    lines += [f"  {summary['labels'].get(f.position, '')} {f}" for f in findings[:10]]
    return Section("Replay check", _indent(lines), ok=not findings)
