"""The console's Jinja2 environment: templates from the package, autoescaped, with
money shown as money (format_minor from integers) and round links made in one place.
An id goes into a link's path with `seg` (any id the feed allows, `/`, `.` and `..` included)
and into its query with `q`."""
from __future__ import annotations

from functools import cache
from typing import Any
from urllib.parse import quote, urlencode

from jinja2 import Environment, PackageLoader, select_autoescape

from domain.money import format_minor
from domain.text import escaped
from ops.service.paths import path_segment


def round_url(table_id: str | None, round_no: int | None, round_id: str) -> str:
    """/ui/rounds/TABLE%23NO (the id when the round has no table: a tombstone)."""
    ref = f"{table_id}#{round_no}" if table_id and round_no is not None else round_id
    return "/ui/rounds/" + path_segment(ref)


def _money(minor: int | None, currency: str | None = None) -> str:
    return "" if minor is None else format_minor(minor, currency)


def _with_query(path: str, query: dict[str, Any], **changes: Any) -> str:
    merged = {k: v for k, v in {**query, **changes}.items() if v not in (None, "")}
    return path + ("?" + urlencode(merged) if merged else "")


def _shown(value: Any) -> Any:
    """Every value a page prints passes here (Jinja's `finalize`): a control or bidi character
    from a feed, an old store or a rejected line is shown as an escape (`\\x1b`, `\\u202e`,
    domain/text.py), never as itself. Markup the console made (a chart) is a `Markup`, not a
    `str`, and passes as it is."""
    return escaped(value) if type(value) is str else value


@cache
def environment() -> Environment:
    env = Environment(loader=PackageLoader("ops.console", "templates"), autoescape=select_autoescape(["html"]),
                      trim_blocks=True, lstrip_blocks=True, finalize=_shown)
    env.filters["money"] = _money
    env.filters["q"] = lambda text: quote(str(text), safe="")  # a query's value
    env.filters["seg"] = lambda text: path_segment(str(text))  # an id in a path (ops/service/paths.py)
    env.globals.update(round_url=round_url, with_query=_with_query, rounds_link=rounds_link, **_texts())
    return env


def rounds_link(finding: Any) -> str:
    """The rounds list behind a monitor test: its table and dealer."""
    return _with_query("/ui/rounds", {"table": finding.table_id, "dealer": finding.dealer_id})


def _texts() -> dict[str, Any]:
    """The command line's own wording of settings, monitor figures and wallet findings."""
    from domain.tableconfig import describe_settings
    from ops.gamemath.monitor_stats import detail_text
    from projections.reconcile import finding_text

    return {"describe": describe_settings, "detail": detail_text, "finding_text": finding_text}


def render(template: str, **context: Any) -> str:
    return environment().get_template(template).render(**context)
