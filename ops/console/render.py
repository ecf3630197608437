"""The console's Jinja2 environment: templates from the package, autoescaped, with
money shown as money (format_minor from integers) and round links made in one place.
An id goes into a link's path with `seg` (any id the feed allows, `/`, `.` and `..` included)
and into its query with `q`."""
from __future__ import annotations

import re
from functools import cache
from typing import Any
from urllib.parse import quote, urlencode

from jinja2 import Environment, PackageLoader, select_autoescape

from domain.money import format_minor
from domain.operators import DEFAULT_OPERATOR_ID, player_key, split_key
from domain.text import escaped
from ops.service.paths import path_segment
from projections.redaction import token_pattern


def round_url(table_id: str | None, round_no: int | None, round_id: str) -> str:
    """/ui/rounds/TABLE%23NO (the id when the round has no table: a tombstone)."""
    ref = f"{table_id}#{round_no}" if table_id and round_no is not None else round_id
    return "/ui/rounds/" + path_segment(ref)


def player_name(key: str) -> str:
    """A player as a person reads it: the id its operator gave it and, unless it is the default
    operator's, that operator (`p-17 (OP2)`); never the ledger's key `OP2~p-17`."""
    operator, player = split_key(key)
    return player if operator == DEFAULT_OPERATOR_ID else f"{player} ({operator})"


def player_url(key: str) -> str:
    """The player's page: its own id in the path, its operator in `?operator=` (none: the default's)."""
    operator, player = split_key(key)
    path = "/ui/players/" + path_segment(player)
    return path if operator == DEFAULT_OPERATOR_ID else f"{path}?{urlencode({'operator': operator})}"


_KEY_FIELDS = frozenset({"player_id", "owner"})  # kept as keys: the pages make links of them


def people_named(doc: dict[str, Any]) -> dict[str, Any]:
    """A document (a round's replay, a story) whose texts name a player as a person reads it
    (`player_name`), not by the ledger's key (`OP2~p-17`); its `player_id` fields keep the key."""
    keys: set[str] = set()
    _keys_of(doc, keys)
    named = {k: player_name(k) for k in keys if k != player_name(k)}
    if not named:
        return doc
    pattern = token_pattern(set(named))
    assert pattern is not None  # named is not empty
    renamed: dict[str, Any] = _renamed(doc, pattern, named)
    return renamed


def _keys_of(node: Any, keys: set[str]) -> None:
    if isinstance(node, dict):
        keys.update(v for k, v in node.items() if k in _KEY_FIELDS and isinstance(v, str))
        for value in node.values():
            _keys_of(value, keys)
    elif isinstance(node, list):
        for value in node:
            _keys_of(value, keys)


def _renamed(node: Any, pattern: re.Pattern[str], named: dict[str, str]) -> Any:
    if isinstance(node, dict):
        return {k: v if k in _KEY_FIELDS else _renamed(v, pattern, named) for k, v in node.items()}
    if isinstance(node, list):
        return [_renamed(v, pattern, named) for v in node]
    if isinstance(node, str):
        return pattern.sub(lambda m: named[m.group(0)], node)
    return node


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
    env.filters["player"] = lambda key: player_name(str(key))  # a player key as a person reads it
    env.filters["player_url"] = lambda key: player_url(str(key))
    env.globals.update(player_key=player_key, round_url=round_url, with_query=_with_query, rounds_link=rounds_link, **_texts())
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
